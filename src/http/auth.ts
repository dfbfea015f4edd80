import { timingSafeEqual, createHash } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { AccountsService, AuthContext } from '../accounts/accounts.service';
import { unauthorized } from '../errors';

declare module 'koa' {
  interface DefaultState {
    auth: AuthContext;
    requestId: string;
  }
}

/**
 * The API key on every public endpoint: `X-Auth-Token` (spec, Authentication), or `Authorization: Bearer`
 * (what the OpenAI SDK and most HTTP clients send). When both are present, X-Auth-Token is the one used.
 */
export function requireApiKey(accounts: AccountsService) {
  return async function authenticate(ctx: Context, next: Next) {
    const token = ctx.get('x-auth-token').trim() || (/^Bearer\s+(.+)$/i.exec(ctx.get('authorization'))?.[1]?.trim() ?? '');
    if (!token) throw unauthorized('Missing API key: send it in the X-Auth-Token header (or as Authorization: Bearer).');
    ctx.state.auth = await accounts.authenticate(token);
    return next();
  };
}

/** `Authorization: Bearer <ADMIN_TOKEN>` on /admin; API keys are not accepted there. */
/** `adminToken`: the admin token, or several accepted tokens (GET /metrics also takes METRICS_TOKEN). */
export function requireAdminToken(adminToken: string | Array<string | undefined>) {
  const accepted = (Array.isArray(adminToken) ? adminToken : [adminToken]).filter((token): token is string => Boolean(token)).map(digest);
  return async function authenticateAdmin(ctx: Context, next: Next) {
    const match = /^Bearer\s+(.+)$/i.exec(ctx.get('authorization'));
    if (!match) {
      throw unauthorized(
        ctx.get('x-auth-token')
          ? 'Admin routes do not accept API keys; send the admin token as Authorization: Bearer <ADMIN_TOKEN>.'
          : 'Missing admin token: send Authorization: Bearer <ADMIN_TOKEN>.',
      );
    }
    const presented = digest(match[1].trim());
    // Every accepted token is compared (no early exit), so the time taken does not tell which one nearly matched.
    const valid = accepted.reduce((found, expected) => timingSafeEqual(presented, expected) || found, false);
    if (!valid) throw unauthorized('The admin token is not valid.');
    return next();
  };
}

const digest = (value: string) => createHash('sha256').update(value).digest();
