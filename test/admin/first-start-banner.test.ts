import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { firstStartBanner } from '../../src/admin/bootstrap';

/**
 * The first-start banner names the key file instead of printing the key (issue 34): standard output is the JSON log
 * stream's when it is not a terminal, and a key never goes into logs. A terminal is still shown the key once.
 */
describe('admin: the first-start banner', () => {
  const bootstrap = { accountId: 'acct_1', key: 'eyJ.secret.key', file: '/data/default-api-key' };

  it('on a terminal shows the key; otherwise names the file only', () => {
    expect(firstStartBanner(bootstrap, 8080, true)).toContain('\n  eyJ.secret.key\n');
    const piped = firstStartBanner(bootstrap, 8080, false);
    expect(piped).not.toContain('eyJ.secret.key');
    expect(piped).toContain('Its API key is in /data/default-api-key');
    expect(piped).toContain('$(cat /data/default-api-key)');
  });

  it('npm start with standard output piped: the first start creates the key file and never writes the key out', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'banner-'));
    const child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts', 'all'], {
      cwd: path.join(__dirname, '../..'),
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: '0',
        DATABASE_URL: '',
        TEMPORAL_ADDRESS: '',
        LOG_LEVEL: 'info',
        NODE_OPTIONS: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    try {
      const started = Date.now();
      while (!output.includes('Console:') && Date.now() - started < 90_000 && child.exitCode === null)
        await new Promise((resolve) => setTimeout(resolve, 100));
      expect(output).toContain('Console:');
      const key = fs.readFileSync(path.join(dataDir, 'default-api-key'), 'utf8').trim();
      expect(key.split('.')).toHaveLength(3);
      expect(output).not.toContain(key);
      expect(output).toContain(`Its API key is in ${path.join(dataDir, 'default-api-key')}`);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
