import type { McpCallItem, McpCallResult, McpListToolsItem, McpServerTools } from './mcp-types';

/**
 * How MCP tools are offered to a model, and the events of MCP output items. Pure functions of plain data:
 * the response flow (workflow code) uses some of them, so nothing here may do I/O.
 */

/** A function the model sees and the MCP tool behind it. */
export interface McpFunction {
  name: string;
  serverLabel: string;
  toolName: string;
  description: string | null;
  inputSchema: Record<string, unknown>;
}

const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The model-facing function of every MCP tool. A tool keeps its own name when that name is a valid function
 * name and no client function or other server's tool has it (so `/call NAME` and a model's habits work);
 * otherwise it becomes `<server_label>__<name>`, made valid and unique.
 */
export function mcpFunctions(
  servers: readonly McpServerTools[],
  clientFunctionNames: readonly string[],
): McpFunction[] {
  const counts = new Map<string, number>();
  for (const server of servers)
    for (const tool of server.tools) counts.set(tool.name, (counts.get(tool.name) ?? 0) + 1);
  const taken = new Set(clientFunctionNames);
  const functions: McpFunction[] = [];
  for (const server of servers) {
    for (const tool of server.tools) {
      let name = tool.name;
      if (!FUNCTION_NAME.test(name) || counts.get(name)! > 1 || taken.has(name)) {
        const base = `${server.serverLabel}__${tool.name}`.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 60);
        name = base;
        for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
      }
      taken.add(name);
      functions.push({
        name,
        serverLabel: server.serverLabel,
        toolName: tool.name,
        description: tool.description,
        inputSchema: tool.input_schema,
      });
    }
  }
  return functions;
}

/** The tools a server's listing offers under the request's `allowed_tools` (absent: all of them). */
export function allowedTools<T extends { name: string }>(
  tools: readonly T[],
  allowed: readonly string[] | undefined,
): T[] {
  return allowed ? tools.filter((tool) => allowed.includes(tool.name)) : [...tools];
}

/** What the model is told of a call's result: the tool's text, or the error. */
export function callResultForModel(item: Pick<McpCallItem, 'output' | 'error'>): string {
  return item.error !== null ? `Error: ${item.error}` : (item.output ?? '');
}

/** The round's `mcp_call` items with their results filled in. */
export function completeCalls(output: readonly unknown[], results: readonly McpCallResult[]): unknown[] {
  const byId = new Map(results.map((result) => [result.itemId, result]));
  return output.map((item) => {
    const result = byId.get((item as { id?: string }).id ?? '');
    if (!result || (item as { type?: string }).type !== 'mcp_call') return item;
    return {
      ...(item as McpCallItem),
      output: result.output,
      error: result.error,
      status: result.error === null ? 'completed' : 'failed',
    } satisfies McpCallItem;
  });
}

/** Unnumbered stream events (`type` and payload; the writer numbers them). */
export type PendingEvent = { type: string } & Record<string, unknown>;

/** The events that close each finished call of `results`, in call order: `mcp_call.completed|failed`, then `output_item.done`. */
export function callCompletionEvents(output: readonly unknown[], results: readonly McpCallResult[]): PendingEvent[] {
  const events: PendingEvent[] = [];
  for (const result of results) {
    const outputIndex = output.findIndex((item) => (item as { id?: string }).id === result.itemId);
    const item = output[outputIndex] as McpCallItem;
    events.push({
      type: result.error === null ? 'response.mcp_call.completed' : 'response.mcp_call.failed',
      output_index: outputIndex,
      item_id: item.id,
    });
    events.push({ type: 'response.output_item.done', output_index: outputIndex, item });
  }
  return events;
}

/** The events of new `mcp_list_tools` items placed at `firstIndex` onwards of the output. */
export function listingEvents(items: readonly McpListToolsItem[], firstIndex: number): PendingEvent[] {
  return items.flatMap((item, offset) => {
    const outputIndex = firstIndex + offset;
    return [
      { type: 'response.output_item.added', output_index: outputIndex, item: { ...item, tools: [] } },
      { type: 'response.mcp_list_tools.in_progress', output_index: outputIndex, item_id: item.id },
      {
        type: item.error === null ? 'response.mcp_list_tools.completed' : 'response.mcp_list_tools.failed',
        output_index: outputIndex,
        item_id: item.id,
      },
      { type: 'response.output_item.done', output_index: outputIndex, item },
    ];
  });
}
