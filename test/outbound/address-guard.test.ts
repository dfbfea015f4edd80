import { ApiError } from '../../src/errors';
import { blockedAddressKind } from '../../src/outbound/address-ranges';
import {
  checkOutboundUrl,
  createGuardedFetch,
  OutboundAddressRefusedError,
  validateOutboundUrl,
  type GuardedFetch,
  type OutboundUrlOptions,
} from '../../src/outbound/address-guard';
import { answer, startReceiver, type Receiver } from '../webhooks/receiver';

/** Every non-public class, as [address, kind reported]. */
const blocked: Array<[string, string]> = [
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['100.64.0.1', 'shared (carrier-grade NAT)'],
  ['100.127.255.254', 'shared (carrier-grade NAT)'],
  ['127.0.0.1', 'loopback'],
  ['127.255.0.9', 'loopback'],
  ['169.254.169.254', 'link-local'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.0.0.8', 'reserved'],
  ['192.0.2.1', 'documentation'],
  ['192.168.1.1', 'private'],
  ['198.18.0.1', 'benchmarking'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.7', 'documentation'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['fc00::1', 'unique-local'],
  ['fd12:3456:789a::1', 'unique-local'],
  ['fec0::1', 'site-local'],
  ['fe80::1', 'link-local'],
  ['febf:ffff::1', 'link-local'],
  ['ff02::1', 'multicast'],
  ['2001:db8::1', 'documentation'],
  ['100::1', 'reserved'],
  ['64:ff9b:1::1', 'local-use NAT64'],
  ['::ffff:127.0.0.1', 'loopback (127.0.0.1 inside an IPv4-mapped address)'],
  ['::ffff:7f00:1', 'loopback (127.0.0.1 inside an IPv4-mapped address)'],
  ['::ffff:10.1.2.3', 'private (10.1.2.3 inside an IPv4-mapped address)'],
  ['::ffff:0:a9fe:a9fe', 'link-local (169.254.169.254 inside an IPv4-translated address)'],
  ['::127.0.0.1', 'loopback (127.0.0.1 inside an IPv4-compatible address)'],
  ['64:ff9b::7f00:1', 'loopback (127.0.0.1 inside an NAT64 address)'],
  ['64:ff9b::192.168.0.1', 'private (192.168.0.1 inside an NAT64 address)'],
  ['2002:7f00:1::', 'loopback (127.0.0.1 inside an 6to4 address)'],
  ['2002:c0a8:101::1', 'private (192.168.1.1 inside an 6to4 address)'],
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback (127.0.0.1 inside an Teredo address)'],
];

const publicAddresses = [
  '8.8.8.8',
  '1.1.1.1',
  '9.255.255.255',
  '11.0.0.0',
  '100.63.255.255',
  '100.128.0.0',
  '126.255.255.255',
  '128.0.0.0',
  '169.253.255.255',
  '172.15.255.255',
  '172.32.0.0',
  '192.167.255.255',
  '192.169.0.0',
  '223.255.255.255',
  '2606:4700:4700::1111',
  '2a00:1450:4001::200e',
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
  '2002:808:808::1',
  '2001:0:4136:e378:8000:63bf:f7f7:f7f7',
];

describe('address classes', () => {
  it.each(blocked)('%s is %s', (address, kind) => {
    expect(blockedAddressKind(address)).toBe(kind);
    expect(blockedAddressKind(address.includes(':') ? `[${address}]` : address)).toBe(kind);
  });

  it.each(publicAddresses)('%s is public', (address) => {
    expect(blockedAddressKind(address)).toBeUndefined();
  });

  it('does not classify host names', () => {
    expect(blockedAddressKind('example.com')).toBeUndefined();
    expect(blockedAddressKind('localhost')).toBeUndefined();
  });
});

describe('validateOutboundUrl (request time)', () => {
  const strict = { allowPrivateNetworks: false };
  const open = { allowPrivateNetworks: true };

  function refusal(raw: string, options: OutboundUrlOptions = strict, area: 'response' | 'mcp' = 'response'): ApiError {
    try {
      validateOutboundUrl(raw, options, area);
    } catch (error) {
      if (ApiError.isInstance(error)) return error;
      throw error;
    }
    throw new Error(`expected ${raw} to be refused`);
  }

  const hostFor = (address: string) => (address.includes(':') ? `[${address}]` : address);

  it.each(blocked)('refuses %s (%s) unless private networks are allowed', (address) => {
    const raw = `http://${hostFor(address)}:8080/hook`;
    const error = refusal(raw);
    expect(error.status).toBe(400);
    expect(error.code).toBe('response.invalid_request');
    expect(error.message).toMatch(/not allowed/);
    expect(validateOutboundUrl(raw, open, 'response').hostname).toBe(new URL(raw).hostname);
  });

  it.each([
    'http://localhost/hook',
    'http://LOCALHOST:3000/',
    'http://localhost./',
    'http://api.localhost/x',
    'https://a.b.localhost/',
  ])('refuses the name %s unless private networks are allowed', (raw) => {
    expect(refusal(raw).message).toMatch(/localhost/);
    expect(validateOutboundUrl(raw, open, 'response')).toBeInstanceOf(URL);
  });

  it.each([
    ['http://2130706433/', 'loopback'],
    ['http://0x7f.1/', 'loopback'],
    ['http://127.1/', 'loopback'],
    ['http://0177.0.0.1/', 'loopback'],
    ['http://[0:0:0:0:0:ffff:a9fe:a9fe]/', 'link-local'],
  ])('sees through the alternative spelling %s', (raw, kind) => {
    expect(refusal(raw).message).toContain(kind);
  });

  it.each(publicAddresses)('accepts the public address %s', (address) => {
    expect(validateOutboundUrl(`https://${hostFor(address)}/hook`, strict, 'response')).toBeInstanceOf(URL);
  });

  it('accepts ordinary http and https URLs and returns them parsed', () => {
    const url = validateOutboundUrl('https://hooks.example.com:8443/a/b?token=t#frag', strict, 'response');
    expect(url.hostname).toBe('hooks.example.com');
    expect(url.port).toBe('8443');
    expect(validateOutboundUrl('http://example.com', strict, 'response').href).toBe('http://example.com/');
  });

  it.each([
    'ftp://example.com/x',
    'file:///etc/passwd',
    'gopher://example.com',
    'javascript:alert(1)',
    'ws://example.com',
  ])('refuses the scheme of %s even with private networks allowed', (raw) => {
    expect(refusal(raw, open).message).toMatch(/must use http or https/);
  });

  it.each(['', 'not a url', '/relative/path', 'http://', 'https://exa mple.com/'])(
    'refuses the malformed %j',
    (raw) => {
      expect(refusal(raw, open).message).toMatch(/absolute http or https URL/);
    },
  );

  it('refuses credentials in the URL', () => {
    expect(refusal('https://user:secret@example.com/', open).message).toMatch(/credentials/);
    expect(refusal('https://user@example.com/', open).message).toMatch(/credentials/);
    expect(refusal('https://:secret@example.com/', open).message).toMatch(/credentials/);
  });

  it('requires https when asked, and names the caller’s area and field', () => {
    const error = refusal(
      'http://mcp.example.com/sse',
      { allowPrivateNetworks: true, requireHttps: true, field: 'server_url' },
      'mcp',
    );
    expect(error.code).toBe('mcp.invalid_request');
    expect(error.message).toBe('server_url must use https.');
    expect(validateOutboundUrl('https://mcp.example.com/sse', { ...open, requireHttps: true }, 'mcp').protocol).toBe(
      'https:',
    );
  });

  it('refuses URLs longer than 2048 characters', () => {
    expect(refusal(`https://example.com/${'a'.repeat(2048)}`, open).message).toMatch(/at most 2048/);
  });

  it('checkOutboundUrl reports instead of throwing', () => {
    expect(
      checkOutboundUrl('http://10.0.0.1/', { allowPrivateNetworks: false, field: 'metadata.webhook_url' }),
    ).toEqual({
      ok: false,
      message:
        'metadata.webhook_url points to a private address; private, loopback and link-local addresses are not allowed.',
    });
    expect(checkOutboundUrl('https://example.com/', { allowPrivateNetworks: false })).toMatchObject({ ok: true });
  });
});

describe('createGuardedFetch (connect time)', () => {
  let receiver: Receiver;
  const fetches: GuardedFetch[] = [];
  const guarded = (options: Parameters<typeof createGuardedFetch>[0]) => {
    const created = createGuardedFetch(options);
    fetches.push(created);
    return created;
  };

  beforeEach(async () => {
    receiver = await startReceiver(answer(200));
  });
  afterEach(async () => {
    await Promise.all(fetches.splice(0).map((created) => created.close()));
    await receiver.close();
  });

  async function refusedBy(promise: Promise<unknown>): Promise<OutboundAddressRefusedError> {
    const error = await promise.then(
      () => {
        throw new Error('expected the connection to be refused');
      },
      (caught: unknown) => caught,
    );
    const refusal = OutboundAddressRefusedError.find(error);
    if (!refusal) throw error;
    return refusal;
  }

  it('refuses a host name that resolves to loopback (localhost, real DNS)', async () => {
    const refusal = await refusedBy(guarded({ allowPrivateNetworks: false })(`http://localhost:${receiver.port}/hook`));
    expect(refusal.host).toBe('localhost');
    expect(refusal.kind).toMatch(/loopback/);
    expect(refusal.message).toMatch(/^refused to connect to localhost: it resolves to .*loopback/);
    expect(receiver.requests).toHaveLength(0);
  });

  it('connects to localhost when private networks are allowed', async () => {
    const reply = await guarded({ allowPrivateNetworks: true })(`http://localhost:${receiver.port}/hook`);
    expect(reply.status).toBe(200);
    expect(await reply.text()).toBe('status 200');
    expect(receiver.requests).toHaveLength(1);
  });

  it('refuses IP literals that skip name resolution', async () => {
    const fetchStrict = guarded({ allowPrivateNetworks: false });
    expect((await refusedBy(fetchStrict(`${receiver.url}/hook`))).message).toBe(
      'refused to connect to 127.0.0.1: a loopback address',
    );
    expect((await refusedBy(fetchStrict(`http://[::1]:${receiver.port}/`))).kind).toBe('loopback');
    expect((await refusedBy(fetchStrict(`http://[::ffff:127.0.0.1]:${receiver.port}/`))).kind).toMatch(/^loopback/);
    expect((await refusedBy(fetchStrict('http://169.254.169.254/latest/meta-data/'))).kind).toBe('link-local');
    expect(receiver.requests).toHaveLength(0);
  });

  it('refuses a rebinding name when any resolved address is private, and never connects', async () => {
    const resolved: string[] = [];
    const rebinding = guarded({
      allowPrivateNetworks: false,
      resolveHost: async (hostname) => {
        resolved.push(hostname);
        return [
          { address: '93.184.215.14', family: 4 },
          { address: '127.0.0.1', family: 4 },
        ];
      },
    });
    const refusal = await refusedBy(rebinding(`http://rebind.test:${receiver.port}/hook`));
    expect(refusal.message).toBe('refused to connect to rebind.test: it resolves to 127.0.0.1, a loopback address');
    expect(resolved).toEqual(['rebind.test']);
    expect(receiver.requests).toHaveLength(0);
  });

  it('connects to the very address it checked (one resolution per connection)', async () => {
    let resolutions = 0;
    const allowed = guarded({
      allowPrivateNetworks: true,
      resolveHost: async () => {
        resolutions += 1;
        return [{ address: '127.0.0.1', family: 4 }];
      },
    });
    const reply = await allowed(`http://rebind.test:${receiver.port}/path?q=1`, { method: 'POST', body: 'x' });
    expect(reply.status).toBe(200);
    expect(resolutions).toBe(1);
    expect(receiver.requests).toEqual([
      expect.objectContaining({
        method: 'POST',
        path: '/path?q=1',
        body: 'x',
        headers: expect.objectContaining({ host: `rebind.test:${receiver.port}` }),
      }),
    ]);
  });

  it('reports a name that does not resolve as a network error, not a refusal', async () => {
    const nowhere = guarded({ allowPrivateNetworks: false, resolveHost: async () => [] });
    const error = await nowhere('http://nowhere.test/').then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(Error);
    expect(OutboundAddressRefusedError.find(error)).toBeUndefined();
    expect(String((error as { cause?: { message?: string } }).cause?.message)).toMatch(/ENOTFOUND nowhere\.test/);
  });

  it('does not follow redirects, even when asked to', async () => {
    const target = await startReceiver(answer(200));
    try {
      const redirecting = await startReceiver(answer(302, { location: `${target.url}/landed` }));
      try {
        const reply = await guarded({ allowPrivateNetworks: true })(`${redirecting.url}/hook`, { redirect: 'follow' });
        expect(reply.status).toBe(302);
        expect(reply.headers.get('location')).toBe(`${target.url}/landed`);
        expect(redirecting.requests).toHaveLength(1);
        expect(target.requests).toHaveLength(0);
      } finally {
        await redirecting.close();
      }
    } finally {
      await target.close();
    }
  });
});
