import type { RecordedRequest } from './fake-script';
import {
  startFakeVendorServer,
  type FakeServerOptions,
  type FakeVendorServer,
  type ResolvedStep,
  type SseEvent,
  type VendorProtocol,
} from './fake-vendor-server';

/**
 * Gemini on loopback: `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`
 * (each `data:` chunk a whole GenerateContentResponse, CRLF-separated as Google sends them),
 * `:embedContent` and `:batchEmbedContents`. Function calls are `functionCall` parts (Gemini gives them no
 * id); usage is `usageMetadata`. Errors use `{error:{code, message, status}}`.
 */
export function startFakeGemini(options?: FakeServerOptions): Promise<FakeVendorServer> {
  return startFakeVendorServer(geminiProtocol, options);
}

const FINISH_REASONS = { stop: 'STOP', length: 'MAX_TOKENS', tool_calls: 'STOP', content_filter: 'SAFETY' } as const;

const geminiProtocol: VendorProtocol = {
  basePath: '/v1beta',
  openingEvents: 0,
  isStream: (path) => path.endsWith(':streamGenerateContent'),
  reply(request, step) {
    const match = /^\/v1beta\/models\/([^/]+):(\w+)$/.exec(request.path);
    if (request.method !== 'POST' || !match) return undefined;
    const model = match[1]!;
    switch (match[2]) {
      case 'generateContent':
        return { kind: 'json', body: generateContentResponse(step, model, { text: step.text, final: true }) };
      case 'streamGenerateContent':
        return { kind: 'sse', events: streamChunks(step, model), lineEnd: '\r\n' };
      case 'embedContent':
        return { kind: 'json', body: { embedding: { values: step.embedding } } };
      case 'batchEmbedContents': {
        const count = Array.isArray(request.body?.requests) ? request.body.requests.length : 1;
        return {
          kind: 'json',
          body: { embeddings: Array.from({ length: count }, () => ({ values: step.embedding })) },
        };
      }
      default:
        return undefined;
    }
  },
  errorBody(status, message, request: RecordedRequest) {
    const [statusName, defaultMessage] = geminiError(status, request);
    return { error: { code: status, message: message ?? defaultMessage, status: statusName } };
  },
};

function geminiError(status: number, request: RecordedRequest): [string, string] {
  switch (status) {
    case 400:
      return ['INVALID_ARGUMENT', 'Request contains an invalid argument.'];
    case 401:
      return [
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      ];
    case 403:
      return [
        'PERMISSION_DENIED',
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
      ];
    case 404:
      return [
        'NOT_FOUND',
        `${request.path.split('/').pop()?.split(':')[0] ?? 'model'} is not found for API version v1beta, or is not supported for generateContent.`,
      ];
    case 429:
      return ['RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details.'];
    case 503:
      return ['UNAVAILABLE', 'The model is overloaded. Please try again later.'];
    default:
      return [
        'INTERNAL',
        'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
      ];
  }
}

function generateContentResponse(step: ResolvedStep, model: string, part: { text?: string; final: boolean }) {
  const parts: unknown[] = [];
  if (part.text !== undefined) parts.push({ text: part.text });
  if (part.final) {
    for (const call of step.toolCalls)
      parts.push({ functionCall: { name: call.name, args: parseObject(call.arguments) } });
  }
  const outputTokens = part.final ? step.usage.outputTokens : 0;
  return {
    candidates: [
      {
        content: { parts, role: 'model' },
        ...(part.final ? { finishReason: FINISH_REASONS[step.finishReason] } : {}),
        index: 0,
      },
    ],
    usageMetadata: {
      promptTokenCount: step.usage.inputTokens,
      ...(part.final ? { candidatesTokenCount: outputTokens } : {}),
      totalTokenCount: step.usage.inputTokens + outputTokens,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: step.usage.inputTokens }],
    },
    modelVersion: model,
    responseId: 'fake-gemini-response',
  };
}

/** One chunk per text delta; function calls and the finish reason ride on the last chunk, as Gemini does. */
function streamChunks(step: ResolvedStep, model: string): SseEvent[] {
  const events: SseEvent[] = [];
  const chunks = step.textChunks;
  chunks.forEach((text, index) => {
    const final = index === chunks.length - 1;
    events.push({ data: JSON.stringify(generateContentResponse(step, model, { text, final })), textDelta: true });
  });
  if (chunks.length === 0) {
    events.push({ data: JSON.stringify(generateContentResponse(step, model, { final: true })) });
  }
  return events;
}

function parseObject(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}
