// The config `npm create vite` writes for React; nothing for context-compactor.
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

export default defineConfig({ plugins: [react()] });
