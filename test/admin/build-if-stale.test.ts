import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const script = path.join(__dirname, '../../scripts/build-if-stale.js');

/** `npm start` compiles only when a source changed since the last build (scripts/build-if-stale.js), on a tiny project. */
describe('build-if-stale', () => {
  it('compiles the first time, skips when nothing changed, compiles again after an edit', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-build-'));
    fs.mkdirSync(path.join(root, 'src'));
    fs.writeFileSync(
      path.join(root, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { outDir: 'dist', rootDir: '.', module: 'commonjs', types: [] },
        include: ['src'],
      }),
    );
    const main = path.join(root, 'src', 'main.ts');
    fs.writeFileSync(main, 'export const answer: number = 41;\n');
    const build = () => run(process.execPath, [script], { env: { ...process.env, BUILD_ROOT: root } });
    const output = path.join(root, 'dist', 'src', 'main.js');
    const stamp = path.join(root, 'dist', '.build-stamp');

    await build();
    expect(fs.readFileSync(output, 'utf8')).toContain('41');
    const firstStamp = fs.statSync(stamp).mtimeMs;

    await build();
    expect(fs.statSync(stamp).mtimeMs).toBe(firstStamp);

    // An edit dated after the last stamp (a compile can take seconds on a busy machine, so not after the first one).
    const edit = (source: string) => {
      fs.writeFileSync(main, source);
      const after = new Date(fs.statSync(stamp).mtimeMs + 2000);
      fs.utimesSync(main, after, after);
    };
    edit('export const answer: number = 42;\n');
    await build();
    expect(fs.readFileSync(output, 'utf8')).toContain('42');
    expect(fs.statSync(stamp).mtimeMs).toBeGreaterThan(firstStamp);

    edit('export const answer: number = "not a number";\n');
    await expect(build()).rejects.toMatchObject({ code: 2 });
  });
});
