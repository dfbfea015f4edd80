import { useTestApp, postgresUrl } from '../support/harness';

const backend = postgresUrl ? 'postgres' : 'pglite';

describe(`assistants (${backend})`, () => {
  const suite = useTestApp();

  const call = (method: string, url: string, body?: unknown, as = suite.key) =>
    suite.app.request(method, url, { key: as, body });

  const full = {
    model: 'dev-echo',
    name: 'Support bot',
    description: 'Answers billing questions',
    instructions: 'Be polite. Quote invoice numbers.',
    reasoning_effort: 'high',
    temperature: 0.3,
    tools: [
      {
        type: 'function',
        function: {
          name: 'get_invoice',
          description: 'Fetch one invoice',
          parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        },
      },
      { type: 'function', function: { name: 'list-payments' } },
      { type: 'file_search' },
      { type: 'code_interpreter' },
    ],
    tool_resources: {
      file_search: { vector_store_ids: ['vs_1'] },
      code_interpreter: { file_ids: ['file_1', 'file_2'] },
    },
    metadata: { team: 'billing', tier: 'gold' },
  };

  async function countAssistants(accountId: string) {
    const row = await suite.app.db
      .selectFrom('assistants')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  it('creates a minimal assistant: vendor from the catalog, unset fields null', async () => {
    const reply = await call('POST', '/v2/assistants', { model: 'dev-echo', name: 'Echo' });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      id: expect.any(Number),
      object: 'assistant',
      created_at: expect.any(Number),
      name: 'Echo',
      description: null,
      model: 'dev-echo',
      vendor: 'dev',
      instructions: null,
      reasoning_effort: null,
      temperature: null,
      tools: [],
      tool_resources: null,
      metadata: {},
    });
    expect(Number.isInteger(reply.body.id)).toBe(true);
    expect(Math.abs(reply.body.created_at - Date.now() / 1000)).toBeLessThan(60);
    expect((await call('GET', `/v2/assistants/${reply.body.id}`)).body).toEqual(reply.body);
  });

  it('creates a full assistant and returns every field as sent', async () => {
    const reply = await call('POST', '/v2/assistants', full);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      ...full,
      id: expect.any(Number),
      object: 'assistant',
      created_at: expect.any(Number),
      vendor: 'dev',
    });
    const got = await call('GET', `/v2/assistants/${reply.body.id}`);
    expect(got.body).toEqual(reply.body);
  });

  it('accepts the limits at their edges and null for optional fields', async () => {
    const edges = await call('POST', '/v2/assistants', {
      model: 'dev-echo',
      name: 'n'.repeat(256),
      description: 'd'.repeat(512),
      instructions: 'i'.repeat(256_000),
      temperature: 2,
      metadata: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`.padEnd(64, 'x'), 'v'.repeat(512)])),
    });
    expect(edges.status).toBe(200);
    expect(edges.body.instructions).toHaveLength(256_000);
    const zero = await call('POST', '/v2/assistants', {
      model: 'dev-echo',
      name: 'cold',
      temperature: 0,
      reasoning_effort: 'low',
    });
    expect(zero.body).toMatchObject({ temperature: 0, reasoning_effort: 'low' });
    const nulls = await call('POST', '/v2/assistants', {
      model: 'dev-echo',
      name: 'nulls',
      description: null,
      instructions: null,
      reasoning_effort: null,
      temperature: null,
      tools: null,
      tool_resources: null,
      metadata: null,
    });
    expect(nulls.status).toBe(200);
    expect(nulls.body).toMatchObject({
      description: null,
      instructions: null,
      reasoning_effort: null,
      temperature: null,
      tools: [],
      tool_resources: null,
      metadata: {},
    });
  });

  it('update is a full replacement: fields left out are reset, model and name are required', async () => {
    const created = (await call('POST', '/v2/assistants', full)).body;
    const otherLlm = suite.app.runtime.deps.catalog.listModels({ type: 'llm' }).find((model) => model.vendor !== 'dev');
    expect(otherLlm).toBeDefined();
    const replaced = await call('POST', `/v2/assistants/${created.id}`, { model: otherLlm!.code, name: 'Renamed' });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toEqual({
      id: created.id,
      object: 'assistant',
      created_at: created.created_at,
      name: 'Renamed',
      description: null,
      model: otherLlm!.code,
      vendor: otherLlm!.vendor,
      instructions: null,
      reasoning_effort: null,
      temperature: null,
      tools: [],
      tool_resources: null,
      metadata: {},
    });
    expect((await call('GET', `/v2/assistants/${created.id}`)).body).toEqual(replaced.body);

    const restored = await call('POST', `/v2/assistants/${created.id}`, full);
    expect(restored.body).toEqual({ ...created });

    for (const partial of [
      { name: 'only name' },
      { model: 'dev-echo' },
      { description: 'x' },
      {},
      { ...full, name: '' },
      { ...full, model: 'no-such-model' },
    ]) {
      const reply = await call('POST', `/v2/assistants/${created.id}`, partial);
      expect([JSON.stringify(partial).slice(0, 60), reply.status, reply.body.error?.code]).toEqual([
        JSON.stringify(partial).slice(0, 60),
        400,
        'assistant.invalid_request',
      ]);
    }
    expect((await call('GET', `/v2/assistants/${created.id}`)).body).toEqual(created);
  });

  it('deletes an assistant', async () => {
    const created = (await call('POST', '/v2/assistants', { model: 'dev-echo', name: 'temp' })).body;
    const deleted = await call('DELETE', `/v2/assistants/${created.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: created.id, deleted: true });
    for (const [method, body] of [['GET'], ['DELETE'], ['POST', { model: 'dev-echo', name: 'back' }]] as const) {
      const reply = await call(method, `/v2/assistants/${created.id}`, body);
      expect([method, reply.status, reply.body.error.code]).toEqual([method, 404, 'assistant.not_found']);
    }
  });

  it('rejects every invalid create body with 400 and writes nothing', async () => {
    const { key: own, accountId } = await suite.app.createAccount();
    const base = { model: 'dev-echo', name: 'x' };
    const cases: Array<[unknown, RegExp?]> = [
      [{ name: 'x' }, /model/],
      [{ model: 'dev-echo' }, /name/],
      [{ ...base, name: '' }, /name/],
      [{ ...base, name: 'n'.repeat(257) }, /name/],
      [{ ...base, name: 5 }],
      [{ ...base, description: 'd'.repeat(513) }, /description/],
      [{ ...base, instructions: 'i'.repeat(256_001) }, /instructions/],
      [{ ...base, reasoning_effort: 'minimal' }, /reasoning_effort/],
      [{ ...base, temperature: -0.1 }, /temperature/],
      [{ ...base, temperature: 2.01 }, /temperature/],
      [{ ...base, temperature: '1' }, /temperature/],
      [{ ...base, tools: [{ type: 'function', name: 'flat_form', parameters: {} }] }, /tools\[0\]/],
      [{ ...base, tools: [{ type: 'function', function: { name: 'has space' } }] }, /function names/],
      [{ ...base, tools: [{ type: 'function', function: { name: 'f', extra: 1 } }] }],
      [{ ...base, tools: [{ type: 'function', function: { name: 'f', parameters: 'nope' } }] }],
      [
        {
          ...base,
          tools: [
            { type: 'function', function: { name: 'f' } },
            { type: 'function', function: { name: 'f' } },
          ],
        },
        /unique/,
      ],
      [{ ...base, tools: [{ type: 'mcp', server_label: 'x' }] }, /tool type/],
      [{ ...base, tools: [{ type: 'file_search', max_num_results: 3 }] }],
      [{ ...base, tools: { type: 'file_search' } }],
      [{ ...base, tools: Array.from({ length: 129 }, () => ({ type: 'file_search' })) }, /128/],
      [{ ...base, tool_resources: ['file_1'] }],
      [{ ...base, tool_resources: 'files' }],
      [{ ...base, metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, /16 pairs/],
      [{ ...base, metadata: { k: 1 } }],
      [{ ...base, instructions: 'a\u0000b' }, /NUL/],
      [{ ...base, vendor: 'dev' }],
      [{ ...base, id: 7 }],
      [[base]],
      [{ ...base, model: 'no-such-model' }, /'no-such-model'/],
      [{ ...base, model: 'dev-embed' }, /llm/],
    ];
    for (const [body, message] of cases) {
      const reply = await suite.app.request('POST', '/v2/assistants', { key: own, body });
      const label = JSON.stringify(body).slice(0, 70);
      expect([label, reply.status, reply.body.error?.code]).toEqual([label, 400, 'assistant.invalid_request']);
      if (message) expect([label, reply.body.error.message]).toEqual([label, expect.stringMatching(message)]);
    }
    const missingBody = await suite.app.request('POST', '/v2/assistants', { key: own });
    expect([missingBody.status, missingBody.body.error.code]).toEqual([400, 'assistant.invalid_request']);
    expect(await countAssistants(accountId)).toBe(0);
  });

  it('rejects bad path ids: 400 when not an integer, 404 when out of range', async () => {
    for (const id of ['abc', '1.5', '-1', '0x10', '1e3']) {
      const reply = await call('GET', `/v2/assistants/${id}`);
      expect([id, reply.status, reply.body.error.code]).toEqual([id, 400, 'assistant.invalid_request']);
    }
    for (const id of ['0', '2147483648', '99999999999999999999']) {
      const reply = await call('GET', `/v2/assistants/${id}`);
      expect([id, reply.status, reply.body.error.code]).toEqual([id, 404, 'assistant.not_found']);
    }
  });

  describe('listing', () => {
    let own: string;
    let ids: number[];
    beforeAll(async () => {
      ({ key: own } = await suite.app.createAccount());
      ids = [];
      for (let i = 0; i < 25; i++) {
        const reply = await call('POST', '/v2/assistants', { model: 'dev-echo', name: `a${i}` }, own);
        ids.push(reply.body.id);
      }
    });

    it('returns a bare array of {id, name, model, vendor}, 20 newest first by default', async () => {
      const reply = await call('GET', '/v2/assistants', undefined, own);
      expect(reply.status).toBe(200);
      expect(Array.isArray(reply.body)).toBe(true);
      expect(reply.body).toHaveLength(20);
      expect(reply.body[0]).toEqual({ id: ids[24], name: 'a24', model: 'dev-echo', vendor: 'dev' });
      expect(reply.body.map((entry: any) => entry.id)).toEqual([...ids].reverse().slice(0, 20));
      const ascending = await call('GET', '/v2/assistants?limit=100&order=asc', undefined, own);
      expect(ascending.body.map((entry: any) => entry.id)).toEqual(ids);
    });

    it('pages with after and before in both orders without gaps or duplicates', async () => {
      const walk = async (order: 'asc' | 'desc', direction: 'after' | 'before', start?: number) => {
        const seen: number[] = start === undefined ? [] : [start];
        let cursor = start;
        for (let guard = 0; guard < 100; guard++) {
          const reply = await call(
            'GET',
            `/v2/assistants?limit=7&order=${order}${cursor === undefined ? '' : `&${direction}=${cursor}`}`,
            undefined,
            own,
          );
          expect(reply.status).toBe(200);
          const page: number[] = reply.body.map((entry: any) => entry.id);
          if (page.length === 0) return seen;
          if (direction === 'after') {
            seen.push(...page);
            cursor = page[page.length - 1];
          } else {
            seen.unshift(...page);
            cursor = page[0];
          }
        }
        throw new Error('walk did not end');
      };
      expect(await walk('asc', 'after')).toEqual(ids);
      expect(await walk('desc', 'after')).toEqual([...ids].reverse());
      expect(await walk('asc', 'before', ids[24])).toEqual(ids);
      expect(await walk('desc', 'before', ids[0])).toEqual([...ids].reverse());
      // A deleted assistant's id still works as a cursor.
      await call('DELETE', `/v2/assistants/${ids[10]}`, undefined, own);
      const afterDeleted = await call('GET', `/v2/assistants?order=asc&limit=2&after=${ids[10]}`, undefined, own);
      expect(afterDeleted.body.map((entry: any) => entry.id)).toEqual([ids[11], ids[12]]);
    });

    it('rejects bad list queries', async () => {
      for (const query of [
        'limit=0',
        'limit=101',
        'limit=x',
        'order=newest',
        'after=abc',
        'before=-1',
        'after=1&before=2',
        'sort=id',
        'limit=2&limit=3',
      ]) {
        const reply = await call('GET', `/v2/assistants?${query}`, undefined, own);
        expect([query, reply.status, reply.body.error?.code]).toEqual([query, 400, 'assistant.invalid_request']);
      }
    });
  });

  it("hides another account's assistants (404) and lists only the caller's", async () => {
    const owner = await suite.app.createAccount();
    const stranger = await suite.app.createAccount();
    const created = (await call('POST', '/v2/assistants', full, owner.key)).body;
    for (const [method, body] of [['GET'], ['POST', { model: 'dev-echo', name: 'hijack' }], ['DELETE']] as const) {
      const reply = await call(method, `/v2/assistants/${created.id}`, body, stranger.key);
      expect([method, reply.status, reply.body.error.code]).toEqual([method, 404, 'assistant.not_found']);
      expect(JSON.stringify(reply.body)).not.toContain('Support bot');
    }
    expect((await call('GET', '/v2/assistants', undefined, stranger.key)).body).toEqual([]);
    expect((await call('GET', `/v2/assistants/${created.id}`, undefined, owner.key)).body).toEqual(created);
  });
});
