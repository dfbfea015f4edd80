import pg from 'pg';
import { openDatabase } from '../../src/db/database';
import { migrateToLatest } from '../../src/db/migrate';
import { createSchema, dropSchema, postgresUrl } from '../support/harness';

/**
 * `debit_operations` keeps, per connection, the plan it made for its first debits, and on a new database those ran
 * against empty tables. Its plan must still reach rows through indexes when the ledger has grown: a plan that scanned
 * `ledger_transactions` and `ledger_holds` whole made each debit cost as much as the ledger's history (3.5 ms a debit
 * in a bench of synchronous Responses).
 * The plans are read with auto_explain, which Postgres ships (not PGlite: this runs on Postgres only).
 */
(postgresUrl ? describe : describe.skip)('debit_operations plans (postgres)', () => {
  let schema: string;
  let client: pg.Client;
  const debit = (id: string, account: string, key: string) =>
    client.query('select * from debit_operations($1::jsonb)', [
      JSON.stringify([
        { id, account_id: account, cost: 1.5, currency: 'RUB', metadata: '{}', usage: '{}', operation_key: key },
      ]),
    ]);

  beforeAll(async () => {
    schema = await createSchema();
    const handle = await openDatabase(
      { url: postgresUrl, poolSize: 1, preparedStatements: false, dataDir: '' },
      { inMemory: true, schema },
    );
    await migrateToLatest(handle.db);
    await handle.close();
    client = new pg.Client({ connectionString: postgresUrl, options: `-c search_path=${schema}` });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    if (schema) await dropSchema(schema);
  });

  it('reaches holds, debits and accounts by their keys after the ledger grew from empty', async () => {
    await client.query(`insert into accounts (id, name, balance) values ('acct_a', 'a', 1000000000)`);
    await client.query(
      `insert into ledger_holds (account_id, operation_key, amount, owner)
       select 'acct_a', 'op_' || g, 2, 'test' from generate_series(1, 20) g`,
    );
    await client.query(`update accounts set held = 40 where id = 'acct_a'`);
    // More than five calls: PL/pgSQL then settles on the generic plan it keeps, made against the empty ledger.
    for (let index = 1; index <= 8; index++) await debit(`txn_${index}`, 'acct_a', `op_${index}`);
    await client.query(
      `insert into ledger_transactions (id, account_id, type, amount, operation_key, cost)
       select 'txn_old_' || g, 'acct_a', 'debit', 1, 'old_' || g, 1 from generate_series(1, 20000) g`,
    );

    const plans: string[] = [];
    client.on('notice', (notice) => plans.push(notice.message ?? ''));
    await client.query(`load 'auto_explain'`);
    await client.query(`set auto_explain.log_min_duration = 0`);
    await client.query(`set auto_explain.log_nested_statements = on`);
    await client.query(`set auto_explain.log_level = notice`);
    const { rows } = await debit('txn_9', 'acct_a', 'op_9');
    await client.query(`set auto_explain.log_min_duration = -1`);

    expect(rows).toEqual([expect.objectContaining({ operation_key: 'op_9', amount: '2' })]);
    const debitPlan = plans.find((plan) => plan.includes('Insert on ledger_transactions'));
    expect(debitPlan).toBeDefined();
    expect(debitPlan).not.toMatch(/Seq Scan on (ledger_transactions|ledger_holds|accounts)/);
    expect(debitPlan).toMatch(/Index Scan using ledger_holds_pkey on ledger_holds/);
  });
});
