import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../config';

/**
 * `npm run admin -- <command>`: a thin client of the admin HTTP API (the API must be running).
 * The base URL comes from SWITCHYARD_URL (default http://127.0.0.1:$PORT), the token from ADMIN_TOKEN or
 * DATA_DIR/admin-token.
 */
const USAGE = `Usage: npm run admin -- <command> [options] [--json]

  account create --name NAME [--balance KOPECKS] [--mcp]
  account list [--name PART] [--limit N] [--after ACCOUNT_ID]
  account show ID          (balance, MCP flag, limits and keys with their last use)
  account credit ID --amount KOPECKS [--note TEXT]
  account debit ID --amount KOPECKS --reason TEXT --key IDEMPOTENCY_KEY
  account refund ID --amount KOPECKS --reason TEXT --key IDEMPOTENCY_KEY
                    (the same --key again is a no-op that shows the first transaction)
  account usage ID [--group-by day|model|service] [--from UNIX] [--to UNIX]
  account mcp ID --enable | --disable
  account suspend ID       (its keys answer 403 until reactivated)
  account reactivate ID
  account rename ID --name NAME
  account limits ID [--requests-per-minute N] [--tokens-per-minute N] [--concurrent-jobs N]
                    (N a whole number, or "default" for the service's default)
  key list ACCOUNT_ID
  key create ACCOUNT_ID [--name NAME] [--expires-in SECONDS]
  key disable KEY_ID
  key enable KEY_ID
  route list               (the catalog file's routes and those created here)
  route show CODE
  route create CODE --type llm|embed|tts|stt --targets MODEL[=WEIGHT],... [--strategy fallback|weighted] [--name NAME]
  route set CODE --type ... --targets ... [--strategy ...] [--name NAME]
                           (replaces a route created here; the file's change in the file)
  route delete CODE

Environment: SWITCHYARD_URL (default http://127.0.0.1:$PORT), ADMIN_TOKEN or DATA_DIR/admin-token.`;

interface Parsed {
  words: string[];
  flags: Record<string, string | true>;
}

export function parseArguments(argv: string[]): Parsed {
  const words: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index];
    if (arg.startsWith('--')) {
      const [name, inline] = arg.slice(2).split('=', 2);
      const next = argv[index + 1];
      if (inline !== undefined) flags[name] = inline;
      else if (next !== undefined && !next.startsWith('--') && !['json', 'mcp', 'enable', 'disable'].includes(name)) {
        flags[name] = next;
        index++;
      } else flags[name] = true;
    } else words.push(arg);
  }
  return { words, flags };
}

class UsageError extends Error {}

