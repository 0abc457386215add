import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, gzipSync, constants } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

const outDir = join(new URL('.', import.meta.url).pathname, 'dist');

/** Writes .br and .gz beside every built asset: the server sends them as they are (preCompressed), no compression per request. */
function precompress(): Plugin {
  return {
    name: 'slipway-precompress',
    apply: 'build',
    closeBundle() {
      const assets = join(outDir, 'assets');
      for (const file of readdirSync(assets).filter((f) => /\.(js|css|svg)$/.test(f))) {
        const content = readFileSync(join(assets, file));
        writeFileSync(join(assets, `${file}.br`), brotliCompressSync(content, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
        writeFileSync(join(assets, `${file}.gz`), gzipSync(content, { level: 9 }));
      }
    },
  };
}

// Built into dashboard/dist; Slipway serves it at / (src/dashboard/serve.ts). Hashed file names let
// the server cache assets as immutable. JSX compiles to Preact's automatic runtime.
export default defineConfig({
  root: new URL('.', import.meta.url).pathname,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  plugins: [precompress()],
  build: { outDir, emptyOutDir: true, assetsDir: 'assets', modulePreload: { polyfill: false }, cssCodeSplit: false },
});
