import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signing (api-decisions 33; https://www.standardwebhooks.com): an account that turned it on gets
 * `webhook-id`, `webhook-timestamp` and `webhook-signature` on its webhooks and callbacks, the signature being
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under the account's secret, given to it once as `whsec_<base64>`.
 * Any Standard Webhooks library (`standardwebhooks` on npm, Svix's) verifies them.
 */
export const SECRET_PREFIX = 'whsec_';
/** 256 bits (the standard asks for 24 to 64 bytes). */
const SECRET_BYTES = 32;

export const newSigningSecret = (): Buffer => randomBytes(SECRET_BYTES);

/** The form a client is given (once) and gives its verifier: `whsec_` and the bytes in standard base64. */
export const formatSecret = (secret: Buffer): string => SECRET_PREFIX + secret.toString('base64');

/** One signature: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. */
export function signatureOf(secret: Buffer, id: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac('sha256', secret).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/**
 * The three headers of a signed message. More than one secret (a rotation that keeps the previous secret for a
 * while) gives one signature each, space-separated, the current secret's first: a receiver holding either verifies.
 */
export function signatureHeaders(
  secrets: readonly Buffer[],
  message: { id: string; timestampSeconds: number; body: string },
): Record<string, string> {
  return {
    'webhook-id': message.id,
    'webhook-timestamp': String(message.timestampSeconds),
    'webhook-signature': secrets
      .map((secret) => signatureOf(secret, message.id, message.timestampSeconds, message.body))
      .join(' '),
  };
}

/**
 * Signing secrets at rest. The service must be able to sign, so a secret cannot be stored as a hash (as API keys are
 * not stored at all: they are signed tokens); it is stored sealed with AES-256-GCM under a key that is not in the
 * database (derived from WEBHOOK_SECRET_KEY, else from the API-key signing secret), bound to its account (the
 * account id is the authenticated data: a sealed secret copied to another account's row does not open). A dump or
 * backup of the database alone reveals no secret.
 */
export interface SecretBox {
  seal(secret: Buffer, accountId: string): string;
  /** Throws SecretUnreadableError when the key is not the one the secret was sealed with, or the text was altered. */
  open(sealed: string, accountId: string): Buffer;
}

const SEALED_VERSION = 'v1';
const IV_BYTES = 12;

export function createSecretBox(keyMaterial: string): SecretBox {
  // HKDF with a label of its own: the same material may also sign API keys (when WEBHOOK_SECRET_KEY is unset), and
  // the two keys must not be the same key.
  const key = Buffer.from(
    hkdfSync('sha256', Buffer.from(keyMaterial, 'utf8'), Buffer.alloc(0), 'switchyard webhook signing secrets v1', 32),
  );
  return {
    seal(secret, accountId) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(accountId, 'utf8'));
      const sealed = Buffer.concat([cipher.update(secret), cipher.final()]);
      return [SEALED_VERSION, iv, sealed, cipher.getAuthTag()]
        .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
        .join('.');
    },
    open(text, accountId) {
      const [version, iv, sealed, tag] = text.split('.');
      if (version !== SEALED_VERSION || !iv || !sealed || !tag) throw new SecretUnreadableError();
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAAD(Buffer.from(accountId, 'utf8'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]);
      } catch {
        throw new SecretUnreadableError();
      }
    },
  };
}

/** The stored secret does not open with this process's key (WEBHOOK_SECRET_KEY changed, or differs between replicas). */
export class SecretUnreadableError extends Error {
  override readonly name = 'SecretUnreadableError';
  constructor() {
    super(
      "the account's webhook signing secret cannot be decrypted with this process's WEBHOOK_SECRET_KEY (it was changed, " +
        'or differs between replicas); the account must rotate its secret',
    );
  }
}
