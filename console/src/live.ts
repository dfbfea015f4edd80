import { useCallback, useEffect, useRef, useState } from 'react';
import type { Api } from './api';
import { readEvents, type ServerEvent } from './sse';
import type { ResponseObject } from './types';

const FINAL_EVENTS = new Set(['response.completed', 'response.incomplete', 'response.failed', 'response.cancelled']);

/** What a Response's event stream has shown so far. */
export interface LiveState {
  /** The assistant's text, grown by each output_text delta. */
  text: string;
  /** Every event, oldest first (the playground lists them). */
  events: ServerEvent[];
  status: string | null;
  /** The last sequence number seen: where a resume starts after. */
  lastSequence: number;
  /** The final Response object, from the final event. */
  final: ResponseObject | null;
  phase: 'idle' | 'connecting' | 'streaming' | 'reconnecting' | 'done' | 'failed';
  error: unknown;
}

const INITIAL: LiveState = {
  text: '',
  events: [],
  status: null,
  lastSequence: -1,
  final: null,
  phase: 'idle',
  error: null,
};

function apply(state: LiveState, event: ServerEvent): LiveState {
  const sequence = typeof event.data.sequence_number === 'number' ? event.data.sequence_number : state.lastSequence;
  // A resumed stream never repeats an event, but a replay after a reconnect race could: skip what was seen.
  if (sequence <= state.lastSequence && state.events.length > 0) return state;
  const response = event.data.response as ResponseObject | undefined;
  const next: LiveState = {
    ...state,
    events: [...state.events, event],
    lastSequence: sequence,
    status: response?.status ?? state.status,
  };
  if (event.event === 'response.output_text.delta' && typeof event.data.delta === 'string')
    next.text = state.text + event.data.delta;
  if (FINAL_EVENTS.has(event.event) && response) {
    next.final = response;
    next.phase = 'done';
  }
  return next;
}

/**
 * Follows a Response's Server-Sent Events: `start` opens a stream (the playground's POST, or a GET of a running
 * Response); when the connection drops before the final event it resumes with `starting_after` the last sequence
 * number seen, as a client of the API should.
 */
export function useLiveResponse(api: Api) {
  const [state, setState] = useState<LiveState>(INITIAL);
  const stateRef = useRef(state);
  stateRef.current = state;
  const abortRef = useRef<AbortController | null>(null);
  // Read through a function: the ref changes while a loop below waits, which narrowing cannot see.
  const finished = () => stateRef.current.phase === 'done';

  useEffect(() => () => abortRef.current?.abort(), []);

  const consume = useCallback(async (reply: Response, abort: AbortController) => {
    for await (const event of readEvents(reply.body!)) {
      if (abort.signal.aborted) return;
      setState((current) => {
        const next = apply(
          current.phase === 'connecting' || current.phase === 'reconnecting'
            ? { ...current, phase: 'streaming' }
            : current,
          event,
        );
        stateRef.current = next;
        return next;
      });
      if (event.event === 'error')
        throw new Error(
          String((event.data.error as { message?: string } | undefined)?.message ?? 'The stream reported an error.'),
        );
    }
  }, []);

  /** Resumes a Response's stream by id after the last event seen, again after each drop (up to 5 failures in a row). */
  const resume = useCallback(
    async (id: string, abort: AbortController) => {
      let failures = 0;
      while (!abort.signal.aborted && !finished()) {
        try {
          const after = stateRef.current.lastSequence;
          const reply = await api.stream('GET', `/v2/responses/${encodeURIComponent(id)}`, {
            query: { stream: true, starting_after: after >= 0 ? after : undefined },
            signal: abort.signal,
          });
          await consume(reply, abort);
          failures = 0;
        } catch (error) {
          if (abort.signal.aborted) return;
          failures += 1;
          if (
            failures >= 5 ||
            (error instanceof Error && 'status' in error && Number((error as { status: number }).status) < 500)
          ) {
            setState((current) => ({ ...current, phase: 'failed', error }));
            return;
          }
        }
        if (!finished() && !abort.signal.aborted) {
          setState((current) => ({ ...current, phase: 'reconnecting' }));
          await new Promise((resolve) => setTimeout(resolve, 500 * failures));
        }
      }
    },
    [api, consume],
  );

  /** Starts from nothing: a new Response (the playground) or a first look at a running one. */
  const start = useCallback(
    async (open: (signal: AbortSignal) => Promise<Response>, idOf?: (state: LiveState) => string | undefined) => {
      abortRef.current?.abort();
      const abort = new AbortController();
      abortRef.current = abort;
      setState({ ...INITIAL, phase: 'connecting' });
      stateRef.current = { ...INITIAL, phase: 'connecting' };
      let reply: Response;
      try {
        reply = await open(abort.signal);
      } catch (error) {
        if (!abort.signal.aborted) setState((current) => ({ ...current, phase: 'failed', error }));
        return;
      }
      try {
        await consume(reply, abort);
      } catch (error) {
        if (abort.signal.aborted) return;
        const id = idOf?.(stateRef.current);
        if (!id) return setState((current) => ({ ...current, phase: 'failed', error }));
      }
      // The connection ended before the final event: resume by id when the Response is known.
      const id = idOf?.(stateRef.current);
      if (!finished() && id && !abort.signal.aborted) await resume(id, abort);
    },
    [consume, resume],
  );

  const stop = useCallback(() => abortRef.current?.abort(), []);
  /** Watches a Response by id from its first event (the stored ones replay, then the live ones follow). */
  const follow = useCallback(
    (id: string) =>
      start(
        (signal) => api.stream('GET', `/v2/responses/${encodeURIComponent(id)}`, { query: { stream: true }, signal }),
        () => id,
      ),
    [api, start],
  );
  return { state, start, follow, stop };
}

/** The Response id a stream announced in its first event. */
export const responseIdOf = (state: LiveState) => (state.events[0]?.data.response as { id?: string } | undefined)?.id;
