#!/usr/bin/env node
// Builds only what is older than its sources, so a second `npm start` starts at once. Three parts:
// - the service (tsc -p tsconfig.build.json: src, workflows, migrations; no tests), then the Temporal
//   workflow bundle the worker loads (scripts/bundle-workflows.js); stamp dist/.build-stamp. Its sources are those
//   folders, the tsconfig files and package-lock.json (a changed dependency may change types);
// - the account console (console/, when the project has one): type-checked (tsc --noEmit) and bundled by Vite into
//   dist/console; stamp dist/console/.build-stamp (Vite empties that folder, so the stamp is written after it);
// - with `--tools` only, the benchmarks and the chaos suite (tsc -p tsconfig.tools.json: bench/, chaos/ and the
//   test helpers they import) into dist/bench and dist/chaos; stamp dist/.tools-stamp.
// A stamp is written after a successful build only. `--force` always builds (`npm run build`); `--only console` or
// `--only service` builds one part (the console's tests build the console only). BUILD_ROOT points it at another
// project (its test does). Each step says what it does and how long it took, so a first start is not silent.
//
// The compilers are dev dependencies and are looked up only when something must be built: a production install
// (`npm ci --omit=dev`) over a built dist/ starts without them.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = process.env.BUILD_ROOT ?? path.join(__dirname, '..');
const force = process.argv.includes('--force');
const tools = process.argv.includes('--tools');
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

/** Thrown when a build step's compiler (a dev dependency) is not installed. */
class MissingDevTool extends Error {}

/** A dev dependency's file; MissingDevTool when the dev dependencies are not installed. */
function devTool(request) {
  try {
    return require.resolve(request, { paths: [root, __dirname] });
  } catch {
    throw new MissingDevTool(request.split('/')[0]);
  }
}

/**
 * Runs `steps` when a source is newer than the stamp or `output` is missing. Steps are thunks, so compilers are
 * looked up only when something is built. Without the dev dependencies (a production install) an existing build is
 * used as it is, with a warning; a missing one stops the start, saying how to build it.
 */
function buildPart({ name, sources, output, stamp, steps }) {
  const present = fs.existsSync(output);
  const built = present ? newest(stamp) : 0;
  const changed = Math.max(...sources.map((source) => newest(path.join(root, source))));
  if (!force && built > 0 && changed <= built) return;
  for (const step of steps) {
    let label;
    let args;
    try {
      ({ label, args } = step());
    } catch (error) {
      if (!(error instanceof MissingDevTool)) throw error;
      if (present && !force) {
        process.stdout.write(
          `[build] ${name}: sources changed since the build, but ${error.message} (a dev dependency) is not installed; using the existing build\n`,
        );
        return;
      }
      process.stderr.write(
        `[build] ${name}: not built, and ${error.message} (a dev dependency) is not installed: run npm ci, then npm run build (a production install can then drop the dev dependencies)\n`,
      );
      process.exit(1);
    }
    const started = Date.now();
    process.stdout.write(`[build] ${name}: ${label}...\n`);
    const result = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root });
    if (result.status !== 0) process.exit(result.status ?? 1);
    process.stdout.write(`[build] ${name}: ${label} done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  }
  fs.writeFileSync(stamp, `${new Date().toISOString()}\n`);
}

const tsc = () => devTool('typescript/bin/tsc');
// The build config when the project has one (this repository does; the build script's test project has one file).
const buildConfig = fs.existsSync(path.join(root, 'tsconfig.build.json')) ? 'tsconfig.build.json' : 'tsconfig.json';

if (only !== 'console')
  buildPart({
    name: 'service',
    sources: ['src', 'workflows', 'migrations', 'tsconfig.json', buildConfig, 'package-lock.json'],
    output: path.join(root, 'dist', 'src', 'main.js'),
    stamp: path.join(root, 'dist', '.build-stamp'),
    steps: [
      () => ({
        label: 'compiling TypeScript (about a minute the first time)',
        args: [tsc(), '-p', path.join(root, buildConfig)],
      }),
      () => ({ label: 'bundling the Temporal workflows', args: [path.join(__dirname, 'bundle-workflows.js')] }),
    ],
  });

if (only !== 'service' && fs.existsSync(path.join(root, 'console', 'vite.config.mts'))) {
  buildPart({
    name: 'console',
    sources: ['console', 'package-lock.json'],
    output: path.join(root, 'dist', 'console', 'index.html'),
    stamp: path.join(root, 'dist', 'console', '.build-stamp'),
    steps: [
      () => ({ label: 'type-checking', args: [tsc(), '-p', path.join(root, 'console', 'tsconfig.json')] }),
      () => ({
        label: 'bundling with Vite',
        args: [
          path.join(path.dirname(devTool('vite/package.json')), 'bin', 'vite.js'),
          'build',
          '--logLevel',
          'warn',
          '-c',
          path.join(root, 'console', 'vite.config.mts'),
        ],
      }),
    ],
  });
}

if (tools) {
  buildPart({
    name: 'benchmarks and chaos suite',
    sources: [
      'src',
      'workflows',
      'migrations',
      'bench',
      'chaos',
      'test',
      'tsconfig.json',
      'tsconfig.tools.json',
      'package-lock.json',
    ],
    output: path.join(root, 'dist', 'chaos', 'run.js'),
    stamp: path.join(root, 'dist', '.tools-stamp'),
    steps: [() => ({ label: 'compiling TypeScript', args: [tsc(), '-p', path.join(root, 'tsconfig.tools.json')] })],
  });
}
