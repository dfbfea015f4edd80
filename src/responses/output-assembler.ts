import type { EventWriter } from '../events/event-writer';
import { newId } from '../ids';
import type { McpFunction } from '../mcp/mcp-tools';
import type { McpCallItem, McpCallRequest } from '../mcp/mcp-types';
import type { TextStreamPart } from '../providers/provider';
import type { FunctionCallOutputItem, MessageOutputItem, OutputItem } from './response-types';

/**
 * Turns provider stream parts into output items and the spec's SSE events. In an MCP loop it continues the
 * output of the earlier turns (`prior`), and a call of an MCP tool's function becomes an `mcp_call` item in
 * progress, for the loop to run.
 */
export class OutputAssembler {
  readonly output: OutputItem[];
  /** The MCP calls of this turn, in the order the model made them. */
  readonly mcpCalls: McpCallRequest[] = [];
  /** Whether this turn called a client-side function. */
  functionCalled = false;
  private message: MessageOutputItem | undefined;
  private finishPart: Extract<TextStreamPart, { type: 'finish' }> | undefined;
  private readonly mcpByName: Map<string, McpFunction>;
  /** The namespaced functions of each tool name that several servers offer (each server's under `<label>__<name>`). */
  private readonly mcpCollisions = new Map<string, McpFunction[]>();

  constructor(
    private readonly writer: EventWriter,
    prior: readonly OutputItem[] = [],
    mcpFunctions: readonly McpFunction[] = [],
    /** Called with the whole output when a message starts (its conversation shows it in progress from then on). */
    private readonly onMessageStarted?: (output: readonly OutputItem[]) => void,
  ) {
    this.output = [...prior];
    this.mcpByName = new Map(mcpFunctions.map((fn) => [fn.name, fn]));
    for (const fn of mcpFunctions) {
      if (fn.name === fn.toolName) continue;
      this.mcpCollisions.set(fn.toolName, [...(this.mcpCollisions.get(fn.toolName) ?? []), fn]);
    }
  }

  accept(part: TextStreamPart, parallelToolCalls: boolean) {
    if (part.type === 'text-delta') {
      if (!part.text) return;
      if (!this.message) {
        this.message = {
          id: newId('msg'),
          type: 'message',
          role: 'assistant',
          status: 'in_progress',
          content: [{ type: 'output_text', text: '' }],
        };
        this.output.push(this.message);
        const outputIndex = this.output.length - 1;
        this.writer.emit({
          type: 'response.output_item.added',
          output_index: outputIndex,
          item: { ...this.message, content: [] },
        });
        // OpenAI's stream opens and closes each content part; its SDK's stream helpers build the text on them.
        this.writer.emit({
          type: 'response.content_part.added',
          output_index: outputIndex,
          content_index: 0,
          item_id: this.message.id,
          part: { type: 'output_text', text: '', annotations: [] },
        });
        this.onMessageStarted?.(this.output);
      }
      this.message.content[0].text += part.text;
      this.writer.emit({
        type: 'response.output_text.delta',
        output_index: this.output.indexOf(this.message),
        content_index: 0,
        item_id: this.message.id,
        delta: part.text,
      });
    } else if (part.type === 'tool-call') {
      this.closeMessage('completed');
      if (!parallelToolCalls && (this.functionCalled || this.mcpCalls.length > 0)) return;
      const mcp = this.mcpByName.get(part.name);
      if (mcp) return this.acceptMcpCall(part, mcp);
      // A bare name that more than one server offers (each as `<label>__<name>`): neither server's, and no client
      // function either; the call fails and the model is told the names to use.
      const offered = this.mcpCollisions.get(part.name);
      if (offered && offered.length > 1) {
        const labels = offered.map((fn) => fn.serverLabel);
        return this.acceptMcpCall(
          part,
          { ...offered[0]!, serverLabel: labels.join(', ') },
          `Tool "${part.name}" is offered by more than one MCP server (${labels.join(', ')}); call ${offered.map((fn) => fn.name).join(' or ')}.`,
        );
      }
      this.functionCalled = true;
      const item: FunctionCallOutputItem = {
        id: newId('fc'),
        type: 'function_call',
        call_id: part.callId,
        name: part.name,
        arguments: part.arguments,
        status: 'completed',
      };
      this.output.push(item);
      const outputIndex = this.output.length - 1;
      this.writer.emit({
        type: 'response.output_item.added',
        output_index: outputIndex,
        item: { ...item, arguments: '', status: 'in_progress' },
      });
      this.writer.emit({ type: 'response.output_item.done', output_index: outputIndex, item });
    } else {
      this.finishPart = part;
    }
  }

  /**
   * A turn resumed after its process died: `open` (the last item of `prior`) is the message it was streaming.
   * `continued`: the vendor continues it, so its deltas go on in the same item; otherwise it is closed
   * `incomplete` now and the new answer is a message of its own.
   */
  resume(open: MessageOutputItem, continued: boolean) {
    if (this.output.at(-1) !== open)
      throw new Error('resume: the open message must be the last item of the prior output');
    this.message = open;
    if (!continued) this.closeMessage('incomplete');
  }

  /** The token counts the vendor reported, once it finished. */
  get reportedUsage() {
    return this.finishPart?.usage;
  }

  finish() {
    const reason = this.finishPart?.finishReason ?? 'stop';
    this.closeMessage(reason === 'length' ? 'incomplete' : 'completed');
    return { reason, usage: this.finishPart?.usage ?? { inputTokens: 0, outputTokens: 0 } };
  }

  private acceptMcpCall(part: Extract<TextStreamPart, { type: 'tool-call' }>, mcp: McpFunction, refused?: string) {
    const item: McpCallItem = {
      id: newId('mcp'),
      type: 'mcp_call',
      server_label: mcp.serverLabel,
      name: mcp.toolName,
      arguments: part.arguments,
      output: null,
      error: null,
      status: 'in_progress',
    };
    this.output.push(item);
    this.mcpCalls.push({
      itemId: item.id,
      serverLabel: mcp.serverLabel,
      name: mcp.toolName,
      arguments: part.arguments,
      ...(refused ? { refused } : {}),
    });
    const outputIndex = this.output.length - 1;
    this.writer.emit({
      type: 'response.output_item.added',
      output_index: outputIndex,
      item: { ...item, arguments: '' },
    });
    this.writer.emit({
      type: 'response.mcp_call_arguments.done',
      output_index: outputIndex,
      item_id: item.id,
      arguments: part.arguments,
    });
    this.writer.emit({ type: 'response.mcp_call.in_progress', output_index: outputIndex, item_id: item.id });
  }

  private closeMessage(status: MessageOutputItem['status']) {
    const message = this.message;
    if (!message) return;
    this.message = undefined;
    message.status = status;
    const outputIndex = this.output.indexOf(message);
    this.writer.emit({
      type: 'response.output_text.done',
      output_index: outputIndex,
      content_index: 0,
      item_id: message.id,
      text: message.content[0].text,
    });
    this.writer.emit({
      type: 'response.content_part.done',
      output_index: outputIndex,
      content_index: 0,
      item_id: message.id,
      part: { type: 'output_text', text: message.content[0].text, annotations: [] },
    });
    this.writer.emit({ type: 'response.output_item.done', output_index: outputIndex, item: message });
  }
}
