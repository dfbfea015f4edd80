#!/usr/bin/env node
// Bundles the Temporal workflows (dist/workflows/index.js, compiled by tsc) into dist/workflows/bundle.js, the code
// the worker loads (Worker.create's workflowBundle): a worker starts without running webpack, and every worker of a
// deploy runs the very same workflow code. Part of `npm run build` (scripts/build-if-stale.js).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

async function main() {
  const root = process.env.BUILD_ROOT ?? path.join(__dirname, '..');
  const entry = path.join(root, 'dist', 'workflows', 'index.js');
  if (!fs.existsSync(entry)) return; // a project without workflows (build-if-stale's own test)
  const { bundleWorkflowCode } = require('@temporalio/worker');
  const { code } = await bundleWorkflowCode({ workflowsPath: entry, logger: quietLogger() });
  const output = path.join(root, 'dist', 'workflows', 'bundle.js');
  fs.writeFileSync(`${output}.tmp`, code);
  fs.renameSync(`${output}.tmp`, output);
}

/** webpack's progress is noise in a build; warnings and errors still show. */
function quietLogger() {
  const write = (level) => (message, meta) =>
    process.stderr.write(`workflow bundle ${level}: ${message}${meta ? ` ${JSON.stringify(meta)}` : ''}\n`);
  const silent = () => undefined;
  return {
    trace: silent,
    debug: silent,
    info: silent,
    warn: write('warning'),
    error: write('error'),
    log: (level, message, meta) =>
      level === 'WARN' || level === 'ERROR' ? write(level.toLowerCase())(message, meta) : undefined,
  };
}

main().catch((error) => {
  process.stderr.write(`Bundling the workflows failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
