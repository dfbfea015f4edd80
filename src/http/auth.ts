import { timingSafeEqual, createHash } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { AccountsService, AuthContext } from '../accounts/accounts.service';
import { forbidden, unauthorized } from '../errors';

declare module 'koa' {
  interface DefaultState {
    auth: AuthContext;
    requestId: string;
  }
}

/**
 * The API key on every public endpoint: `X-Auth-Token` (spec, Authentication), or `Authorization: Bearer`
 * (what the OpenAI SDK and most HTTP clients send). When both are present, X-Auth-Token is the one used.
 *
 * Operator sign-in: `Authorization: Bearer <ADMIN_TOKEN>` with `X-Switchyard-Account: <account id>` acts as
 * that account with no key (`auth.keyId` null), as an operator does in the console for a customer. The admin
 * token alone is not an API key (401, saying to add the header); an unknown account is a 404. With an API key
 * the header may only name the key's own account (403 otherwise): a key never acts for another account, and a
 * client that meant to must not silently get its own account's data instead.
 */
export function requireApiKey(accounts: AccountsService, adminToken?: string) {
  const admin = adminToken ? [digest(adminToken)] : [];
  return async function authenticate(ctx: Context, next: Next) {
    const headerKey = ctx.get('x-auth-token').trim();
    const bearer = /^Bearer\s+(.+)$/i.exec(ctx.get('authorization'))?.[1]?.trim() ?? '';
    const token = headerKey || bearer;
    if (!token)
      throw unauthorized('Missing API key: send it in the X-Auth-Token header (or as Authorization: Bearer).');
    const actingFor = ctx.get('x-switchyard-account').trim();
    if (!headerKey && admin.length > 0 && matchesAny(bearer, admin)) {
      if (!actingFor) {
        throw unauthorized(
          'The admin token is not an API key. To act for an account on the public API, add the header X-Switchyard-Account: <account id>.',
        );
      }
      ctx.state.auth = await accounts.authenticateOperator(actingFor);
      return next();
    }
    const auth = await accounts.authenticate(token);
    if (actingFor && actingFor !== auth.accountId) {
      throw forbidden(
        'auth',
        'X-Switchyard-Account names another account: an API key acts only for its own account (only the admin token can act for another).',
      );
    }
    ctx.state.auth = auth;
    return next();
  };
}

/** `Authorization: Bearer <ADMIN_TOKEN>` on /admin; API keys are not accepted there. */
/** `adminToken`: the admin token, or several accepted tokens (GET /metrics also takes METRICS_TOKEN). */
export function requireAdminToken(adminToken: string | Array<string | undefined>) {
  const accepted = (Array.isArray(adminToken) ? adminToken : [adminToken])
    .filter((token): token is string => Boolean(token))
    .map(digest);
  return async function authenticateAdmin(ctx: Context, next: Next) {
    const match = /^Bearer\s+(.+)$/i.exec(ctx.get('authorization'));
    if (!match) {
      throw unauthorized(
        ctx.get('x-auth-token')
          ? 'Admin routes do not accept API keys; send the admin token as Authorization: Bearer <ADMIN_TOKEN>.'
          : 'Missing admin token: send Authorization: Bearer <ADMIN_TOKEN>.',
      );
    }
    if (!matchesAny(match[1].trim(), accepted)) throw unauthorized('The admin token is not valid.');
    return next();
  };
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Whether `presented` is one of the tokens whose digests are `accepted`. Digests have one length, so
 * timingSafeEqual applies; every one is compared (no early exit), so the time taken does not tell which one
 * nearly matched.
 */
function matchesAny(presented: string, accepted: Buffer[]): boolean {
  const presentedDigest = digest(presented);
  return accepted.reduce((found, expected) => timingSafeEqual(presentedDigest, expected) || found, false);
}
