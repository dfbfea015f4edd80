import type pg from 'pg';

/**
 * Makes every parameterised query on the pool's connections a named prepared statement, so Postgres parses
 * and plans each distinct statement once per connection instead of on every execution, and the client sends
 * only Bind/Execute after the first time (kysely always sends the same text for the same query shape).
 *
 * Statement texts are named in order of first use, up to `maxStatements` per process; texts beyond that (a
 * query built with a varying number of rows or list items that keeps producing new shapes) run unnamed as
 * before, so neither this map nor the per-connection statement caches of pg and Postgres grow without bound.
 * Queries without parameters (`begin`, `commit`, DDL) keep pg's simple protocol.
 *
 * A migration that changes a table's columns makes Postgres refuse a prepared `select *` or `returning *` on it
 * ("cached plan must not change result type"): that one execution fails, and the text gets a new name, so every
 * connection prepares it afresh from then on.
 */
export function prepareStatementsOn(pool: pg.Pool, maxStatements = 400): void {
  const names = new Map<string, string>();
  let counter = 0;
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < maxStatements) {
      name = `sy${counter++}`;
      names.set(text, name);
    }
    return name;
  };
  const forgetIfStale = (text: string, error: unknown) => {
    if (
      (error as { code?: string })?.code === '0A000' &&
      /cached plan must not change result type/.test(String((error as Error)?.message))
    )
      names.delete(text);
  };
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((text: unknown, values?: unknown, callback?: unknown) => {
      if (typeof text === 'string' && Array.isArray(values) && values.length > 0) {
        const name = nameOf(text);
        if (name !== undefined) {
          if (typeof callback === 'function') {
            return query({ name, text, values }, (error: unknown, result: unknown) => {
              if (error) forgetIfStale(text, error);
              (callback as (error: unknown, result: unknown) => void)(error, result);
            });
          }
          return (query({ name, text, values }) as Promise<unknown>).catch((error: unknown) => {
            forgetIfStale(text, error);
            throw error;
          });
        }
      }
      return query(text, values, callback);
    }) as typeof client.query;
  });
}
