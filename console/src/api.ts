import { authHeaders, type Session } from './session';

/** An error reply of the service, in the spec's envelope `{error: {code, message}}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

type Query = Record<string, string | number | boolean | undefined | null>;

export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query))
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

async function errorOf(reply: Response): Promise<ApiError> {
  let code = 'request.failed';
  let message = `${reply.status} ${reply.statusText}`;
  try {
    const body = (await reply.json()) as { error?: { code?: string; message?: string } };
    if (body.error?.message) message = body.error.message;
    if (body.error?.code) code = body.error.code;
  } catch {
    // Not JSON (a proxy's page): the status line says enough.
  }
  return new ApiError(reply.status, code, message);
}

/** A client of the service's API as one session: JSON in and out, errors as ApiError. */
export function createApi(session: Session) {
  /** The reply once its status is known to be 2xx; the body is left to the caller (JSON, or Server-Sent Events). */
  async function send(
    method: string,
    path: string,
    accept: string,
    options: { query?: Query; body?: unknown; signal?: AbortSignal },
  ): Promise<Response> {
    const headers: Record<string, string> = { ...authHeaders(session), Accept: accept };
    if (options.body !== undefined) headers['Content-Type'] = 'application/json';
    const reply = await fetch(withQuery(path, options.query), {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
      credentials: 'omit',
      cache: 'no-store',
    });
    if (!reply.ok) throw await errorOf(reply);
    return reply;
  }

  const json = async <T>(
    method: string,
    path: string,
    options: { query?: Query; body?: unknown; signal?: AbortSignal },
  ) => (await (await send(method, path, 'application/json', options)).json()) as T;

  return {
    get: <T>(path: string, query?: Query, signal?: AbortSignal) => json<T>('GET', path, { query, signal }),
    post: <T>(path: string, body?: unknown) => json<T>('POST', path, { body: body ?? {} }),
    /** A streamed call: the raw reply, its body Server-Sent Events. */
    stream: (method: string, path: string, options: { query?: Query; body?: unknown; signal?: AbortSignal } = {}) =>
      send(method, path, 'text/event-stream', options),
  };
}

export type Api = ReturnType<typeof createApi>;

/** Calls of the admin API with the operator's token (the account picker). */
export async function adminGet<T>(token: string, path: string, query?: Query): Promise<T> {
  const reply = await fetch(withQuery(path, query), {
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
    credentials: 'omit',
    cache: 'no-store',
  });
  if (!reply.ok) throw await errorOf(reply);
  return (await reply.json()) as T;
}
