import { randomBytes } from 'node:crypto';

/** Opaque ids with a type prefix (DESIGN.md): `conv_` + 24 hex characters of randomness. */
export type IdPrefix = 'acct' | 'key' | 'txn' | 'conv' | 'msg' | 'fc' | 'fco' | 'resp' | 'wh';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}
