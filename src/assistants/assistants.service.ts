import type { CatalogModel } from '../catalog/catalog-types';
import type { Db } from '../db/database';
import { invalidRequest, notFound } from '../errors';
import * as repository from './assistants.repository';
import type { AssistantValues } from './assistants.repository';
import type { AssistantBody, ListAssistantsQuery } from './assistants.schema';
import type { AssistantRow } from './assistants.table';

/** The one catalog question Assistants ask; satisfied by AppDeps.catalog. */
export interface ModelLookup {
  /** A model or a route (api-decisions 32). */
  resolveModel(code: string): CatalogModel | undefined;
}

export const DEFAULT_ASSISTANTS_PAGE_SIZE = 20;

export function createAssistantsService(deps: { db: Db; catalog: ModelLookup }) {
  const { db, catalog } = deps;

  async function create(accountId: string, body: AssistantBody): Promise<AssistantRow> {
    return repository.insertAssistant(db, accountId, toValues(body));
  }

  async function get(accountId: string, id: number): Promise<AssistantRow> {
    const row = await repository.findAssistant(db, accountId, id);
    if (!row) throw assistantNotFound(id);
    return row;
  }

  /** Full replacement: the body is validated like a create, fields it leaves out are reset. */
  async function replace(accountId: string, id: number, body: AssistantBody): Promise<AssistantRow> {
    const values = toValues(body);
    const row = await repository.replaceAssistant(db, accountId, id, values);
    if (!row) throw assistantNotFound(id);
    return row;
  }

  async function remove(accountId: string, id: number): Promise<void> {
    if (!(await repository.deleteAssistant(db, accountId, id))) throw assistantNotFound(id);
  }

  async function list(accountId: string, query: ListAssistantsQuery): Promise<AssistantRow[]> {
    return repository.listAssistants(db, accountId, {
      limit: query.limit ?? DEFAULT_ASSISTANTS_PAGE_SIZE,
      order: query.order ?? 'desc',
      after: query.after,
      before: query.before,
    });
  }

  /** The vendor is not sent by clients: it follows from the model code through the catalog. */
  function toValues(body: AssistantBody): AssistantValues {
    const model = catalog.resolveModel(body.model);
    if (!model) {
      throw invalidRequest(
        'assistant',
        `Unknown model code '${body.model}'; GET /v2/models lists the available models.`,
      );
    }
    if (model.type !== 'llm') {
      throw invalidRequest(
        'assistant',
        `Model '${body.model}' is a ${model.type} model; an Assistant needs an llm model.`,
      );
    }
    return {
      name: body.name,
      description: body.description ?? null,
      model: model.code,
      vendor: model.vendor,
      instructions: body.instructions ?? null,
      reasoningEffort: body.reasoning_effort ?? null,
      temperature: body.temperature ?? null,
      tools: body.tools ?? [],
      toolResources: body.tool_resources ?? null,
      metadata: body.metadata ?? {},
    };
  }

  return { create, get, replace, remove, list };
}

export type AssistantsService = ReturnType<typeof createAssistantsService>;

const assistantNotFound = (id: number) => notFound('assistant', `No assistant with id ${id}.`);
