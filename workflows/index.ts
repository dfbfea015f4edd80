// Entry of the Temporal workflow bundle: one workflow per flow definition of this folder (each `*.flow.ts` exports a
// FlowDefinition), exported under its durable workflowType, which is how a worker finds it. Only workflow code:
// nothing here (or in what it imports) may use Node modules. Collected with webpack's `require.context` (the bundler
// is webpack), so a new flow needs no line here; test/engine/job-kinds.test.ts checks the registry has each one.
// A CommonJS module (`import … = require`, `export =`): its exports are named at run time.
import flowDefinition = require('./flow-definition');
import temporalContext = require('./temporal-context');

interface ModuleContext {
  keys(): string[];
  (key: string): Record<string, unknown>;
}
const flowModules = (
  require as unknown as { context(directory: string, deep: boolean, filter: RegExp): ModuleContext }
).context('.', false, /\.flow\.[jt]s$/);

const workflows: Record<string, (input: never) => Promise<string>> = {};
for (const key of flowModules.keys()) {
  for (const exported of Object.values(flowModules(key))) {
    if (flowDefinition.isFlowDefinition(exported))
      workflows[exported.workflowType] = temporalContext.temporalWorkflow(exported);
  }
}

export = workflows;
