import { createSecretKey } from 'node:crypto';
import { SignJWT, errors as joseErrors, jwtVerify } from 'jose';
import { unauthorized } from '../errors';

/**
 * API keys are HS256 JWTs: header `kid` names the key row, `sub` the account. The row, not the token,
 * decides whether the key is still active. Only HS256 is accepted, so `alg: none` and
 * algorithm-confusion tokens fail verification.
 */
/** The longest a key can be issued for: ten years (the admin API and the account's own keys alike). */
export const MAX_KEY_LIFETIME_SECONDS = 10 * 365 * 24 * 3600;

export interface KeySigner {
  issue(input: { keyId: string; accountId: string; expiresAt?: Date }): Promise<string>;
  verify(token: string): Promise<{ keyId: string; accountId: string }>;
}

const ALGORITHM = 'HS256';

/** How many verified tokens the signer remembers (see createKeySigner). */
const VERIFIED_CAPACITY = 10_000;

export function createKeySigner(secret: string, issuer: string): KeySigner {
  // A KeyObject made once: given raw bytes, jose would import the key again on every verification.
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  // Tokens whose signature and issuer were verified, with their claims: a token is immutable, so verifying it
  // again gives the same answer until it expires (checked on every use). Only what verified is remembered; the
  // key row (active, disabled, deleted) is still read on every request. Oldest entries go first.
  const verified = new Map<string, { keyId: string; accountId: string; expiresAtMs?: number }>();
  return {
    async issue({ keyId, accountId, expiresAt }) {
      const jwt = new SignJWT({})
        .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT', kid: keyId })
        .setSubject(accountId)
        .setIssuer(issuer)
        .setIssuedAt();
      if (expiresAt) jwt.setExpirationTime(Math.floor(expiresAt.getTime() / 1000));
      return jwt.sign(key);
    },
    async verify(token) {
      if (/^[A-Za-z]{2,}[-_]/.test(token) && token.split('.').length !== 3) {
        throw unauthorized(
          'This API key format (a vendor-style prefixed string such as sk-...) is not valid for this version of the API; ' +
            'send the JWT key issued by this service in X-Auth-Token.',
        );
      }
      if (!/^[\w-]+\.[\w-]+\.[\w-]+$/.test(token)) {
        throw unauthorized('The API key is malformed: expected a signed three-part JWT.');
      }
      const known = verified.get(token);
      if (known && (known.expiresAtMs === undefined || known.expiresAtMs > Date.now()))
        return { keyId: known.keyId, accountId: known.accountId };
      verified.delete(token);
      try {
        const { payload, protectedHeader } = await jwtVerify(token, key, { algorithms: [ALGORITHM], issuer });
        if (typeof protectedHeader.kid !== 'string' || typeof payload.sub !== 'string') {
          throw unauthorized('The API key does not name its key id and account.');
        }
        const claims = { keyId: protectedHeader.kid, accountId: payload.sub };
        verified.set(token, {
          ...claims,
          expiresAtMs: typeof payload.exp === 'number' ? payload.exp * 1000 : undefined,
        });
        if (verified.size > VERIFIED_CAPACITY) verified.delete(verified.keys().next().value!);
        return claims;
      } catch (error) {
        if (error instanceof joseErrors.JWTExpired) throw unauthorized('The API key has expired.');
        if (error instanceof joseErrors.JOSEAlgNotAllowed)
          throw unauthorized('The API key uses an algorithm that is not accepted.');
        if (error instanceof joseErrors.JWSSignatureVerificationFailed)
          throw unauthorized('The API key signature is not valid.');
        if (error instanceof joseErrors.JOSEError) throw unauthorized('The API key is not valid.');
        throw error;
      }
    },
  };
}
