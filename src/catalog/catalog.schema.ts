import { z } from 'zod';
import type { AdapterKind, ModelType } from './catalog-types';

/**
 * The catalog file (catalog.yaml). Strict objects, so a misspelt field (`fuction_calling`) is an error
 * instead of a silently false capability. Cross-references between sections are checked in
 * catalog.loader.ts, which reports every problem with its path and line.
 */
export const modelTypeSchema = z.enum(['llm', 'tts', 'stt', 'tti', 'ttv', 'embed'] satisfies ModelType[]);

const adapterSchema = z.enum([
  'openai',
  'anthropic',
  'google',
  'openai-compatible',
  'deepgram',
  'dev',
] satisfies AdapterKind[]);

/** Codes appear in URL paths (/v2/models/{code}), so no slashes, spaces or query characters. */
const codeSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, 'must be 1-128 letters, digits or . _ : - (it is used in URL paths)');

/** config.ts collects exactly the *_API_KEY and *_BASE_URL variables into providers.settings. */
const settingName = (suffix: 'API_KEY' | 'BASE_URL') =>
  z
    .string()
    .regex(new RegExp(`^[A-Z][A-Z0-9_]*_${suffix}$`), `must be an environment variable name ending in _${suffix}`);

const vendorSchema = z
  .strictObject({
    code: codeSchema,
    name: z.string().trim().min(1),
    model_types: z.array(modelTypeSchema).min(1),
    adapter: adapterSchema,
    api_key_env: settingName('API_KEY').optional(),
    base_url_env: settingName('BASE_URL').optional(),
    default_base_url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    requires_key: z.boolean().default(true),
  })
  .superRefine((vendor, ctx) => {
    if (vendor.adapter === 'dev') {
      for (const field of ['api_key_env', 'base_url_env', 'default_base_url'] as const) {
        if (vendor[field] !== undefined)
          ctx.addIssue({ code: 'custom', path: [field], message: 'the built-in dev adapter takes no settings' });
      }
      return;
    }
    if (vendor.requires_key && !vendor.api_key_env) {
      ctx.addIssue({ code: 'custom', path: ['api_key_env'], message: 'required when requires_key is true' });
    }
    if (!vendor.requires_key) {
      // "Configured" means a setting is present; a keyless vendor is configured by its base URL alone.
      if (!vendor.base_url_env)
        ctx.addIssue({ code: 'custom', path: ['base_url_env'], message: 'required when requires_key is false' });
      if (vendor.default_base_url) {
        ctx.addIssue({
          code: 'custom',
          path: ['default_base_url'],
          message: 'not allowed when requires_key is false: the vendor is configured by base_url_env',
        });
      }
    }
    if (vendor.adapter === 'openai-compatible' && !vendor.base_url_env && !vendor.default_base_url) {
      ctx.addIssue({
        code: 'custom',
        path: ['base_url_env'],
        message: 'an openai-compatible vendor needs base_url_env or default_base_url',
      });
    }
  });

const protocolSchema = z.enum(['responses', 'chat_completions']);

const modelSchema = z
  .strictObject({
    code: codeSchema.refine((code) => code !== 'prices', 'is reserved (GET /v2/models/prices)'),
    name: z.string().trim().min(1),
    vendor: codeSchema,
    upstream_id: z.string().trim().min(1),
    type: modelTypeSchema,
    vision: z.boolean().default(false),
    streaming: z.boolean().default(false),
    function_calling: z.boolean().default(false),
    structured_outputs: z.boolean().default(false),
    max_output: z.int().min(0),
    context_window: z.int().min(0),
    default: z.boolean().default(false),
    web_visible: z.boolean().default(true),
    protocols: z.array(protocolSchema).default([]),
    /** tts: the voices a request may name, and the longest text (characters) it takes. */
    voices: z.array(z.string().trim().min(1).max(64)).min(1).optional(),
    max_input_characters: z.int().positive().optional(),
    /** stt: transcribes as a durable job (check/result, callback) instead of within the request. */
    asynchronous: z.boolean().optional(),
  })
  .superRefine((model, ctx) => {
    const only = (field: 'voices' | 'max_input_characters' | 'asynchronous', type: string) => {
      if (model[field] !== undefined && model.type !== type)
        ctx.addIssue({ code: 'custom', path: [field], message: `only a ${type} model has ${field}` });
    };
    only('voices', 'tts');
    only('max_input_characters', 'tts');
    only('asynchronous', 'stt');
    if (model.type === 'tts') {
      if (!model.voices)
        ctx.addIssue({ code: 'custom', path: ['voices'], message: 'a tts model lists the voices it speaks' });
      if (!model.max_input_characters)
        ctx.addIssue({
          code: 'custom',
          path: ['max_input_characters'],
          message: 'a tts model states the longest text it takes',
        });
      if (model.voices && new Set(model.voices).size !== model.voices.length)
        ctx.addIssue({ code: 'custom', path: ['voices'], message: 'lists a voice twice' });
    }
    if (model.type !== 'llm' && model.protocols.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['protocols'],
        message: 'only llm models are served through responses or chat_completions',
      });
    }
    if (new Set(model.protocols).size !== model.protocols.length) {
      ctx.addIssue({ code: 'custom', path: ['protocols'], message: 'lists a protocol twice' });
    }
  });

