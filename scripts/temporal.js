#!/usr/bin/env node
// `npm run temporal`: a real Temporal server (the Temporal CLI's dev server: Temporal Server, SQLite and the Web UI in
// one binary) on 127.0.0.1, for running Switchyard on Temporal on one machine and for the Temporal test suite.
//
//   node scripts/temporal.js            build the CLI if it is missing, then run the server in the foreground
//   node scripts/temporal.js path       build the CLI if it is missing, then print its path (CI, tests)
//
// The CLI is a Go module built with the ordinary Go client (`go install`), once per machine, into a cache folder
// outside the repository (never commit the binary): TEMPORAL_CLI names a binary of your own instead. v1.5.1 is
// pinned: later tags carry a `replace` directive that `go install` refuses. Nothing is downloaded at run time: the
// server's version check is off, and UI 2.42 (in CLI 1.5.1) has no news feed.
//
// Settings (environment): TEMPORAL_PORT (gRPC, default 7233), TEMPORAL_UI_PORT (default 8233), DATA_DIR (the
// server's state is DATA_DIR/temporal/dev.sqlite, so a restart keeps the history; default ./data), GO (the Go
// binary; default `go` on PATH, then /usr/local/go/bin/go), TEMPORAL_EAGER_ACTIVITIES (`false` switches eager
// activity dispatch off, for comparisons; see startDevArgs).
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');

const CLI_VERSION = 'v1.5.1';
const CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';

/** Our search attributes (src/engine/search-attributes.ts), registered when the server creates its namespace. */
const SEARCH_ATTRIBUTES = {
  SwitchyardAccountId: 'Keyword',
  SwitchyardKind: 'Keyword',
  SwitchyardModel: 'Keyword',
  SwitchyardVendor: 'Keyword',
  SwitchyardBackground: 'Bool',
  SwitchyardStatus: 'Keyword',
};

function cacheDir() {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'temporal-cli', CLI_VERSION);
}

function goBinary() {
  if (process.env.GO) return process.env.GO;
  const onPath = spawnSync('go', ['version'], { stdio: 'ignore' });
  if (onPath.status === 0) return 'go';
  if (fs.existsSync('/usr/local/go/bin/go')) return '/usr/local/go/bin/go';
  fail(
    'The Temporal CLI is not built yet and no Go toolchain was found: install Go (or set GO=/path/to/go), or set TEMPORAL_CLI to a temporal binary.',
  );
}

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/** The path of a working `temporal` binary, built first when missing. */
function ensureCli() {
  if (process.env.TEMPORAL_CLI) {
    if (!fs.existsSync(process.env.TEMPORAL_CLI)) fail(`TEMPORAL_CLI=${process.env.TEMPORAL_CLI} does not exist.`);
    return process.env.TEMPORAL_CLI;
  }
  const dir = cacheDir();
  const binary = path.join(dir, 'temporal');
  if (fs.existsSync(binary)) return binary;
  const go = goBinary();
  fs.mkdirSync(dir, { recursive: true });
  process.stderr.write(
    `Building the Temporal CLI ${CLI_VERSION} into ${dir} (once per machine: several minutes and 1-2 GB of Go module cache).\n` +
      'Each line below is a package compiled.\n',
  );
  const started = Date.now();
  // -v lists packages as they compile: the progress. Written to a temporary name, renamed when complete, so an
  // interrupted build never leaves a half-written binary that the next run would trust.
  const staging = fs.mkdtempSync(path.join(dir, 'build-'));
  const result = spawnSync(
    go,
    [
      'install',
      '-v',
      '-trimpath',
      '-ldflags',
      `-s -w -X github.com/temporalio/cli/temporalcli.Version=${CLI_VERSION.slice(1)}`,
      `${CLI_MODULE}@${CLI_VERSION}`,
    ],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, CGO_ENABLED: '0', GOBIN: staging, GOFLAGS: process.env.GOFLAGS ?? '' },
    },
  );
  if (result.status !== 0) {
    fs.rmSync(staging, { recursive: true, force: true });
    fail(
      `Building the Temporal CLI failed (go install exited with ${result.status ?? result.signal}). See the output above.`,
    );
  }
  fs.renameSync(path.join(staging, 'temporal'), binary);
  fs.rmSync(staging, { recursive: true, force: true });
  process.stderr.write(`Built ${binary} in ${Math.round((Date.now() - started) / 1000)} s.\n`);
  return binary;
}

function startDevArgs({ port, uiPort, dbFile }) {
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--ui-port',
    String(uiPort),
    '--namespace',
    'default',
  ];
  if (dbFile) args.push('--db-filename', dbFile);
  args.push(
    '--dynamic-config-value',
    'frontend.enableServerVersionCheck=false',
    // Eager activity dispatch (off by default in Temporal Server): an activity a workflow task schedules on the
    // workflow's own queue comes back to that worker in the answer to the task's completion, when the worker has a
    // free slot for it (the SDK reserves it first), instead of going through matching. It is recorded and retried
    // as any activity; a Response still waits for a worker's slot to start. Eager workflow start is on by default.
    '--dynamic-config-value',
    `system.enableActivityEagerExecution=${process.env.TEMPORAL_EAGER_ACTIVITIES === 'false' ? 'false' : 'true'}`,
    '--log-level',
    process.env.TEMPORAL_LOG_LEVEL ?? 'warn',
  );
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${name}=${type}`);
  return args;
}

function main() {
  const command = process.argv[2] ?? 'start';
  if (command === 'path') {
    process.stdout.write(`${ensureCli()}\n`);
    return;
  }
  if (command !== 'start') fail(`Unknown command "${command}". Use: start (default) | path`);
  const binary = ensureCli();
  const port = Number(process.env.TEMPORAL_PORT ?? 7233);
  const uiPort = Number(process.env.TEMPORAL_UI_PORT ?? 8233);
  const dataDir = path.resolve(process.env.DATA_DIR ?? 'data', 'temporal');
  fs.mkdirSync(dataDir, { recursive: true });
  const dbFile = process.env.TEMPORAL_DB_FILE ?? path.join(dataDir, 'dev.sqlite');
  process.stderr.write(
    `Temporal server on 127.0.0.1:${port} (set TEMPORAL_ADDRESS=127.0.0.1:${port}), Web UI on http://127.0.0.1:${uiPort}, state in ${dbFile}\n`,
  );
  const child = spawn(binary, startDevArgs({ port, uiPort, dbFile }), {
    stdio: 'inherit',
    env: { ...process.env, TEMPORAL_VERSION_CHECK_DISABLED: '1' },
  });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

if (require.main === module) main();
module.exports = { ensureCli, startDevArgs, SEARCH_ATTRIBUTES };
