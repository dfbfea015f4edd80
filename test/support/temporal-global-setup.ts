import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

/**
 * Global setup of `npm run test:temporal`: bundles workflows/ once from source for every worker the suite starts
 * (a worker bundling for itself costs seconds of webpack per app), and checks the server answers before any test
 * waits on it. The path reaches the test processes through the environment (they start after this).
 */
export default async function globalSetup(): Promise<void> {
  if (!process.env.TEST_TEMPORAL_ADDRESS) {
    throw new Error(
      'npm run test:temporal needs TEST_TEMPORAL_ADDRESS=host:port of a running server (start one with `npm run temporal`).',
    );
  }
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} },
  });
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-workflows-')), 'bundle.js');
  fs.writeFileSync(file, code);
  process.env.TEST_TEMPORAL_WORKFLOW_BUNDLE = file;
}
