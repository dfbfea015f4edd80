import type { StreamEvent } from '../events/stream-event';
import type { MessageOutputItem, OutputItem } from './response-types';

/**
 * What an earlier attempt of a model turn had streamed (and stored) when its process died, read back from the
 * turn's events: the output as readers saw it, and the message it was streaming when it stopped. A resumed turn
 * continues that message (a vendor that continues replies) or closes it `incomplete` and answers anew; either way
 * no event a client saw is contradicted by the final Response.
 */
export interface InterruptedTurn {
  /** The output before this turn (earlier turns of an MCP loop), then this turn's items as stored. */
  output: OutputItem[];
  /** The message being streamed (added, not done): the last item of `output`, status `in_progress`. */
  open?: MessageOutputItem;
  /**
   * Why the turn cannot be resumed, when it cannot: it had emitted something other than messages (a function or
   * MCP call, which the flow acts on), so another answer could contradict it.
   */
  unresumable?: string;
}

/** Folds a turn's stored events (`events`, in sequence) over the output before it (`prior`). */
export function readInterruptedTurn(prior: readonly OutputItem[], events: readonly StreamEvent[]): InterruptedTurn {
  const output: OutputItem[] = prior.map((item) => structuredClone(item));
  const open = new Set<number>();
  for (const event of events) {
    const index = event.output_index as number | undefined;
    switch (event.type) {
      case 'response.output_item.added': {
        const item = structuredClone(event.item) as OutputItem;
        if (item.type !== 'message') return { output, unresumable: `it had emitted a ${item.type} item` };
        output[index!] = { ...item, content: [{ type: 'output_text', text: '' }] } as MessageOutputItem;
        open.add(index!);
        break;
      }
      case 'response.output_text.delta': {
        const item = output[index!];
        if (item?.type === 'message') item.content[0].text += event.delta as string;
        break;
      }
      case 'response.output_item.done':
        output[index!] = structuredClone(event.item) as OutputItem;
        open.delete(index!);
        break;
      default:
        break; // content_part and text done events repeat what the item events carry
    }
  }
  if (open.size === 0) return { output };
  const last = output.length - 1;
  if (open.size > 1 || !open.has(last)) return { output, unresumable: 'more than its last item was left open' };
  return { output, open: output[last] as MessageOutputItem };
}
