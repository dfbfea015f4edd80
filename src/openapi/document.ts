import { z } from 'zod';
import { idempotencyKeySchema } from '../http/idempotency-key';
import type { Operation } from './operations';
import { errorEnvelope, openAIErrorBody } from './reply-schemas';

type JsonSchema = Record<string, unknown>;

/**
 * The OpenAPI 3.1 document of `operations`, from their zod schemas (zod 4's JSON Schema, draft 2020-12, which
 * OpenAPI 3.1 uses as is). Request schemas are converted as input (what a client sends), replies as output.
 * Named schemas (`.meta({id})`) become components, referenced wherever they recur.
 */
export function buildOpenApiDocument(operations: Operation[], info: { version: string }) {
  const components: Record<string, JsonSchema> = {};

  /** A zod schema as JSON Schema, its named parts moved to components (and itself, when it is named). */
  function schemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
    const json = z.toJSONSchema(schema, {
      target: 'draft-2020-12',
      io,
      unrepresentable: 'any',
      reused: 'inline',
    }) as JsonSchema;
    const { $schema: _dialect, $defs, ...rest } = json;
    for (const [name, definition] of Object.entries(($defs ?? {}) as Record<string, JsonSchema>))
      components[name] ??= relink(definition);
    const body = relink(rest);
    const id = typeof body.id === 'string' ? body.id : undefined;
    if (!id) return body;
    const { id: _id, ...named } = body;
    components[id] ??= named;
    return { $ref: `#/components/schemas/${id}` };
  }

  const errorSchemas = { spec: schemaOf(errorEnvelope, 'output'), openAI: schemaOf(openAIErrorBody, 'output') };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const operation of operations) {
    (paths[operation.path] ??= {})[operation.method] = operationObject(operation);
  }

  function operationObject(operation: Operation) {
    const parameters: unknown[] = [...operation.path.matchAll(/\{(\w+)\}/g)].map((match) => ({
      name: match[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    if (operation.query) {
      const query = schemaOf(operation.query, 'input');
      const required = new Set((query.required as string[] | undefined) ?? []);
      for (const [name, schema] of Object.entries((query.properties ?? {}) as Record<string, JsonSchema>)) {
        parameters.push({ name, in: 'query', required: required.has(name), schema });
      }
    }
    if (operation.idempotencyKey) {
      parameters.push({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description:
          'A retry with the same key and body gets the stored reply (and is billed once); the same key with another body is a 409',
        schema: schemaOf(idempotencyKeySchema, 'input'),
      });
    }

    const content: Record<string, unknown> = {};
    if (operation.reply) content['application/json'] = { schema: schemaOf(operation.reply, 'output') };
    for (const alternative of operation.alternatives ?? []) {
      content[alternative.mediaType] = alternative.schema ? { schema: schemaOf(alternative.schema, 'output') } : {};
    }
    const descriptions = [
      operation.reply ? 'The result' : undefined,
      ...(operation.alternatives ?? []).map((alternative) => alternative.description),
    ].filter(Boolean);
    const responses: Record<string, unknown> = {
      [String(operation.replyStatus ?? 200)]: { description: descriptions.join('; ') || 'OK', content },
    };
    const error = (description: string) => ({
      description,
      content: { 'application/json': { schema: operation.openAIErrors ? errorSchemas.openAI : errorSchemas.spec } },
    });
    if (operation.security !== 'none') {
      responses['400'] = error(
        "Invalid request (the message names the field), or not possible in the resource's state",
      );
      responses['401'] = error('Missing or invalid key or token');
    }
    if (operation.security === 'key') {
      responses['403'] = error('The key is disabled, or the account may not use this feature');
      if (operation.path.includes('{'))
        responses['404'] = error("Not found (another account's resources are not found either)");
      if (operation.method === 'post')
        responses['402'] = error('The available balance cannot pay for it (organization.payment_required)');
      responses['429'] = {
        ...error('An account limit was reached'),
        headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'Seconds' } },
      };
    }
    for (const [status, description] of Object.entries(operation.errors ?? {})) responses[status] = error(description);
    if (operation.idempotencyKey)
      responses['409'] = error('The Idempotency-Key was used with another body, or its first request is still running');
    responses['500'] = error('Unexpected failure; the message names the request id');

    const security =
      operation.security === 'key'
        ? [{ apiKey: [] }, { bearerKey: [] }]
        : operation.security === 'admin'
          ? [{ adminToken: [] }]
          : operation.security === 'metrics'
            ? [{ adminToken: [] }, { metricsToken: [] }]
            : [];
    const requestBody = operation.body
      ? operation.bodyType === 'multipart'
        ? {
            required: true,
            content: {
              'multipart/form-data': {
                schema: { ...mergeFile(schemaOf(operation.body, 'input')) },
              },
            },
          }
        : {
            required: !operation.bodyOptional,
            content: { 'application/json': { schema: schemaOf(operation.body, 'input') } },
          }
      : undefined;
    return {
      operationId: operationId(operation),
      tags: [operation.tag],
      summary: operation.summary,
      ...(operation.description ? { description: operation.description } : {}),
      security,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses,
    };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Switchyard',
      version: info.version,
      description:
        'One API over many model vendors: Responses (background, synchronous, streamed), conversations, assistants, threads and Runs, embeddings, speech, a kopeck ledger, and an OpenAI-compatible surface under /openai/v1. Money is in kopecks.',
    },
    servers: [{ url: '/' }],
    tags: [...new Set(operations.map((operation) => operation.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Auth-Token',
          description: 'The API key (a JWT issued by an operator or the account area)',
        },
        bearerKey: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'The same API key as `Authorization: Bearer` (as the OpenAI SDK sends it); X-Auth-Token wins when both are sent. An operator acts for an account with the admin token here plus the header `X-Switchyard-Account: <account id>`.',
        },
        adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN (GET /metrics only)' },
      },
    },
  };
}

/** `#/$defs/X` (zod's) → `#/components/schemas/X`, everywhere in a schema. */
function relink(schema: JsonSchema): JsonSchema {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema;
}

/** A multipart body: its form fields and the `file` part. */
function mergeFile(fields: JsonSchema): JsonSchema {
  return {
    ...fields,
    properties: {
      ...((fields.properties as JsonSchema | undefined) ?? {}),
      file: { type: 'string', contentMediaType: 'application/octet-stream', description: 'The audio' },
    },
    required: [...(((fields.required as string[] | undefined) ?? []) as string[]), 'file'],
  };
}

/** `post /v2/responses/{id}/cancel` → `post_v2_responses_id_cancel`. */
function operationId(operation: Operation): string {
  return `${operation.method}${operation.path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+/g, '_')}`.replace(/_+$/, '');
}
