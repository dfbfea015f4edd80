import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Returns the secret kept in DATA_DIR/<name>, creating it (mode 0600) on first use. `wx` makes two
 * processes starting at once agree on one value: the loser of the race reads the winner's file.
 */
export function loadOrCreateSecretFile(
  dataDir: string,
  name: string,
  bytes = 32,
): { value: string; path: string; created: boolean } {
  const file = path.join(dataDir, name);
  fs.mkdirSync(dataDir, { recursive: true });
  try {
    const value = randomBytes(bytes).toString('base64url');
    fs.writeFileSync(file, value + '\n', { flag: 'wx', mode: 0o600 });
    return { value, path: file, created: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const value = fs.readFileSync(file, 'utf8').trim();
    if (value.length < 16) throw new Error(`${file} holds no usable secret; delete it to generate a new one`);
    return { value, path: file, created: false };
  }
}
