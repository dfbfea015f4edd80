import dns from 'node:dns';
import net from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch, type RequestInit as UndiciRequestInit } from 'undici';
import { invalidRequest, type ErrorArea } from '../errors';
import { blockedAddressKind } from './address-ranges';

/**
 * The SSRF guard for URLs that clients give us (webhook_url, callback_url, MCP server_url), in two
 * layers. Request time (`validateOutboundUrl`): the URL's shape, and its host when the host is an IP
 * literal or `localhost`, so a bad URL is a 400 before anything is stored. Connect time
 * (`createGuardedFetch`): a hostname may resolve to a private address, and may resolve differently
 * later (DNS rebinding), so the address is checked in the socket's own `lookup`: the addresses that
 * pass the check are the ones the socket connects to, with no second resolution in between.
 */
export interface OutboundUrlOptions {
  /** Configuration OUTBOUND_ALLOW_PRIVATE_NETWORKS: lets private, loopback, ... addresses through (tests, on-premise). */
  allowPrivateNetworks: boolean;
  /** MCP server_url is HTTPS only (spec). */
  requireHttps?: boolean;
  /** How the messages name the URL, e.g. `metadata.webhook_url`; default `URL`. */
  field?: string;
}

export type OutboundUrlCheck = { ok: true; url: URL } | { ok: false; message: string };

export const MAX_OUTBOUND_URL_LENGTH = 2048;

/** The request-time check without throwing: for callers that record a refusal instead of raising it. */
export function checkOutboundUrl(raw: string, options: OutboundUrlOptions): OutboundUrlCheck {
  const field = options.field ?? 'URL';
  const refuse = (message: string): OutboundUrlCheck => ({ ok: false, message });
  if (raw.length > MAX_OUTBOUND_URL_LENGTH)
    return refuse(`${field} must be at most ${MAX_OUTBOUND_URL_LENGTH} characters.`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse(`${field} must be an absolute http or https URL.`);
  }
  if (options.requireHttps ? url.protocol !== 'https:' : url.protocol !== 'http:' && url.protocol !== 'https:') {
    return refuse(`${field} must use ${options.requireHttps ? 'https' : 'http or https'}.`);
  }
  // Credentials in a URL end up in logs and stored rows; the spec gives other fields for them.
  if (url.username || url.password) return refuse(`${field} must not contain credentials (user:password@).`);
  if (!options.allowPrivateNetworks) {
    // The WHATWG parser has already normalised 0x7f.1, 2130706433 and friends to dotted IPv4.
    const host = url.hostname.replace(/\.$/, '');
    if (host === 'localhost' || host.endsWith('.localhost')) {
      return refuse(
        `${field} must not point to localhost; private, loopback and link-local addresses are not allowed.`,
      );
    }
    const kind = blockedAddressKind(host);
    if (kind) {
      return refuse(
        `${field} points to a ${kind} address; private, loopback and link-local addresses are not allowed.`,
      );
    }
  }
  return { ok: true, url };
}

/** Request-time validation: the parsed URL, or a 400 `${area}.invalid_request` saying what is wrong. */
export function validateOutboundUrl(raw: string, options: OutboundUrlOptions, area: ErrorArea): URL {
  const result = checkOutboundUrl(raw, options);
  if (!result.ok) throw invalidRequest(area, result.message);
  return result.url;
}

const refusedMarker = Symbol.for('switchyard.OutboundAddressRefusedError');

/** A connection the guard would not make. Found in the `cause` chain of the fetch error. */
export class OutboundAddressRefusedError extends Error {
  override readonly name = 'OutboundAddressRefusedError';
  readonly [refusedMarker] = true;

  constructor(
    readonly host: string,
    readonly address: string,
    readonly kind: string,
  ) {
    super(
      host === address
        ? `refused to connect to ${address}: a ${kind} address`
        : `refused to connect to ${host}: it resolves to ${address}, a ${kind} address`,
    );
  }

  static isInstance(value: unknown): value is OutboundAddressRefusedError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[refusedMarker] === true;
  }

  /** The refusal behind an error (fetch wraps connection errors as `TypeError('fetch failed', {cause})`). */
  static find(error: unknown): OutboundAddressRefusedError | undefined {
    for (let current = error, depth = 0; current && depth < 8; depth++) {
      if (OutboundAddressRefusedError.isInstance(current)) return current;
      current = (current as { cause?: unknown }).cause;
    }
    return undefined;
  }
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

export interface GuardedFetchOptions {
  allowPrivateNetworks: boolean;
  /** Name resolution; default dns.lookup with all addresses. Tests pass one to simulate rebinding. */
  resolveHost?: (hostname: string) => Promise<ResolvedAddress[]>;
  /** Time to establish a connection (TCP + TLS); the caller's signal bounds the whole exchange. */
  connectTimeoutMs?: number;
}

/**
 * fetch with the connect-time guard. Redirects are never followed (`redirect: 'manual'` is forced):
 * a 3xx is returned as it is. `close()` drops every connection the function opened.
 */
export interface GuardedFetch {
  (input: string | URL, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

const defaultResolveHost = (hostname: string) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/**
 * undici (pinned, the same major Node 20 bundles) rather than the global fetch: its Agent accepts a
 * `connect` function and `connect.lookup`, and its own fetch is guaranteed to speak its dispatcher API.
 */
export function createGuardedFetch(options: GuardedFetchOptions): GuardedFetch {
  const resolveHost = options.resolveHost ?? defaultResolveHost;
  const lookup: net.LookupFunction = (hostname, lookupOptions, callback) => {
    resolveHost(hostname).then(
      (addresses) => {
        if (addresses.length === 0) {
          callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
          return;
        }
        if (!options.allowPrivateNetworks) {
          // Any private answer refuses the host: the socket may try every address it was given.
          for (const { address } of addresses) {
            const kind = blockedAddressKind(address);
            if (kind) return callback(new OutboundAddressRefusedError(hostname, address, kind), '', 0);
          }
        }
        const wanted =
          lookupOptions.family === 4 || lookupOptions.family === 6
            ? addresses.filter((entry) => entry.family === lookupOptions.family)
            : addresses;
        if (wanted.length === 0) {
          callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
        } else if (lookupOptions.all) {
          callback(null, wanted);
        } else {
          callback(null, wanted[0]!.address, wanted[0]!.family);
        }
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
  const connectSocket = buildConnector({ lookup, timeout: options.connectTimeoutMs ?? 10_000 });
  const agent = new Agent({
    connect(connectOptions, callback) {
      // An IP literal never goes through lookup, so it is checked here.
      const host = connectOptions.hostname.replace(/^\[(.*)\]$/, '$1');
      const kind = options.allowPrivateNetworks || net.isIP(host) === 0 ? undefined : blockedAddressKind(host);
      if (kind) {
        callback(new OutboundAddressRefusedError(host, host, kind), null);
        return;
      }
      connectSocket(connectOptions, callback);
    },
  });
  const guarded = (async (input: string | URL, init?: RequestInit) => {
    const undiciInit = {
      ...(init as UndiciRequestInit | undefined),
      redirect: 'manual',
      dispatcher: agent,
    } as UndiciRequestInit;
    return (await undiciFetch(input, undiciInit)) as unknown as Response;
  }) as GuardedFetch;
  guarded.close = () => agent.destroy();
  return guarded;
}
