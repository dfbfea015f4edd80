import { defineConfig } from 'vite';

/**
 * The account console: a static single-page app built into dist/console and served by the service at
 * /console (src/console/console.routes.ts). Every asset is emitted as a file (no inline script or style, no data:
 * script), so the page runs under a Content-Security-Policy of 'self' only.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  publicDir: false,
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 700,
    rollupOptions: {
      // React Query marks its modules "use client" (for server components); a client-only bundle has nothing to keep.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
  oxc: { jsx: { runtime: 'automatic' } },
});
