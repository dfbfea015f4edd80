import { bundleWorkflowCode, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { jobKinds } from '../../src/engine/job-kinds';
import { bundleWorkflows } from './workflow-bundle';

/**
 * The workflow sandbox lint: webpack refuses Node built-ins and anything that imports them, so a workflow
 * that picks up a value import from the activities or src/ fails here instead of at worker start.
 */
describe('temporal workflow bundle', () => {
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    bundle = await bundleWorkflows();
  });

  it('bundles workflows/ for the sandbox: every flow of the registry, with its workflow type, handlers and activities', () => {
    expect(bundle.code.length).toBeGreaterThan(10_000);
    expect(bundle.code).toMatch(/defineSignal\)?\(['"]cancel['"]\)/);
    expect(bundle.code).toMatch(/defineQuery\)?\(['"]status['"]\)/);
    expect(bundle.code).toMatch(/defineSignal\)?\(['"]submit_tool_outputs['"]\)/);
    // The entry collects the flow modules of its folder (webpack's require.context): each kind's is among them.
    for (const [kind, definition] of Object.entries(jobKinds)) {
      expect(bundle.code).toContain(`./${kind}.flow.ts`);
      expect(bundle.code).toContain(`workflowType: '${definition.flow.workflowType}'`);
      for (const activity of Object.keys(definition.flow.steps)) expect(bundle.code).toContain(activity);
    }
  });

  it('keeps activity and service code out of the sandbox (workflows import them as types only)', () => {
    const responses = ['OutputAssembler', 'createResponseActivities'];
    // Run activities and what they import: the ledger, pricing, the Runs' and threads' repositories, the prompt.
    const runs = [
      'createRunActivities',
      'createActivities',
      'currentActivityContext',
      'createLedger',
      'priceCall',
      'markRequiresAction',
      'readWait',
      'insertMessages',
      'buildRunPrompt',
    ];
    const transcriptions = [
      'createTranscriptionActivities',
      'readChunks',
      'transcriptionCharge',
      'markProcessing',
      'busboy',
      'mpg123',
    ];
    for (const marker of [
      'kysely',
      'selectFrom',
      'node:crypto',
      'pg-protocol',
      ...responses,
      ...runs,
      ...transcriptions,
    ]) {
      expect(bundle.code).not.toContain(marker);
    }
  });

  it('fails for a workflow that imports activities at runtime (the lint can fail)', async () => {
    const logged: string[] = [];
    const logger = new DefaultLogger('WARN', (entry) => logged.push(entry.message));
    await expect(
      bundleWorkflowCode({ workflowsPath: require.resolve('./fixtures/workflow-importing-activities'), logger }),
    ).rejects.toThrow(/Webpack finished with errors/);
    // The report names the Node-only code that was pulled in (here: pg via activities → src/db).
    expect(logged.join('\n')).toMatch(/node_modules\/pg\//);
  });
});
