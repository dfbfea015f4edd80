/**
 * Remote MCP tools in Responses (spec "Responses", MCP tool; api-decisions 23): the request's server spec and
 * the two output item kinds, in the shapes of the OpenAI Responses API. Plain data only: the response flow
 * (workflow code) imports these.
 */

/** An `mcp` entry of a Response's `tools`. `authorization` and `headers` are secrets: never shown or logged. */
export interface McpServerSpec {
  type: 'mcp';
  server_label: string;
  server_url: string;
  authorization?: string;
  allowed_tools?: string[];
  require_approval: 'never';
  headers?: Record<string, string>;
}

export interface McpToolDescription {
  name: string;
  description: string | null;
  input_schema: Record<string, unknown>;
}

export interface McpListToolsItem {
  id: string;
  type: 'mcp_list_tools';
  server_label: string;
  tools: McpToolDescription[];
  error: string | null;
}

export interface McpCallItem {
  id: string;
  type: 'mcp_call';
  server_label: string;
  name: string;
  /** JSON text, as the model produced it. */
  arguments: string;
  output: string | null;
  error: string | null;
  status: 'in_progress' | 'completed' | 'failed';
}

/** The tools one server offers this Response (after `allowed_tools`), and whether they came from an earlier listing. */
export interface McpServerTools {
  serverLabel: string;
  tools: McpToolDescription[];
}

/** What listing the request's servers gave: each server's tools, and the items to add to the output. */
export interface McpListing {
  servers: McpServerTools[];
  /** New `mcp_list_tools` items (a server whose list was reused from the conversation or chain adds none). */
  items: McpListToolsItem[];
}

/** One MCP call the model asked for in a round, to be run by the callMcpTool activity. */
export interface McpCallRequest {
  /** The `mcp_call` item's id (stable across replays: it was generated in the recorded model call). */
  itemId: string;
  serverLabel: string;
  name: string;
  arguments: string;
  /** Why the call is refused without reaching a server (the model named a tool several servers offer). */
  refused?: string;
}

/** What callMcpTool returns: the tool's text, or why the call failed (the model is told, the Response goes on). */
export type McpCallResult =
  { itemId: string; output: string; error: null } | { itemId: string; output: null; error: string };
