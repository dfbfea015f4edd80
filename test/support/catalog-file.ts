import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';

/**
 * A catalog file for CATALOG_PATH: the project's catalog plus a copy of one of its models under a new code,
 * with some fields changed and the same price (say, dev-echo without structured outputs).
 */
export function catalogWithVariant(baseCode: string, code: string, changes: Record<string, unknown>): string {
  const catalog = parse(fs.readFileSync(path.join(__dirname, '../../catalog.yaml'), 'utf8'));
  const base = catalog.models.find((model: { code: string }) => model.code === baseCode);
  catalog.models.push({ ...base, ...changes, code });
  catalog.prices[code] = catalog.prices[baseCode];
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-catalog-')), 'catalog.yaml');
  fs.writeFileSync(file, stringify(catalog));
  return file;
}
