import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Logger } from '../logger';

/**
 * Notifications between processes: "resource X has new events up to N" and "cancel job X". Payloads are
 * small ids; the data itself lives in Postgres. In-process when embedded, LISTEN/NOTIFY in production,
 * so any API replica can serve any stream.
 */
export interface BusMessage {
  topic: string;
  /** Local deliveries may carry the events themselves so a same-process subscriber skips a read. */
  data?: unknown;
  id: string;
  value?: number;
  /** The message announces the stream's terminal event (its sequence number is `value`). */
  final?: boolean;
}

export interface EventBus {
  /** To this process's subscribers (with the data) and to other processes' (through the database). */
  publish(message: BusMessage): Promise<void>;
  /**
   * To this process's subscribers only, at once: for data not stored yet, which other processes could not
   * read. Its `publish` follows once the data is stored.
   */
  publishLocal(message: BusMessage): void;
  /** Listener for every message of `topic` about `id`. Returns an unsubscribe function. */
  subscribe(topic: string, id: string, listener: (message: BusMessage) => void): () => void;
  /** Listener for every message of a topic (e.g. cancel requests for any job). */
  subscribeAll(topic: string, listener: (message: BusMessage) => void): () => void;
  close(): Promise<void>;
}

class LocalDispatch {
  private readonly emitter = new EventEmitter();
  constructor() {
    this.emitter.setMaxListeners(0);
  }
  dispatch(message: BusMessage) {
    this.emitter.emit(`${message.topic}:${message.id}`, message);
    this.emitter.emit(`${message.topic}:*`, message);
  }
  on(key: string, listener: (message: BusMessage) => void) {
    this.emitter.on(key, listener);
    return () => void this.emitter.off(key, listener);
  }
}

export function createInProcessBus(): EventBus {
  const local = new LocalDispatch();
  return {
    async publish(message) {
      local.dispatch(message);
    },
    publishLocal: (message) => local.dispatch(message),
    subscribe: (topic, id, listener) => local.on(`${topic}:${id}`, listener),
    subscribeAll: (topic, listener) => local.on(`${topic}:*`, listener),
    async close() {},
  };
}

const CHANNEL = 'switchyard_bus';

/**
 * LISTEN/NOTIFY bus: one dedicated connection per process. Local subscribers get messages directly (with
 * their data); other processes get `{topic, id, value}` through NOTIFY and read the data from the table.
 * A lost connection is re-established; subscribers also poll, so a missed notification only delays.
 */
export async function createPostgresBus(options: {
  connectionString: string;
  schema?: string;
  logger: Logger;
}): Promise<EventBus> {
  const local = new LocalDispatch();
  const origin = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  const channel = options.schema ? `${CHANNEL}_${options.schema}` : CHANNEL;
  let client: pg.Client | undefined;
  let closed = false;

  const connect = async () => {
    const next = new pg.Client({ connectionString: options.connectionString });
    next.on('error', (error) => options.logger.warn({ err: error }, 'event bus connection lost'));
    next.on('end', () => {
      if (closed) return;
      client = undefined;
      setTimeout(
        () => void connect().catch((error) => options.logger.error({ err: error }, 'event bus reconnect failed')),
        500,
      ).unref();
    });
    await next.connect();
    next.on('notification', (notification) => {
      if (!notification.payload) return;
      try {
        const message = JSON.parse(notification.payload) as BusMessage & { origin: string };
        if (message.origin === origin) return;
        local.dispatch({ topic: message.topic, id: message.id, value: message.value, final: message.final });
      } catch (error) {
        options.logger.warn({ err: error }, 'unreadable bus notification');
      }
    });
    await next.query(`listen ${channel}`);
    client = next;
  };
  await connect();

  // Notifications queue while one NOTIFY round trip is in flight and then go out together in one
  // statement: under load, many per round trip instead of one each.
  let queued: string[] = [];
  let sending = false;
  const send = async () => {
    sending = true;
    while (queued.length > 0 && client) {
      const batch = queued;
      queued = [];
      // Named: prepared once per connection (the bus's own client is not the pool's, so prepareStatementsOn does not cover it).
      await client
        .query({
          name: 'bus_notify',
          text: 'select pg_notify($1, payload) from unnest($2::text[]) as payload',
          values: [channel, batch],
        })
        .catch((error) => options.logger.warn({ err: error }, 'notify failed'));
    }
    sending = false;
  };

  return {
    async publish(message) {
      local.dispatch(message);
      // Not awaited: the data is already committed, and other processes' subscribers also poll, so a lost
      // notification delays them by at most the poll interval rather than blocking the writer.
      queued.push(
        JSON.stringify({ topic: message.topic, id: message.id, value: message.value, final: message.final, origin }),
      );
      if (!sending) void send();
    },
    publishLocal: (message) => local.dispatch(message),
    subscribe: (topic, id, listener) => local.on(`${topic}:${id}`, listener),
    subscribeAll: (topic, listener) => local.on(`${topic}:*`, listener),
    async close() {
      closed = true;
      await client?.end().catch(() => undefined);
    },
  };
}
