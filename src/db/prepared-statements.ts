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
 */
export function prepareStatementsOn(pool: pg.Pool, maxStatements = 400): void {
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < maxStatements) {
      name = `sy${names.size}`;
      names.set(text, name);
    }
    return name;
  };
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((text: unknown, values?: unknown, callback?: unknown) => {
      if (typeof text === 'string' && Array.isArray(values) && values.length > 0) {
        const name = nameOf(text);
        if (name !== undefined) return callback === undefined ? query({ name, text, values }) : query({ name, text, values }, callback);
      }
      return query(text, values, callback);
    }) as typeof client.query;
  });
}
