import { defineConfig } from 'vite';

// Built into dashboard/dist; Slipway serves it at / (src/dashboard/serve.ts). Hashed file names let
// the server cache assets as immutable. JSX compiles to Preact's automatic runtime.
export default defineConfig({
  root: new URL('.', import.meta.url).pathname,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: { outDir: 'dist', emptyOutDir: true, assetsDir: 'assets', modulePreload: { polyfill: false }, cssCodeSplit: false },
});
