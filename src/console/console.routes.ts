import fs from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import type Koa from 'koa';
import { ApiError } from '../errors';
import { projectRoot } from '../paths';

/** Where `npm run build` puts the console (console/vite.config.ts). */
export const CONSOLE_DIST = path.join(projectRoot, 'dist', 'console');

/**
 * The console's page and its own files only: no inline script or style (the build emits none), no other origin.
 * `connect-src 'self'`: the page can call this service and nothing else, so a key typed into it goes nowhere else.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const ASSET_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/**
 * GET /console (the account area: a single-page app) and its assets. Every path under /console that is not an asset
 * is the page itself, so a reload or a shared link of /console/responses/resp_… opens that view. The page is never
 * cached (a new build must reach people at once); the assets carry a content hash in their names and are cached
 * for a year.
 */
export function consoleRoutes(options: { dist?: string } = {}): Router {
  const dist = options.dist ?? CONSOLE_DIST;
  const router = new Router();
  let page: string | undefined;

  const readPage = (): string => {
    if (page !== undefined) return page;
    try {
      page = fs.readFileSync(path.join(dist, 'index.html'), 'utf8');
      return page;
    } catch {
      throw new ApiError(
        503,
        'request.not_ready',
        'The console is not built: run `npm run build` (npm start builds it when it is missing).',
      );
    }
  };

  router.get('/console/assets/:file', (ctx) => {
    const { file } = ctx.params;
    const type = ASSET_TYPES[path.extname(file)];
    // Names of the build only: no separators, no dot-files, a known type (else 404 in the error envelope).
    if (!type || !/^[\w.-]+$/.test(file) || file.startsWith('.')) return;
    const filePath = path.join(dist, 'assets', file);
    if (!fs.existsSync(filePath)) return;
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = fs.createReadStream(filePath);
  });

  const servePage = (ctx: Koa.Context) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Frame-Options', 'DENY');
    ctx.body = readPage();
  };
  router.get('/console', servePage);
  router.get('/console/*path', servePage);

  return router;
}
