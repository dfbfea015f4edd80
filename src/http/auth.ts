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
export function requireAdminToken(adminToken: string) {
  const expected = digest(adminToken);
  return async function authenticateAdmin(ctx: Context, next: Next) {
    const match = /^Bearer\s+(.+)$/i.exec(ctx.get('authorization'));
    if (!match) {
      throw unauthorized(
        ctx.get('x-auth-token')
          ? 'Admin routes do not accept API keys; send the admin token as Authorization: Bearer <ADMIN_TOKEN>.'
          : 'Missing admin token: send Authorization: Bearer <ADMIN_TOKEN>.',
      );
    }
    if (!timingSafeEqual(digest(match[1].trim()), expected)) throw unauthorized('The admin token is not valid.');
    return next();
  };
}

const digest = (value: string) => createHash('sha256').update(value).digest();
