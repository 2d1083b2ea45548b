export default function Page() {
  return <main>GET /api/node or /api/edge runs the context-compactor quick start.</main>;
}
