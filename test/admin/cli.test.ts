import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseArguments, toRequest } from '../../src/admin/cli';
import { ADMIN_TOKEN, TestApp } from '../support/harness';

const run = promisify(execFile);

describe('admin CLI', () => {
  it('maps commands to admin API calls', () => {
    expect(toRequest(parseArguments(['account', 'create', '--name', 'acme', '--balance', '500', '--mcp']))).toEqual({
      method: 'POST',
      path: '/admin/accounts',
      body: { name: 'acme', balance: 500, mcp_enabled: true },
    });
    expect(toRequest(parseArguments(['account', 'mcp', 'acct_1', '--enable']))).toEqual({
      method: 'PATCH',
      path: '/admin/accounts/acct_1',
      body: { mcp_enabled: true },
    });
    expect(toRequest(parseArguments(['key', 'disable', 'key_1']))).toEqual({
      method: 'POST',
      path: '/admin/keys/key_1/disable',
    });
    expect(() => toRequest(parseArguments(['account', 'credit', 'acct_1', '--amount', '1.5']))).toThrow(/whole number/);
    expect(() => toRequest(parseArguments(['account', 'mcp', 'acct_1']))).toThrow(/--enable or --disable/);
    expect(toRequest(parseArguments(['account', 'list', '--name', 'a&b', '--limit', '5']))).toEqual({
      method: 'GET',
      path: '/admin/accounts?name=a%26b&limit=5',
    });
    expect(toRequest(parseArguments(['key', 'list', 'acct_1']))).toEqual({
      method: 'GET',
      path: '/admin/accounts/acct_1/keys',
    });
    expect(
      toRequest(
        parseArguments([
          'route',
          'create',
          'fast',
          '--type',
          'llm',
          '--strategy',
          'weighted',
          '--targets',
          'a=3,b=0.5,c',
        ]),
      ),
    ).toEqual({
      method: 'POST',
      path: '/admin/routes',
      body: {
        code: 'fast',
        type: 'llm',
        strategy: 'weighted',
        targets: [{ model: 'a', weight: 3 }, { model: 'b', weight: 0.5 }, { model: 'c' }],
      },
    });
    expect(toRequest(parseArguments(['route', 'set', 'fast', '--type', 'llm', '--targets', 'c']))).toEqual({
      method: 'PUT',
      path: '/admin/routes/fast',
      body: { type: 'llm', targets: [{ model: 'c' }] },
    });
    expect(toRequest(parseArguments(['route', 'delete', 'fast']))).toEqual({
      method: 'DELETE',
      path: '/admin/routes/fast',
    });
    expect(() => toRequest(parseArguments(['route', 'create', 'x', '--type', 'llm', '--targets', 'a=many']))).toThrow(
      /the weight of a must be a number/,
    );
  });

  it('drives the running API end to end', async () => {
    const app = await TestApp.start();
    try {
      const env = { ...process.env, SWITCHYARD_URL: app.baseUrl, ADMIN_TOKEN, NODE_OPTIONS: '' };
      const cli = (...args: string[]) =>
        run(process.execPath, ['-r', '@swc-node/register', path.join(__dirname, '../../src/admin/cli.ts'), ...args], {
          env,
        });
      const created = JSON.parse(
        (await cli('account', 'create', '--name', 'cli', '--balance', '300', '--json')).stdout,
      );
      expect(created).toMatchObject({ name: 'cli', balance: 300, mcp_enabled: false });
      await cli('account', 'credit', created.id, '--amount', '200');
      await cli('account', 'mcp', created.id, '--enable');
      const account = JSON.parse((await cli('account', 'get', created.id, '--json')).stdout);
      expect(account).toMatchObject({ balance: 500, mcp_enabled: true });
      const key = JSON.parse((await cli('key', 'create', created.id, '--json')).stdout);
      expect(key.key.split('.')).toHaveLength(3);
      expect((await app.request('GET', '/v2/nothing', { key: key.key })).status).toBe(404);
      const disabled = await cli('key', 'disable', key.id);
      expect(disabled.stdout).toMatch(/disabled/);
      expect((await app.request('GET', '/v2/nothing', { key: key.key })).status).toBe(403);
      await expect(cli('account', 'get', 'acct_missing')).rejects.toMatchObject({ code: 1 });

      // account show: the keys with their last use; key list; account list by name
      const shown = (await cli('account', 'show', created.id)).stdout;
      expect(shown).toMatch(
        new RegExp(`Account ${created.id} "cli": balance 500 kopecks \\(500 available\\), MCP enabled`),
      );
      expect(shown).toMatch(new RegExp(`${key.id}\\s+disabled .* last used \\d{4}-\\d\\d-\\d\\dT`));
      expect((await cli('key', 'list', created.id)).stdout).toContain(key.id);
      const listed = (await cli('account', 'list', '--name', 'CL')).stdout;
      expect(listed).toMatch(new RegExp(`^${created.id}\\s+500\\s+cli$`, 'm'));
      expect((await cli('account', 'list', '--name', 'no-such-name')).stdout.trim()).toBe('(none)');
    } finally {
      await app.close();
    }
  });
});
