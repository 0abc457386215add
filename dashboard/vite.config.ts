import { defineConfig } from 'vite';

// Built into dashboard/dist; Slipway serves it at / (src/dashboard/serve.ts). Hashed file names let
// the server cache assets as immutable.
export default defineConfig({
  root: new URL('.', import.meta.url).pathname,
  build: { outDir: 'dist', emptyOutDir: true, assetsDir: 'assets', modulePreload: { polyfill: false }, cssCodeSplit: false },
});
