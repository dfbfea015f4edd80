import fs from 'node:fs';
import path from 'node:path';
import { isFlowDefinition } from '../../workflows/flow-definition';
import { createActivities, jobKinds, type ActivityDeps } from '../../src/engine/job-kinds';

/**
 * The registry and the workflow bundle's entry find flows in two ways: the registry lists each kind's definition, the
 * bundle collects every flow definition of workflows/ (workflows/index.ts). They must agree, or a kind would run on
 * the embedded engine and find no workflow on Temporal (or a workflow would have no kind to launch it).
 */
describe('job kinds', () => {
  const workflowsFolder = path.resolve(__dirname, '../../workflows');

  it('the registry has a kind for every flow of workflows/, and every kind has its flow there', () => {
    const flows = fs
      .readdirSync(workflowsFolder)
      .filter((file) => /\.flow\.ts$/.test(file))
      .flatMap((file) =>
        Object.values(require(path.join(workflowsFolder, file)) as Record<string, unknown>).filter(isFlowDefinition),
      );
    const registered = Object.values(jobKinds).map((definition) => definition.flow);
    expect(new Set(flows)).toEqual(new Set(registered));
    // Workflow types are durable names, one per kind.
    expect(new Set(registered.map((flow) => flow.workflowType)).size).toBe(registered.length);
  });

  it("each flow declares exactly the activities its kind's slice provides", () => {
    // The activities only close over their dependencies when created: none is used before a job runs.
    const activities = createActivities({} as ActivityDeps);
    const declared = Object.values(jobKinds).flatMap((definition) => Object.keys(definition.flow.steps));
    expect([...declared].sort()).toEqual(Object.keys(activities).sort());
    // No two kinds share an activity name (the worker registers them in one namespace).
    expect(new Set(declared).size).toBe(declared.length);
  });
});
