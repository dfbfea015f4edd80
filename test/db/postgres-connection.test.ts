import net from 'node:net';
import { sql } from 'kysely';
import pg from 'pg';
import { CoalescingSocket } from '../../src/db/coalescing-socket';
import { openDatabase } from '../../src/db/database';
import { prepareStatementsOn } from '../../src/db/prepared-statements';
import { postgresUrl } from '../support/harness';

describe('CoalescingSocket', () => {
  it('hands everything written in one tick to the kernel as one writev, in order', async () => {
    const received: Buffer[] = [];
    const server = net.createServer((socket) => socket.on('data', (chunk) => received.push(chunk)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const socket = new CoalescingSocket();
    try {
      await new Promise<void>((resolve) =>
        socket.connect((server.address() as net.AddressInfo).port, '127.0.0.1', resolve),
      );
      const writes: number[] = [];
      const writev = socket._writev!.bind(socket);
      socket._writev = (chunks, callback) => {
        writes.push(chunks.length);
        writev(chunks, callback);
      };
      const write = socket._write.bind(socket);
      socket._write = (chunk, encoding, callback) => {
        writes.push(1);
        write(chunk, encoding, callback);
      };
      // What pg does for one query: Parse, Bind, Describe, Execute, Sync.
      for (const message of ['P', 'B', 'D', 'E', 'S']) socket.write(Buffer.from(message));
      await new Promise((resolve) => setImmediate(resolve));
      expect(writes).toEqual([5]);
      // The next tick's writes are a batch of their own.
      socket.write(Buffer.from('x'));
      await new Promise((resolve) => setImmediate(resolve));
      expect(writes).toEqual([5, 1]);
      await new Promise<void>((resolve) => socket.end(resolve));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(Buffer.concat(received).toString()).toBe('PBDESx');
    } finally {
      socket.destroy();
      server.close();
    }
  });
});

(postgresUrl ? describe : describe.skip)('prepareStatementsOn (Postgres)', () => {
  it('names parameterised statements up to the cap, reuses them, and runs the rest unnamed', async () => {
    const pool = new pg.Pool({ connectionString: postgresUrl, max: 1, stream: () => new CoalescingSocket() });
    prepareStatementsOn(pool, 2);
    try {
      for (let round = 0; round < 2; round++) {
        expect((await pool.query('select $1::int + 1 as value', [round])).rows).toEqual([{ value: round + 1 }]);
        expect((await pool.query('select $1::text || $2::text as value', ['a', String(round)])).rows).toEqual([
          { value: `a${round}` },
        ]);
        // A third shape is past the cap of two: it still runs, unnamed.
        expect((await pool.query('select $1::int * 2 as value', [round + 5])).rows).toEqual([
          { value: (round + 5) * 2 },
        ]);
        // Without parameters pg keeps the simple protocol.
        expect((await pool.query('select 7 as value')).rows).toEqual([{ value: 7 }]);
      }
      const prepared = await pool.query(
        "select name, statement from pg_prepared_statements where name like 'sy%' order by name",
      );
      expect(prepared.rows.map((row) => row.statement)).toEqual([
        'select $1::int + 1 as value',
        'select $1::text || $2::text as value',
      ]);
    } finally {
      await pool.end();
    }
  });

  it('prepares a statement afresh after a migration changed the columns it returns', async () => {
    const table = `prep_${Date.now().toString(36)}`;
    const pool = new pg.Pool({ connectionString: postgresUrl, max: 1 });
    prepareStatementsOn(pool);
    try {
      await pool.query(`create table ${table} (id int primary key)`);
      await pool.query(`insert into ${table} values (1)`);
      const select = `select * from ${table} where id = $1`;
      expect((await pool.query(select, [1])).rows).toEqual([{ id: 1 }]);
      await pool.query(`alter table ${table} add column label text default 'added'`);
      // Postgres refuses the prepared plan once (its result type changed); the next execution prepares anew.
      await expect(pool.query(select, [1])).rejects.toMatchObject({ code: '0A000' });
      expect((await pool.query(select, [1])).rows).toEqual([{ id: 1, label: 'added' }]);
    } finally {
      await pool.query(`drop table if exists ${table}`);
      await pool.end();
    }
  });

  it('is what openDatabase does unless DATABASE_PREPARED_STATEMENTS is off', async () => {
    for (const preparedStatements of [true, false]) {
      const database = await openDatabase({
        url: postgresUrl,
        poolSize: 1,
        preparedStatements,
        dataDir: '/nonexistent',
      });
      try {
        await sql`select ${'x'}::text as value`.execute(database.db);
        const prepared = await sql<{
          count: number;
        }>`select count(*)::int as count from pg_prepared_statements where name like 'sy%'`.execute(database.db);
        expect(prepared.rows[0].count).toBe(preparedStatements ? 1 : 0);
      } finally {
        await database.close();
      }
    }
  });
});
