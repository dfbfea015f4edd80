#!/usr/bin/env node
// Builds only what is older than its sources, so a second `npm start` starts at once. Two parts:
// - the service (tsc): every .ts/.js/.json under the compiled folders, plus tsconfig.json and package-lock.json (a
//   changed dependency may change types), then the Temporal workflow bundle the worker loads
//   (scripts/bundle-workflows.js); stamp dist/.build-stamp;
// - the account console (console/, when the project has one): type-checked (tsc --noEmit) and bundled by Vite into
//   dist/console; stamp dist/console/.build-stamp (Vite empties that folder, so the stamp is written after it).
// A stamp is written after a successful build only. `--force` always builds (`npm run build`); `--only console` or
// `--only service` builds one part (the console's tests build the console only). BUILD_ROOT points it at another
// project (its test does).
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = process.env.BUILD_ROOT ?? path.join(__dirname, '..');
const force = process.argv.includes('--force');
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;

function newest(entry) {
  let stat;
  try {
    stat = fs.statSync(entry);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs; // a deleted or renamed file changes its folder's mtime
  for (const name of fs.readdirSync(entry)) latest = Math.max(latest, newest(path.join(entry, name)));
  return latest;
}

/** Runs `steps` (node scripts with arguments) when a source is newer than the stamp or `output` is missing. */
function buildPart({ sources, output, stamp, steps }) {
  const built = fs.existsSync(output) ? newest(stamp) : 0;
  const changed = Math.max(...sources.map((name) => newest(path.join(root, name))));
  if (!force && built > 0 && changed <= built) return;
  for (const args of steps) {
    const result = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root });
    if (result.status !== 0) process.exit(result.status ?? 1);
  }
  fs.writeFileSync(stamp, `${new Date().toISOString()}\n`);
}

const tsc = require.resolve('typescript/bin/tsc');
if (only !== 'console') buildPart({
  sources: ['src', 'workflows', 'activities', 'migrations', 'bench', 'chaos', 'test', 'tsconfig.json', 'package-lock.json'],
  output: path.join(root, 'dist', 'src', 'main.js'),
  stamp: path.join(root, 'dist', '.build-stamp'),
  steps: [[tsc, '-p', path.join(root, 'tsconfig.json')], [path.join(__dirname, 'bundle-workflows.js')]],
});

if (only !== 'service' && fs.existsSync(path.join(root, 'console', 'vite.config.mts'))) {
  buildPart({
    sources: ['console', 'package-lock.json'],
    output: path.join(root, 'dist', 'console', 'index.html'),
    stamp: path.join(root, 'dist', 'console', '.build-stamp'),
    steps: [
      [tsc, '-p', path.join(root, 'console', 'tsconfig.json')],
      [path.join(path.dirname(require.resolve('vite/package.json')), 'bin', 'vite.js'), 'build', '--logLevel', 'warn', '-c', path.join(root, 'console', 'vite.config.mts')],
    ],
  });
}
