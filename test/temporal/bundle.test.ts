import { bundleWorkflowCode, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { bundleWorkflows } from './workflow-bundle';

/**
 * The workflow sandbox lint: webpack refuses Node built-ins and anything that imports them, so a workflow
 * that picks up a value import from activities/ or src/ fails here instead of at worker start.
 */
describe('temporal workflow bundle', () => {
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    bundle = await bundleWorkflows();
  });

  it('bundles workflows/ for the sandbox and exports responseWorkflow', () => {
    expect(bundle.code.length).toBeGreaterThan(10_000);
    // The workflow module is in the bundle with its durable name, handlers and activity names.
    expect(bundle.code).toContain('responseWorkflow');
    expect(bundle.code).toMatch(/defineSignal\)?\(['"]cancel['"]\)/);
    expect(bundle.code).toMatch(/defineQuery\)?\(['"]status['"]\)/);
    for (const activity of ['startResponse', 'callProvider', 'finalizeResponse', 'sendWebhook'])
      expect(bundle.code).toContain(activity);
  });

  it('exports runWorkflow from the entry, with its wake signal and activity names', () => {
    // The entry (workflows/index.ts) re-exports it: the worker finds workflow types among the entry's exports.
    expect(bundle.code).toMatch(/runWorkflow: \(\) => \([^)]*\.runWorkflow\)/);
    expect(bundle.code).toMatch(/async function runWorkflow\(/);
    expect(bundle.code).toMatch(/submitToolOutputsSignal = [^;]*defineSignal\)?\(['"]submit_tool_outputs['"]\)/);
    for (const activity of ['startRun', 'callModel', 'requireAction', 'collectToolOutputs', 'finalizeRun'])
      expect(bundle.code).toContain(activity);
  });

  it('exports transcriptionWorkflow from the entry, with its activity names', () => {
    expect(bundle.code).toMatch(/transcriptionWorkflow: \(\) => \([^)]*\.transcriptionWorkflow\)/);
    expect(bundle.code).toMatch(/async function transcriptionWorkflow\(/);
    for (const activity of [
      'startTranscription',
      'transcribeAudio',
      'finalizeTranscription',
      'sendTranscriptionCallback',
    ])
      expect(bundle.code).toContain(activity);
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
