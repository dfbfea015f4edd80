import net from 'node:net';

/**
 * Which IP addresses an outbound request from the service must not reach (the SSRF guard):
 * everything that is not a globally routable unicast address. Classification is by name so a refusal
 * can say why ("loopback", "private", ...). IPv6 forms that embed an IPv4 address (mapped, NAT64,
 * 6to4, Teredo) are judged by the IPv4 address they lead to, since that is where the packets go.
 */
interface Range {
  kind: string;
  network: string;
  prefix: number;
}

const ipv4Ranges: Range[] = [
  { kind: 'unspecified', network: '0.0.0.0', prefix: 8 },
  { kind: 'private', network: '10.0.0.0', prefix: 8 },
  { kind: 'shared (carrier-grade NAT)', network: '100.64.0.0', prefix: 10 },
  { kind: 'loopback', network: '127.0.0.0', prefix: 8 },
  { kind: 'link-local', network: '169.254.0.0', prefix: 16 },
  { kind: 'private', network: '172.16.0.0', prefix: 12 },
  { kind: 'reserved', network: '192.0.0.0', prefix: 24 },
  { kind: 'documentation', network: '192.0.2.0', prefix: 24 },
  { kind: 'private', network: '192.168.0.0', prefix: 16 },
  { kind: 'benchmarking', network: '198.18.0.0', prefix: 15 },
  { kind: 'documentation', network: '198.51.100.0', prefix: 24 },
  { kind: 'documentation', network: '203.0.113.0', prefix: 24 },
  { kind: 'multicast', network: '224.0.0.0', prefix: 4 },
  { kind: 'broadcast', network: '255.255.255.255', prefix: 32 },
  { kind: 'reserved', network: '240.0.0.0', prefix: 4 },
];

const ipv6Ranges: Range[] = [
  { kind: 'unspecified', network: '::', prefix: 128 },
  { kind: 'loopback', network: '::1', prefix: 128 },
  { kind: 'local-use NAT64', network: '64:ff9b:1::', prefix: 48 },
  { kind: 'reserved', network: '100::', prefix: 64 },
  { kind: 'documentation', network: '2001:db8::', prefix: 32 },
  { kind: 'unique-local', network: 'fc00::', prefix: 7 },
  { kind: 'site-local', network: 'fec0::', prefix: 10 },
  { kind: 'link-local', network: 'fe80::', prefix: 10 },
  { kind: 'multicast', network: 'ff00::', prefix: 8 },
];

/** IPv6 prefixes whose address carries an IPv4 address; `extract` returns it from the 8 groups. */
const embeddingRanges: Array<Range & { extract: (groups: number[]) => number }> = [
  { kind: 'IPv4-mapped', network: '::ffff:0:0', prefix: 96, extract: (g) => (g[6]! << 16) | g[7]! },
  { kind: 'IPv4-translated', network: '::ffff:0:0:0', prefix: 96, extract: (g) => (g[6]! << 16) | g[7]! },
  { kind: 'IPv4-compatible', network: '::', prefix: 96, extract: (g) => (g[6]! << 16) | g[7]! },
  { kind: 'NAT64', network: '64:ff9b::', prefix: 96, extract: (g) => (g[6]! << 16) | g[7]! },
  { kind: '6to4', network: '2002::', prefix: 16, extract: (g) => (g[1]! << 16) | g[2]! },
  // Teredo stores the client's IPv4 address inverted in the last 32 bits (RFC 4380).
  { kind: 'Teredo', network: '2001::', prefix: 32, extract: (g) => ~((g[6]! << 16) | g[7]!) },
];

function buildLists(ranges: Range[], family: 'ipv4' | 'ipv6') {
  return ranges.map((range) => {
    const list = new net.BlockList();
    list.addSubnet(range.network, range.prefix, family);
    return { ...range, list };
  });
}

const ipv4Lists = buildLists(ipv4Ranges, 'ipv4');
const ipv6Lists = buildLists(ipv6Ranges, 'ipv6');
const embeddingLists = embeddingRanges.map((range) => ({ ...buildLists([range], 'ipv6')[0]!, extract: range.extract }));

/**
 * The kind of a non-public address ("loopback", "private", "link-local", ...), or undefined when the
 * address is public. Accepts IPv6 with or without brackets. A string that is not an IP address is
 * not an address at all: undefined.
 */
export function blockedAddressKind(address: string): string | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = net.isIP(bare);
  if (family === 4) return ipv4Lists.find((range) => range.list.check(bare, 'ipv4'))?.kind;
  if (family !== 6) return undefined;
  const direct = ipv6Lists.find((range) => range.list.check(bare, 'ipv6'));
  if (direct) return direct.kind;
  const embedding = embeddingLists.find((range) => range.list.check(bare, 'ipv6'));
  if (!embedding) return undefined;
  const embedded = embedding.extract(ipv6Groups(bare)) >>> 0;
  const ipv4 = [embedded >>> 24, (embedded >>> 16) & 255, (embedded >>> 8) & 255, embedded & 255].join('.');
  const kind = blockedAddressKind(ipv4);
  return kind ? `${kind} (${ipv4} inside an ${embedding.kind} address)` : undefined;
}

/** The eight 16-bit groups of a valid IPv6 address (net.isIP already said it is one). */
function ipv6Groups(address: string): number[] {
  let text = address;
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    tail.push((a << 8) | b, (c << 8) | d);
    text = text.slice(0, -dotted[1]!.length);
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const [head, rest] = text.split('::') as [string, string | undefined];
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  const missing = 8 - tail.length - left.length - right.length;
  return [...left, ...new Array<number>(rest === undefined ? 0 : missing).fill(0), ...right, ...tail];
}
