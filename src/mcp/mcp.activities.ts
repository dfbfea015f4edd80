import type { Db } from '../db/database';
import { abortError, currentActivityContext, type ActivityContext } from '../engine/activity-context';
import { newId } from '../ids';
import type { Logger } from '../logger';
import { createMcpSessionPool, type McpSessionPool } from './mcp-sessions';
import { allowedTools } from './mcp-tools';
import type { McpCallRequest, McpCallResult, McpListing, McpListToolsItem, McpServerSpec } from './mcp-types';
import { claimMcpCall, findEarlierListings, storeMcpCallResult } from './mcp.repository';
import { loadResponse } from '../responses/responses.repository';
import type { ResponseJobInput } from '../../workflows/response.flow';

export interface McpActivityDeps {
  db: Db;
  logger: Logger;
  /** The process's open MCP sessions (src/mcp/mcp-sessions.ts); absent: a pool with the default settings. */
  mcpSessions?: McpSessionPool;
}

/**
 * The MCP steps of a Response's flow. The server specs (with their secrets) are read from the stored
 * request here, never passed through the flow, so tokens and headers stay out of workflow histories.
 */
export function createMcpActivities(deps: McpActivityDeps) {
  const { db, logger } = deps;
  const sessions = deps.mcpSessions ?? createMcpSessionPool({ allowPrivateNetworks: false, toolTimeoutMs: 60_000 });

  const serversOf = (request: { tools: Array<{ type: string }> }) =>
    request.tools.filter((tool): tool is McpServerSpec => tool.type === 'mcp');

  // A Response's request never changes: the servers listMcpTools read serve its calls in this process
  // without another read. Bounded; a miss (another worker, a restart) reads the row.
  const known = new Map<string, McpServerSpec[]>();
  const remember = (responseId: string, servers: McpServerSpec[]) => {
    known.set(responseId, servers);
    if (known.size > 1000) known.delete(known.keys().next().value!);
  };
  const serversFor = async (responseId: string) =>
    known.get(responseId) ?? serversOf((await loadResponse(db, responseId)).request);

  /** Each server's tools: an earlier listing from the conversation or chain when it has every allowed tool, else a new one (concurrently). */
  async function listMcpTools({ responseId }: ResponseJobInput, passedContext?: ActivityContext): Promise<McpListing> {
    const context = currentActivityContext(passedContext);
    const row = await loadResponse(db, responseId);
    const servers = serversOf(row.request);
    remember(responseId, servers);
    const earlier = await findEarlierListings(
      db,
      row,
      servers.map((server) => server.server_label),
    );
    const heartbeat = setInterval(() => context.heartbeat(), 2000);
    const listed = await Promise.all(
      servers.map(async (server): Promise<{ item: McpListToolsItem; reused: boolean }> => {
        const previous = earlier.get(server.server_label);
        const names = new Set(previous?.tools.map((tool) => tool.name));
        if (
          previous &&
          (server.allowed_tools ?? []).every((name) => names.has(name)) &&
          (server.allowed_tools || previous.tools.length > 0)
        ) {
          return { item: previous, reused: true };
        }
        const item: McpListToolsItem = {
          id: newId('mcpl'),
          type: 'mcp_list_tools',
          server_label: server.server_label,
          tools: [],
          error: null,
        };
        try {
          const tools = await sessions.use(responseId, server, context.signal, (session) =>
            session.listTools(context.signal),
          );
          item.tools = allowedTools(tools, server.allowed_tools);
        } catch (error) {
          if (context.signal.aborted) throw abortError();
          item.error = (error as Error).message;
          logger.warn({ responseId, serverLabel: server.server_label, error: item.error }, 'listing MCP tools failed');
        }
        return { item, reused: false };
      }),
    ).finally(() => clearInterval(heartbeat));
    return {
      servers: listed.map(({ item }) => ({
        serverLabel: item.server_label,
        tools: allowedTools(
          item.tools,
          servers.find((server) => server.server_label === item.server_label)?.allowed_tools,
        ),
      })),
      items: listed.filter(({ reused }) => !reused).map(({ item }) => item),
    };
  }

  /**
   * One tool call, at most once: claimed in `mcp_calls` before the server is called, so a re-run (a crash,
   * a replay, a Temporal retry) returns the stored result, or, for a call that started and never finished,
   * an error saying it was not repeated. Every failure of the call itself is a result for the model.
   */
  async function callMcpTool(
    { responseId, call }: ResponseJobInput & { call: McpCallRequest },
    passedContext?: ActivityContext,
  ): Promise<McpCallResult> {
    const context = currentActivityContext(passedContext);
    const failure = (error: string): McpCallResult => ({ itemId: call.itemId, output: null, error });
    const claim = await claimMcpCall(db, call.itemId, responseId);
    if (!claim.first)
      return claim.result ?? failure('The call was interrupted (the service restarted) and was not repeated.');

    let result: McpCallResult;
    let args: unknown;
    try {
      args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
    } catch {
      args = undefined;
    }
    if (call.refused) {
      result = failure(call.refused);
    } else if (!args || typeof args !== 'object' || Array.isArray(args)) {
      result = failure('The arguments are not a JSON object.');
    } else {
      const server = (await serversFor(responseId)).find((candidate) => candidate.server_label === call.serverLabel);
      if (!server) {
        result = failure(`No MCP server "${call.serverLabel}" in this request.`);
      } else {
        const heartbeat = setInterval(() => context.heartbeat(), 2000);
        try {
          const outcome = await sessions.use(responseId, server, context.signal, (session) =>
            session.callTool(call.name, args as Record<string, unknown>, context.signal),
          );
          result = { itemId: call.itemId, ...outcome } as McpCallResult;
        } catch (error) {
          if (context.signal.aborted) throw abortError();
          result = failure((error as Error).message);
        } finally {
          clearInterval(heartbeat);
        }
      }
    }
    if (context.signal.aborted) throw abortError();
    if (result.error !== null)
      logger.info(
        { responseId, serverLabel: call.serverLabel, tool: call.name, error: result.error },
        'MCP tool call failed',
      );
    await storeMcpCallResult(db, result);
    return result;
  }

  /** A Response ended: its servers and open sessions are no longer needed here. */
  function forget(responseId: string) {
    known.delete(responseId);
    sessions.release(responseId);
  }

  return { activities: { listMcpTools, callMcpTool }, forget };
}
