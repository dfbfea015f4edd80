#!/usr/bin/env node
// Compiles (tsc) only when a source is newer than the last build, so a second `npm start` starts at once.
// Sources: every .ts/.js/.json under the compiled folders, plus tsconfig.json and package-lock.json (a changed
// dependency may change types). The stamp is written after a successful compile only. `--force` always compiles
// (`npm run build`). BUILD_ROOT points it at another project (its test does).
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = process.env.BUILD_ROOT ?? path.join(__dirname, '..');
const stamp = path.join(root, 'dist', '.build-stamp');
const folders = ['src', 'workflows', 'activities', 'migrations', 'bench', 'chaos', 'test'];
const files = ['tsconfig.json', 'package-lock.json'];

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

const built = fs.existsSync(path.join(root, 'dist', 'src', 'main.js')) ? newest(stamp) : 0;
const sources = Math.max(...[...folders, ...files].map((name) => newest(path.join(root, name))));
if (!process.argv.includes('--force') && built > 0 && sources <= built) process.exit(0);
const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.json')], { stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
fs.writeFileSync(stamp, `${new Date().toISOString()}\n`);
