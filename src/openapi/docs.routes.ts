import fs from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import { buildOpenApiDocument } from './document';
import { operations } from './operations';

/** Files of the installed swagger-ui-dist the page loads: no CDN, the service works without internet. */
const SWAGGER_UI_FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

/** The page's own script (a file, not inline, so the Content-Security-Policy can forbid inline scripts). */
const INIT_SCRIPT = `window.addEventListener('load', () => {
  window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true, tryItOutEnabled: false, validatorUrl: null, docExpansion: 'list', defaultModelsExpandDepth: 0 });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Switchyard API reference</title>
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <main id="reference"></main>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;

/**
 * Only this origin; Swagger UI sets style attributes and uses data: images (its icons), nothing else. No
 * request leaves the host (connect-src 'self' also stops "try it out" from calling elsewhere).
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** GET /openapi.json (built once, from the routes' schemas) and GET /docs (Swagger UI from the installed package). */
export function docsRoutes(options: { version: string }): Router {
  const router = new Router();
  let documentText: string | undefined;
  const assets = path.dirname(require.resolve('swagger-ui-dist/package.json'));

  router.get('/openapi.json', (ctx) => {
    documentText ??= JSON.stringify(buildOpenApiDocument(operations, options));
    ctx.type = 'application/json';
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = documentText;
  });

  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.body = PAGE;
  });

  router.get('/docs/:file', (ctx) => {
    const { file } = ctx.params;
    ctx.set('X-Content-Type-Options', 'nosniff');
    if (file === 'init.js') {
      ctx.type = 'text/javascript; charset=utf-8';
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = INIT_SCRIPT;
      return;
    }
    const type = SWAGGER_UI_FILES[file];
    if (!type) return; // 404 in the error envelope
    ctx.type = type;
    // The package's files change only with its version, which a new build brings.
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = fs.createReadStream(path.join(assets, file));
  });

  return router;
}