const priceSchema = z.strictObject({
  unit: z.enum(['tokens', 'seconds', 'characters']),
  count: z.int().positive(),
  input: z.number().min(0).max(1e9),
  output: z.number().min(0).max(1e9),
});

/** The kinds of model a route can stand for (issue 36): the ones requests name a model of. */
export const routeTypes = ['llm', 'embed', 'tts', 'stt'] as const;

/**
 * A route (api-decisions 32): an alias code usable wherever a model code is, served by its targets. `fallback`
 * tries them in order; `weighted` sends each request to one target drawn by `weight` and keeps the others, in
 * file order, as its fallbacks. A target names a model or another route of the same type.
 */
export const routeSchema = z
  .strictObject({
    code: codeSchema.refine((code) => code !== 'prices', 'is reserved (GET /v2/models/prices)'),
    name: z.string().trim().min(1).optional(),
    type: z.enum(routeTypes),
    strategy: z.enum(['fallback', 'weighted']).default('fallback'),
    targets: z
      .array(z.strictObject({ model: codeSchema, weight: z.number().min(0).max(1e6).optional() }))
      .min(1, 'a route needs at least one target'),
  })
  .superRefine((route, ctx) => {
    const seen = new Set<string>();
    route.targets.forEach((target, index) => {
      if (seen.has(target.model))
        ctx.addIssue({ code: 'custom', path: ['targets', index, 'model'], message: `lists "${target.model}" twice` });
      seen.add(target.model);
      if (route.strategy === 'fallback' && target.weight !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['targets', index, 'weight'],
          message: 'only a weighted route gives its targets weights',
        });
    });
    if (route.strategy === 'weighted' && !route.targets.some((target) => (target.weight ?? 0) > 0))
      ctx.addIssue({ code: 'custom', path: ['targets'], message: 'a weighted route gives a target a weight above 0' });
  });

export const catalogFileSchema = z.strictObject({
  vendors: z.array(vendorSchema).min(1),
  models: z.array(modelSchema),
  prices: z.record(z.string(), priceSchema),
  routes: z.array(routeSchema).default([]),
});

export type CatalogFile = z.output<typeof catalogFileSchema>;
export type CatalogFileVendor = CatalogFile['vendors'][number];
export type CatalogFileModel = CatalogFile['models'][number];
export type CatalogFileRoute = CatalogFile['routes'][number];

/** The models and vendors listings' `type` filter (src/catalog/catalog.routes.ts). */
const typeFilter = (types: readonly string[]) => ({ error: () => `must be one of ${types.join(', ')}` });
export const modelFilterSchema = z.object({
  type: z.enum(modelTypeSchema.options, typeFilter(modelTypeSchema.options)).optional(),
});
/** api-decisions 1: the vendor listing does not support type=ttv (and its error does not offer it). */
const vendorTypes = modelTypeSchema.options.filter((type) => type !== 'ttv');
export const vendorFilterSchema = z.object({
  type: z
    .enum(modelTypeSchema.options, typeFilter(vendorTypes))
    .refine((type) => type !== 'ttv', 'the vendor listing does not support type ttv')
    .optional(),
});
