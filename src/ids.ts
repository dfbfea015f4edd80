import { randomBytes } from 'node:crypto';

/** Opaque ids with a type prefix: `conv_` + 24 hex characters of randomness. */
export type IdPrefix =
  | 'acct'
  | 'key'
  | 'txn'
  | 'conv'
  | 'msg'
  | 'fc'
  | 'fco'
  | 'resp'
  | 'wh'
  | 'req'
  | 'thread'
  | 'run'
  | 'call'
  | 'stt'
  | 'mcpl'
  | 'mcp';

// Random bytes are drawn from the CSPRNG 256 ids at a time and each byte is used once (as randomUUID does
// with its own cache): one call into crypto per 256 ids instead of one per id, several per request.
const ID_BYTES = 12;
const POOL_BYTES = ID_BYTES * 256;
let pool: Buffer = Buffer.alloc(0);
let offset = 0;

export function newId(prefix: IdPrefix): string {
  if (offset + ID_BYTES > pool.length) {
    pool = randomBytes(POOL_BYTES);
    offset = 0;
  }
  const random = pool.toString('hex', offset, offset + ID_BYTES);
  offset += ID_BYTES;
  return `${prefix}_${random}`;
}
