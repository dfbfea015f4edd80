import { bundleWorkflowCode, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';

/** The worker's bundle entry (src/engine/temporal-engine.ts resolves the same folder). */
export const WORKFLOWS_PATH = require.resolve('../../workflows');
export const PROBE_INTERCEPTORS_PATH = require.resolve('./replay-probe.interceptors');

/** Webpack chatter stays out of test output; warnings and errors still show. */
export const quietLogger = new DefaultLogger('WARN');

/** About a second of webpack + swc: call once per test file (beforeAll), never per test. */
export function bundleWorkflows(options: { probe?: boolean } = {}): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    workflowInterceptorModules: options.probe ? [PROBE_INTERCEPTORS_PATH] : [],
    logger: quietLogger,
  });
}
