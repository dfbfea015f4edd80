import { APICallError, JSONParseError } from '@ai-sdk/provider';
import { ProviderError } from '../../src/providers/provider';
import { classifyProviderError, kindForStatus, parseRetryAfter } from '../../src/providers/shared/classify-error';
import { MAX_RETRY_AFTER_MS, retryDelayMs } from '../../src/providers/shared/retry';

/** The classification and backoff rules on their own; the adapter suites show them end to end. */

const context = { vendor: 'acme', apiKey: 'sk-live-0123456789SECRETKEY' };

function apiError(
  statusCode: number | undefined,
  headers: Record<string, string> = {},
  message = 'upstream said no',
  cause?: unknown,
) {
  return new APICallError({
    message,
    url: 'http://127.0.0.1/v1/x',
    requestBodyValues: { prompt: 'hi' },
    statusCode,
    responseHeaders: headers,
    cause,
  });
}

describe('classifyProviderError', () => {
  it.each([
    [400, 'bad_request'],
    [401, 'auth'],
    [403, 'auth'],
    [404, 'not_found'],
    [408, 'timeout'],
    [409, 'rate_limit'],
    [422, 'bad_request'],
    [429, 'rate_limit'],
    [500, 'server'],
    [503, 'server'],
    [529, 'server'],
  ])('maps HTTP %i to %s', (status, kind) => {
    expect(kindForStatus(status)).toBe(kind);
    expect(classifyProviderError(apiError(status), context)).toMatchObject({ kind, status, vendor: 'acme' });
  });

  it('keeps Retry-After and the vendor request id', () => {
    const error = classifyProviderError(apiError(429, { 'retry-after': '3', 'request-id': 'req_123' }), context);
    expect(error).toMatchObject({ kind: 'rate_limit', retryAfterMs: 3_000, vendorRequestId: 'req_123' });
    expect(error.isRetryable).toBe(true);
    expect(classifyProviderError(apiError(500, { 'x-request-id': 'req_9' }), context).vendorRequestId).toBe('req_9');
  });

  it('names the vendor and status, redacts keys from vendor text, and never quotes auth failures', () => {
    const badRequest = classifyProviderError(
      apiError(400, {}, `Key sk-live-0123456789SECRETKEY and sk-proj-abcdefghijkl are not allowed here`),
      context,
    );
    expect(badRequest.message).toMatch(/^acme answered HTTP 400: /);
    expect(badRequest.message).not.toContain('SECRETKEY');
    expect(badRequest.message).not.toContain('sk-proj-abcdefghijkl');
    const auth = classifyProviderError(apiError(401, {}, 'Incorrect API key provided: sk-li**********KEY'), context);
    expect(auth.message).toBe('acme answered HTTP 401');
  });

  it('classifies connection failures by their socket code', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    expect(classifyProviderError(apiError(undefined, {}, 'Cannot connect to API', refused), context).kind).toBe(
      'network',
    );
    const slow = Object.assign(new Error('connect ETIMEDOUT'), { code: 'ETIMEDOUT' });
    expect(classifyProviderError(apiError(undefined, {}, 'Cannot connect to API', slow), context).kind).toBe('timeout');
    const terminated = new TypeError('terminated', {
      cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
    });
    expect(classifyProviderError(terminated, context).kind).toBe('network');
  });

  it('lets our own stop decide between cancelled and timeout, whatever the raw error', () => {
    const abort = new DOMException('aborted', 'AbortError');
    expect(classifyProviderError(abort, { ...context, stopReason: 'cancelled' }).kind).toBe('cancelled');
    expect(classifyProviderError(abort, { ...context, stopReason: 'timeout' }).kind).toBe('timeout');
    expect(classifyProviderError(new TypeError('terminated'), { ...context, stopReason: 'cancelled' }).kind).toBe(
      'cancelled',
    );
  });

  it('classifies unreadable replies as malformed, a 200 included', () => {
    expect(
      classifyProviderError(new JSONParseError({ text: '{oops', cause: new SyntaxError('bad') }), context).kind,
    ).toBe('malformed');
    expect(classifyProviderError(apiError(200, {}, 'Invalid JSON response'), context).kind).toBe('malformed');
  });

  it('classifies vendor error events found inside a stream', () => {
    expect(classifyProviderError({ type: 'overloaded_error', message: 'Overloaded' }, context).kind).toBe('server');
    expect(classifyProviderError({ type: 'rate_limit_error', message: 'slow down' }, context).kind).toBe('rate_limit');
    expect(classifyProviderError({ message: 'x', statusCode: 429, code: 'rate_limit_exceeded' }, context).kind).toBe(
      'rate_limit',
    );
  });

  it('passes ProviderErrors through unchanged', () => {
    const original = new ProviderError({ vendor: 'acme', kind: 'bad_request', message: 'no' });
    expect(classifyProviderError(original, context)).toBe(original);
  });
});

describe('parseRetryAfter', () => {
  it('reads retry-after-ms, seconds and HTTP dates', () => {
    expect(parseRetryAfter({ 'retry-after-ms': '250', 'retry-after': '1' })).toBe(250);
    expect(parseRetryAfter({ 'retry-after': '2' })).toBe(2_000);
    const inThreeSeconds = new Date(Date.now() + 3_000).toUTCString();
    const fromDate = parseRetryAfter({ 'retry-after': inThreeSeconds })!;
    expect(fromDate).toBeGreaterThan(1_000);
    expect(fromDate).toBeLessThanOrEqual(3_000);
    expect(parseRetryAfter({ 'retry-after': 'soon' })).toBeUndefined();
    expect(parseRetryAfter({})).toBeUndefined();
  });
});

describe('retryDelayMs', () => {
  const server = new ProviderError({ vendor: 'acme', kind: 'server', message: 'x' });

  it('backs off exponentially from ~200 ms with equal jitter', () => {
    expect(retryDelayMs(server, 1, 3, 60_000, () => 0)).toBe(100);
    expect(retryDelayMs(server, 1, 3, 60_000, () => 1)).toBe(200);
    expect(retryDelayMs(server, 3, 3, 60_000, () => 0)).toBe(400);
    expect(retryDelayMs(server, 3, 3, 60_000, () => 1)).toBe(800);
  });

  it('gives up past maxRetries, on non-retryable kinds, and when the wait would outlast the deadline', () => {
    expect(retryDelayMs(server, 4, 3, 60_000)).toBeUndefined();
    expect(
      retryDelayMs(new ProviderError({ vendor: 'acme', kind: 'auth', message: 'x' }), 1, 3, 60_000),
    ).toBeUndefined();
    expect(retryDelayMs(server, 1, 3, 50, () => 1)).toBeUndefined();
  });

  it('waits exactly what Retry-After asks, up to the cap', () => {
    const asked = (retryAfterMs: number) =>
      new ProviderError({ vendor: 'acme', kind: 'rate_limit', message: 'x', retryAfterMs });
    expect(retryDelayMs(asked(1_500), 1, 3, 60_000)).toBe(1_500);
    expect(retryDelayMs(asked(MAX_RETRY_AFTER_MS + 1), 1, 3, 600_000)).toBeUndefined();
  });
});
