import { sql, type Kysely } from 'kysely';

// Frozen: never edit a released migration; add a new one instead.
export async function up(db: Kysely<any>): Promise<void> {
  const now = sql`now()`;

  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('balance', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('mcp_enabled', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text')
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('active'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('expires_at', 'timestamptz')
    .addColumn('disabled_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('api_keys_account_idx').on('api_keys').column('account_id').execute();

  await db.schema
    .createTable('ledger_transactions')
    .addColumn('seq', 'bigserial', (c) => c.notNull().unique())
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull().check(sql`type in ('debit', 'credit')`))
    .addColumn('amount', 'bigint', (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('currency', 'text', (c) => c.notNull().defaultTo('RUB'))
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('usage', 'jsonb')
    .addColumn('operation_key', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addUniqueConstraint('ledger_transactions_operation_unique', ['account_id', 'operation_key'])
    .execute();
  await db.schema
    .createIndex('ledger_transactions_account_seq_idx')
    .on('ledger_transactions')
    .columns(['account_id', 'seq'])
    .execute();

  await db.schema
    .createTable('conversations')
    .addColumn('seq', 'bigserial', (c) => c.notNull().unique())
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex('conversations_account_seq_idx')
    .on('conversations')
    .columns(['account_id', 'seq'])
    .execute();

  await db.schema
    .createTable('conversation_items')
    .addColumn('seq', 'bigserial', (c) => c.notNull().unique())
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('conversation_id', 'text', (c) => c.notNull().references('conversations.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('role', 'text')
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('completed'))
    .addColumn('content', 'jsonb')
    .addColumn('call_id', 'text')
    .addColumn('name', 'text')
    .addColumn('arguments', 'text')
    .addColumn('output', 'text')
    .addColumn('response_id', 'text')
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex('conversation_items_conversation_seq_idx')
    .on('conversation_items')
    .columns(['conversation_id', 'seq'])
    .execute();

  await db.schema
    .createTable('assistants')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedByDefaultAsIdentity())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('vendor', 'text', (c) => c.notNull())
    .addColumn('instructions', 'text')
    .addColumn('reasoning_effort', 'text')
    .addColumn('temperature', 'double precision')
    .addColumn('tools', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('tool_resources', 'jsonb')
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema.createIndex('assistants_account_id_idx').on('assistants').columns(['account_id', 'id']).execute();

  await db.schema
    .createTable('catalog_vendors')
    .addColumn('code', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('model_types', 'jsonb', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('catalog_models')
    .addColumn('code', 'text', (c) => c.primaryKey())
    .addColumn('vendor_code', 'text', (c) => c.notNull().references('catalog_vendors.code').onDelete('cascade'))
    .addColumn('upstream_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('vision', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('streaming', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('function_calling', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('structured_outputs', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('max_output', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('context_window', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_default', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('web_visible', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('protocols', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('position', 'integer', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('catalog_prices')
    .addColumn('model_code', 'text', (c) => c.primaryKey().references('catalog_models.code').onDelete('cascade'))
    .addColumn('unit', 'text', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addColumn('input', 'double precision', (c) => c.notNull())
    .addColumn('output', 'double precision', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('responses')
    .addColumn('seq', 'bigserial', (c) => c.notNull().unique())
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('background', 'boolean', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('vendor', 'text', (c) => c.notNull())
    .addColumn('assistant_id', 'integer')
    .addColumn('conversation_id', 'text')
    .addColumn('previous_response_id', 'text')
    .addColumn('request', 'jsonb', (c) => c.notNull())
    .addColumn('output', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('usage', 'jsonb')
    .addColumn('error', 'jsonb')
    .addColumn('incomplete_details', 'jsonb')
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('started_at', 'timestamptz')
    .addColumn('completed_at', 'timestamptz')
    .addColumn('cancel_requested_at', 'timestamptz')
    .addColumn('deleted_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('responses_account_idx').on('responses').columns(['account_id', 'seq']).execute();

  await db.schema
    .createTable('response_events')
    .addColumn('response_id', 'text', (c) => c.notNull().references('responses.id').onDelete('cascade'))
    .addColumn('first_seq', 'integer', (c) => c.notNull())
    .addColumn('last_seq', 'integer', (c) => c.notNull())
    .addColumn('events', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addPrimaryKeyConstraint('response_events_pk', ['response_id', 'first_seq'])
    .execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('response_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'key'])
    .execute();

  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'timestamptz')
    .addColumn('launched_at', 'timestamptz')
    .addColumn('cancel_requested_at', 'timestamptz')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('finished_at', 'timestamptz')
    .execute();
  await sql`create index jobs_open_idx on jobs (created_at) where status in ('pending', 'running')`.execute(db);

  await db.schema
    .createTable('job_steps')
    .addColumn('job_id', 'text', (c) => c.notNull().references('jobs.id').onDelete('cascade'))
    .addColumn('step', 'integer', (c) => c.notNull())
    .addColumn('activity', 'text', (c) => c.notNull())
    .addColumn('result', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addPrimaryKeyConstraint('job_steps_pk', ['job_id', 'step'])
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('resource_id', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('error', 'text')
    .addColumn('duration_ms', 'integer')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('attempted_at', 'timestamptz')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'webhook_deliveries',
    'job_steps',
    'jobs',
    'idempotency_keys',
    'response_events',
    'responses',
    'catalog_prices',
    'catalog_models',
    'catalog_vendors',
    'assistants',
    'conversation_items',
    'conversations',
    'ledger_transactions',
    'api_keys',
    'accounts',
  ]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
