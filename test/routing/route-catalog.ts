import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';

/** The project's catalog plus `routes`, as a file for CATALOG_PATH; its text for parseCatalog. */
export function catalogWithRoutes(routes: unknown[]): { file: string; text: string } {
  const catalog = parse(fs.readFileSync(path.join(__dirname, '../../catalog.yaml'), 'utf8'));
  catalog.routes = routes;
  const text = stringify(catalog);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-routes-')), 'catalog.yaml');
  fs.writeFileSync(file, text);
  return { file, text };
}

/** An llm route from OpenAI to Anthropic (both fakes), the one the failover tests use. */
export const PAIR = {
  code: 'pair',
  type: 'llm',
  strategy: 'fallback',
  targets: [{ model: 'gpt-5-mini' }, { model: 'claude-haiku-4-5' }],
};