function integerFlag(flags: Parsed['flags'], name: string, required: boolean): number | undefined {
  const value = flags[name];
  if (value === undefined) {
    if (required) throw new UsageError(`--${name} is required`);
    return undefined;
  }
  if (value === true || !/^\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number`);
  return Number(value);
}

function stringFlag(flags: Parsed['flags'], name: string, required: boolean): string | undefined {
  const value = flags[name];
  if (value === undefined || value === true) {
    if (required) throw new UsageError(`--${name} is required`);
    return undefined;
  }
  return value;
}

/** Maps a command line to one admin API call. */
export function toRequest({ words, flags }: Parsed): { method: string; path: string; body?: unknown } {
  const [noun, verb, id] = words;
  const need = (value: string | undefined, what: string) => {
    if (!value) throw new UsageError(`${what} is required`);
    return encodeURIComponent(value);
  };
  if (noun === 'account' && verb === 'create') {
    return {
      method: 'POST',
      path: '/admin/accounts',
      body: {
        name: stringFlag(flags, 'name', true),
        balance: integerFlag(flags, 'balance', false),
        mcp_enabled: flags.mcp === true ? true : undefined,
      },
    };
  }
  if (noun === 'account' && (verb === 'show' || verb === 'get'))
    return { method: 'GET', path: `/admin/accounts/${need(id, 'ACCOUNT_ID')}` };
  if (noun === 'account' && verb === 'list') {
    const query = new URLSearchParams();
    for (const name of ['name', 'after'])
      if (stringFlag(flags, name, false)) query.set(name, stringFlag(flags, name, false)!);
    if (flags.limit !== undefined) query.set('limit', String(integerFlag(flags, 'limit', true)));
    return { method: 'GET', path: `/admin/accounts${query.size ? `?${query}` : ''}` };
  }
  if (noun === 'key' && verb === 'list')
    return { method: 'GET', path: `/admin/accounts/${need(id, 'ACCOUNT_ID')}/keys` };
  if (noun === 'account' && verb === 'credit') {
    return {
      method: 'POST',
      path: `/admin/accounts/${need(id, 'ACCOUNT_ID')}/credits`,
      body: { amount: integerFlag(flags, 'amount', true), note: stringFlag(flags, 'note', false) },
    };
  }
  if (noun === 'account' && (verb === 'debit' || verb === 'refund')) {
    return {
      method: 'POST',
      path: `/admin/accounts/${need(id, 'ACCOUNT_ID')}/adjustments`,
      body: {
        type: verb,
        amount: integerFlag(flags, 'amount', true),
        reason: stringFlag(flags, 'reason', true),
        idempotency_key: stringFlag(flags, 'key', true),
      },
    };
  }
  if (noun === 'account' && verb === 'usage') {
    const query = new URLSearchParams();
    if (stringFlag(flags, 'group-by', false)) query.set('group_by', stringFlag(flags, 'group-by', false)!);
    for (const name of ['from', 'to'])
      if (flags[name] !== undefined) query.set(name, String(integerFlag(flags, name, true)));
    return { method: 'GET', path: `/admin/accounts/${need(id, 'ACCOUNT_ID')}/usage${query.size ? `?${query}` : ''}` };
  }
  if (noun === 'account' && (verb === 'suspend' || verb === 'reactivate'))
    return { method: 'POST', path: `/admin/accounts/${need(id, 'ACCOUNT_ID')}/${verb}` };
  if (noun === 'account' && verb === 'mcp') {
    if ((flags.enable === true) === (flags.disable === true))
      throw new UsageError('give exactly one of --enable or --disable');
    return {
      method: 'PATCH',
      path: `/admin/accounts/${need(id, 'ACCOUNT_ID')}`,
      body: { mcp_enabled: flags.enable === true },
    };
  }
  if (noun === 'account' && verb === 'limits') {
    const limits: Record<string, number | null> = {};
    for (const name of ['requests-per-minute', 'tokens-per-minute', 'concurrent-jobs']) {
      if (flags[name] === undefined) continue;
      limits[name.replaceAll('-', '_')] = flags[name] === 'default' ? null : integerFlag(flags, name, true)!;
    }
    if (Object.keys(limits).length === 0)
      throw new UsageError('give at least one of --requests-per-minute, --tokens-per-minute, --concurrent-jobs');
    return { method: 'PATCH', path: `/admin/accounts/${need(id, 'ACCOUNT_ID')}`, body: { limits } };
  }
  if (noun === 'account' && verb === 'rename') {
    return {
      method: 'PATCH',
      path: `/admin/accounts/${need(id, 'ACCOUNT_ID')}`,
      body: { name: stringFlag(flags, 'name', true) },
    };
  }
  if (noun === 'key' && verb === 'create') {
    return {
      method: 'POST',
      path: `/admin/accounts/${need(id, 'ACCOUNT_ID')}/keys`,
      body: { name: stringFlag(flags, 'name', false), expires_in: integerFlag(flags, 'expires-in', false) },
    };
  }
  if (noun === 'key' && (verb === 'disable' || verb === 'enable'))
    return { method: 'POST', path: `/admin/keys/${need(id, 'KEY_ID')}/${verb}` };
  if (noun === 'route' && verb === 'list') return { method: 'GET', path: '/admin/routes' };
  if (noun === 'route' && (verb === 'show' || verb === 'get'))
    return { method: 'GET', path: `/admin/routes/${need(id, 'CODE')}` };
  if (noun === 'route' && verb === 'delete') return { method: 'DELETE', path: `/admin/routes/${need(id, 'CODE')}` };
  if (noun === 'route' && (verb === 'create' || verb === 'set')) {
    if (!id) throw new UsageError('CODE is required');
    const route = {
      name: stringFlag(flags, 'name', false),
      type: stringFlag(flags, 'type', true),
      strategy: stringFlag(flags, 'strategy', false),
      targets: targetsFlag(flags),
    };
    return verb === 'create'
      ? { method: 'POST', path: '/admin/routes', body: { code: id, ...route } }
      : { method: 'PUT', path: `/admin/routes/${need(id, 'CODE')}`, body: route };
  }
  throw new UsageError(`unknown command: ${words.join(' ') || '(none)'}`);
}

/** `--targets gpt-5-mini=3,claude-haiku-4-5=1,dev-echo`: models in order, each with an optional weight. */
function targetsFlag(flags: Parsed['flags']): { model: string; weight?: number }[] {
  return stringFlag(flags, 'targets', true)!
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .map((part) => {
      const [model, weight] = part.split('=', 2);
      if (weight === undefined) return { model };
      if (!/^\d+(\.\d+)?$/.test(weight)) throw new UsageError(`--targets: the weight of ${model} must be a number`);
      return { model, weight: Number(weight) };
    });
}

const when = (seconds: number | null) =>
  seconds === null ? 'never' : new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

function describeKeys(keys: any[]): string {
  if (keys.length === 0) return '  (no keys)';
  return keys
    .map(
      (key) =>
        `  ${key.id}  ${key.status.padEnd(8)}  ${(key.name ?? '').padEnd(16)}  created ${when(key.created_at)}  last used ${when(key.last_used_at)}${key.expires_at ? `  expires ${when(key.expires_at)}` : ''}`,
    )
    .join('\n');
}

function describeAccount(account: any): string {
  const limits = Object.entries(account.limits ?? {}).map(
    ([name, value]) => `${name.replaceAll('_', ' ')} ${value ?? 'default'}`,
  );
  return `Account ${account.id} "${account.name}"${account.suspended_at ? ` (suspended since ${when(account.suspended_at)})` : ''}: balance ${account.balance} kopecks (${account.available} available), MCP ${account.mcp_enabled ? 'enabled' : 'disabled'}; limits: ${limits.join(', ')}.`;
}

function describeRoute(route: any): string {
  const targets = route.targets.map((target: any) =>
    target.weight === undefined ? target.model : `${target.model}=${target.weight}`,
  );
  return `${route.code}  ${route.type}  ${route.strategy}  ${targets.join(', ')}  (${route.origin === 'catalog' ? 'catalog file' : 'admin'}${route.served ? '' : ', not served'})`;
}

function describe(result: any): string {
  if (result.object === 'list' && result.data.length === 0) return '(none)';
  if (result.object === 'list' && result.data[0].object === 'route') return result.data.map(describeRoute).join('\n');
  if (result.object === 'route') return describeRoute(result);
  if (result.object === 'route.deleted') return `Route ${result.code} deleted.`;
  if (result.object === 'list' && result.data[0].object === 'api_key') return describeKeys(result.data);
  if (result.object === 'list') {
    const lines = result.data.map(
      (account: any) => `${account.id}  ${String(account.balance).padStart(12)}  ${account.name}`,
    );
    return [...lines, ...(result.has_more ? [`more: --after ${result.last_id}`] : [])].join('\n');
  }
  if (result.keys) return `${describeAccount(result)}\nKeys:\n${describeKeys(result.keys)}`;
  if (result.key) return `Key ${result.id} created. It is shown only now:\n\n  ${result.key}\n`;
  if (result.object === 'organization.usage') {
    const rows = result.data.map(
      (group: any) =>
        `  ${String(group.key).padEnd(24)} ${String(group.amount).padStart(12)} kopecks  ${String(group.transactions).padStart(6)} debits  ${group.prompt_tokens} in / ${group.completion_tokens} out tokens`,
    );
    return [
      `Usage by ${result.group_by}:`,
      ...(rows.length ? rows : ['  (none)']),
      `  ${'total'.padEnd(24)} ${String(result.total.amount).padStart(12)} kopecks  ${String(result.total.transactions).padStart(6)} debits`,
    ].join('\n');
  }
  if (result.status === 'disabled') return `Key ${result.id} disabled.`;
  if (result.status === 'active' && result.id?.startsWith?.('key_')) return `Key ${result.id} enabled.`;
  if (result.type === 'credit')
    return `Credited ${result.amount} kopecks (transaction ${result.id}${result.metadata?.reason ? `: ${result.metadata.reason}` : ''}).`;
  if (result.type === 'debit')
    return `Debited ${result.amount} kopecks (transaction ${result.id}${result.metadata?.reason ? `: ${result.metadata.reason}` : ''}).`;
  if (result.id?.startsWith?.('acct_')) return describeAccount(result);
  return JSON.stringify(result, null, 2);
}

async function run(argv: string[]): Promise<number> {
  const parsed = parseArguments(argv);
  if (parsed.words.length === 0 || parsed.flags.help) {
    process.stdout.write(USAGE + '\n');
    return parsed.words.length === 0 && !parsed.flags.help ? 2 : 0;
  }
  const config = loadConfig();
  const env = process.env;
  const baseUrl = (env.SWITCHYARD_URL ?? `http://127.0.0.1:${config.http.port}`).replace(/\/$/, '');
  const tokenFile = path.join(config.admin.dataDir, 'admin-token');
  const token =
    config.admin.token ?? (fs.existsSync(tokenFile) ? fs.readFileSync(tokenFile, 'utf8').trim() : undefined);
  if (!token) throw new UsageError(`no admin token: set ADMIN_TOKEN or start the service once to create ${tokenFile}`);
  const request = toRequest(parsed);
  const reply = await fetch(baseUrl + request.path, {
    method: request.method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: request.body === undefined ? undefined : JSON.stringify(request.body),
  });
  const body: any = await reply.json().catch(() => ({ error: { message: `HTTP ${reply.status}` } }));
  if (parsed.flags.json) process.stdout.write(JSON.stringify(body, null, 2) + '\n');
  else if (reply.ok) process.stdout.write(describe(body) + '\n');
  else process.stderr.write(`Error ${reply.status}: ${body.error?.message ?? 'request failed'}\n`);
  return reply.ok ? 0 : 1;
}

if (require.main === module) {
  run(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(
        `${error instanceof UsageError ? `${error.message}\n\n${USAGE}` : (error?.message ?? error)}\n`,
      );
      process.exit(2);
    },
  );
}
