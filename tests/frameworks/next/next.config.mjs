// Default config: nothing for context-compactor.
/** @type {import('next').NextConfig} */
const nextConfig = {};
export default nextConfig;
