// Entry of the Temporal workflow bundle: only Temporal wrappers, nothing that imports Node modules.
export { responseWorkflow } from './response.workflow';
