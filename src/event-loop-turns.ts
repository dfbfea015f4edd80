/**
 * Large replies (pages of conversation items and thread messages) are read and serialised in slices; this spaces
 * the slices of every reply in the making out over turns of the event loop, process-wide: each turn starts at most
 * TURN_BYTES of them (at least one slice), the rest wait, in arrival order, for the next turns. A slice that yields
 * with setImmediate alone does not bound a turn: every request that yielded resumes in the same turn's check phase,
 * so a hundred readers of 4 MiB pages made turns of hundreds of milliseconds in which /healthz, new connections and
 * every other request waited. The clock is not read: bytes stand for work, so the bound holds on a slow machine.
 */
export const TURN_BYTES = 512 * 1024;

interface Waiter {
  bytes: number;
  resume: () => void;
}

export interface TurnScheduler {
  /** Resolves in a later turn of the event loop, once this turn's share allows a slice of `bytes`. */
  slice(bytes: number): Promise<void>;
  /** Turns that started slices so far, and slices waiting (tests, metrics). */
  readonly turns: number;
  readonly waiting: number;
}

export function createTurnScheduler(turnBytes = TURN_BYTES): TurnScheduler {
  const queue: Waiter[] = [];
  let scheduled = false;
  let turns = 0;
  const release = () => {
    scheduled = false;
    turns++;
    let spent = 0;
    while (queue.length > 0 && (spent === 0 || spent + queue[0]!.bytes <= turnBytes)) {
      const next = queue.shift()!;
      spent += next.bytes;
      next.resume();
    }
    if (queue.length > 0) schedule();
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(release);
  };
  return {
    slice(bytes) {
      return new Promise<void>((resume) => {
        queue.push({ bytes, resume });
        schedule();
      });
    },
    get turns() {
      return turns;
    },
    get waiting() {
      return queue.length;
    },
  };
}

/** The process's scheduler, shared by every reply built in slices. */
export const replyTurns = createTurnScheduler();
