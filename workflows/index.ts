// Entry of the Temporal workflow bundle: only Temporal wrappers, nothing that imports Node modules.
export { responseWorkflow } from './response.workflow';
export { runWorkflow } from './run.workflow';
export { transcriptionWorkflow } from './transcription.workflow';
