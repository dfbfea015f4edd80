import fs from 'node:fs';
import { LineCounter, parseDocument, type Document } from 'yaml';
import { ConfigError } from '../config';
import type { AudioCapabilities, CatalogModel, CatalogRoute, CatalogVendor, Price } from './catalog-types';
import { catalogFileSchema, type CatalogFile, type CatalogFileRoute } from './catalog.schema';

/**
 * A bad catalog stops start-up like a bad environment variable does (main.ts prints ConfigErrors
 * without a stack), naming the file, the line and the field.
 */
export class CatalogError extends ConfigError {}

/** The validated catalog, in file order, with each model's price attached. */
export interface CatalogDefinition {
  path: string;
  vendors: CatalogVendor[];
  models: CatalogModel[];
  /** File order. */
  routes: CatalogRoute[];
}

interface Issue {
  path: PropertyKey[];
  message: string;
}

export function loadCatalogFile(filePath: string): CatalogDefinition {
  let text: string;
  try {
    text = fs.readFileSync(filePath, 'utf8');
  } catch (error) {
    throw new CatalogError(
      `Cannot read the catalog file ${filePath} (set CATALOG_PATH to change it): ${(error as Error).message}`,
    );
  }
  return parseCatalog(text, filePath);
}

/** Parses and validates catalog text; `source` names it in errors. */
export function parseCatalog(text: string, source: string): CatalogDefinition {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (document.errors.length > 0) {
    const problems = document.errors.slice(0, 5).map((error) => {
      const { line } = lineCounter.linePos(error.pos[0]);
      return `  line ${line}: ${error.message.split('\n')[0]}`;
    });
    throw new CatalogError(`Invalid catalog file ${source}: YAML syntax error\n${problems.join('\n')}`);
  }
  const raw: unknown = document.toJS();
  const parsed = catalogFileSchema.safeParse(raw ?? {});
  const issues: Issue[] = parsed.success ? crossCheck(parsed.data) : parsed.error.issues;
  if (issues.length > 0) {
    const problems = issues.slice(0, 10).map((issue) => `  ${describe(issue, raw, document, lineCounter)}`);
    const more = issues.length > 10 ? `\n  ... and ${issues.length - 10} more` : '';
    throw new CatalogError(`Invalid catalog file ${source}:\n${problems.join('\n')}${more}`);
  }
  return toDefinition(parsed.data!, source);
}

/** Rules between sections: references resolve, types fit the vendor, every model is priced exactly once. */
function crossCheck(file: CatalogFile): Issue[] {
  const issues: Issue[] = [];
  const vendors = new Map<string, CatalogFile['vendors'][number]>();
  file.vendors.forEach((vendor, index) => {
    if (vendors.has(vendor.code))
      issues.push({ path: ['vendors', index, 'code'], message: `duplicate vendor code "${vendor.code}"` });
    vendors.set(vendor.code, vendor);
  });
  const models = new Set<string>();
  const defaults = new Map<string, string>();
  file.models.forEach((model, index) => {
    const at = (field: string) => ['models', index, field];
    if (models.has(model.code)) issues.push({ path: at('code'), message: `duplicate model code "${model.code}"` });
    models.add(model.code);
    const vendor = vendors.get(model.vendor);
    if (!vendor) {
      issues.push({ path: at('vendor'), message: `unknown vendor "${model.vendor}" (not under vendors)` });
    } else if (!vendor.model_types.includes(model.type)) {
      issues.push({
        path: at('type'),
        message: `"${model.type}" is not among the model_types of vendor "${vendor.code}" (${vendor.model_types.join(', ')})`,
      });
    }
    if (model.default) {
      const other = defaults.get(model.type);
      if (other) issues.push({ path: at('default'), message: `"${other}" is already the default ${model.type} model` });
      else defaults.set(model.type, model.code);
    }
    const price = file.prices[model.code];
    if (!price) {
      issues.push({
        path: ['models', index],
        message: `model "${model.code}" has no entry under prices (use input: 0, output: 0 for a free model)`,
      });
    } else if ((model.type === 'llm' || model.type === 'embed') && price.unit !== 'tokens') {
      issues.push({ path: ['prices', model.code, 'unit'], message: `a ${model.type} model is priced in tokens` });
    } else if (model.type === 'tts' && price.unit !== 'characters') {
      issues.push({
        path: ['prices', model.code, 'unit'],
        message: 'a tts model is priced in characters (of the text spoken)',
      });
    } else if (model.type === 'stt' && price.unit !== 'seconds') {
      issues.push({
        path: ['prices', model.code, 'unit'],
        message: 'an stt model is priced in seconds (of the audio transcribed)',
      });
    }
  });
  for (const code of Object.keys(file.prices)) {
    if (!models.has(code))
      issues.push({ path: ['prices', code], message: `price for unknown model "${code}" (not under models)` });
  }
  issues.push(...routeIssues(file));
  return issues;
}

/** What routeIssues reads of a route (the file's, or one stored by an operator). */
type RouteShape = Pick<CatalogRoute, 'code' | 'type' | 'targets'>;

/**
 * Routes: codes unique among models and routes, targets that exist and are of the route's type, no cycle. Each
 * message names its route. The loader checks the file's with it; the admin API an operator's change (route-admin.ts).
 */
export function routeIssues(file: { models: { code: string; type: string }[]; routes: RouteShape[] }): Issue[] {
  const issues: Issue[] = [];
  const typeOf = new Map<string, string>(file.models.map((model) => [model.code, model.type]));
  const routes = new Map<string, RouteShape>();
  file.routes.forEach((route, index) => {
    if (routes.has(route.code))
      issues.push({ path: ['routes', index, 'code'], message: `duplicate route code "${route.code}"` });
    else if (typeOf.has(route.code))
      issues.push({ path: ['routes', index, 'code'], message: `route "${route.code}" has the code of a model` });
    else typeOf.set(route.code, route.type);
    routes.set(route.code, route);
  });
  file.routes.forEach((route, index) => {
    route.targets.forEach((target, at) => {
      const type = typeOf.get(target.model);
      const path = ['routes', index, 'targets', at, 'model'];
      if (type === undefined) {
        issues.push({
          path,
          message: `route "${route.code}": unknown target "${target.model}" (not under models or routes)`,
        });
      } else if (type !== route.type) {
        issues.push({
          path,
          message: `route "${route.code}": target "${target.model}" is a ${type} model; the route is ${route.type}`,
        });
      }
    });
  });
  // A route reaching itself through its targets could never be served. Depth-first from each route.
  const visit = (code: string, trail: string[]): string[] | undefined => {
    if (trail.includes(code)) return [...trail.slice(trail.indexOf(code)), code];
    for (const target of routes.get(code)?.targets ?? []) {
      const cycle = visit(target.model, [...trail, code]);
      if (cycle) return cycle;
    }
    return undefined;
  };
  file.routes.forEach((route, index) => {
    const cycle = visit(route.code, []);
    if (cycle?.[0] === route.code)
      issues.push({
        path: ['routes', index, 'targets'],
        message: `route "${route.code}" makes a cycle: ${cycle.join(' → ')}`,
      });
  });
  return issues;
}

function toDefinition(file: CatalogFile, source: string): CatalogDefinition {
  const vendors: CatalogVendor[] = file.vendors.map((vendor) => ({
    code: vendor.code,
    name: vendor.name,
    modelTypes: [...new Set(vendor.model_types)],
    adapter: vendor.adapter,
    apiKeyEnv: vendor.api_key_env,
    baseUrlEnv: vendor.base_url_env,
    defaultBaseUrl: vendor.default_base_url,
    requiresKey: vendor.adapter === 'dev' ? false : vendor.requires_key,
  }));
  const models: CatalogModel[] = file.models.map((model) => {
    const price: Price | null = file.prices[model.code] ? { ...file.prices[model.code] } : null;
    return {
      code: model.code,
      vendor: model.vendor,
      upstreamId: model.upstream_id,
      name: model.name,
      type: model.type,
      vision: model.vision,
      streaming: model.streaming,
      functionCalling: model.function_calling,
      structuredOutputs: model.structured_outputs,
      maxOutput: model.max_output,
      contextWindow: model.context_window,
      isDefault: model.default,
      webVisible: model.web_visible,
      protocols: [...model.protocols],
      price,
      audio: audioOf(model),
    };
  });
  return { path: source, vendors, models, routes: file.routes.map(toCatalogRoute) };
}

/** A validated route of the file (or of an admin request, which has its shape) as the catalog serves it. */
export function toCatalogRoute(route: CatalogFileRoute): CatalogRoute {
  return {
    code: route.code,
    name: route.name ?? route.code,
    type: route.type,
    strategy: route.strategy,
    targets: route.targets.map((target) => ({ ...target })),
  };
}

function audioOf(model: CatalogFile['models'][number]): AudioCapabilities | null {
  if (model.type === 'tts')
    return { voices: [...(model.voices ?? [])], maxInputCharacters: model.max_input_characters ?? 0 };
  if (model.type === 'stt') return { asynchronous: model.asynchronous ?? false };
  return null;
}

/** "line 42, models[3] (gpt-4.1).max_output: Invalid input: expected int, received string" */
function describe(issue: Issue, raw: unknown, document: Document, lineCounter: LineCounter): string {
  let where = '';
  let node: unknown = raw;
  for (const key of issue.path) {
    node = node && typeof node === 'object' ? (node as Record<PropertyKey, unknown>)[key] : undefined;
    if (typeof key === 'number') {
      where += `[${key}]`;
      const code = (node as { code?: unknown } | undefined)?.code;
      if (typeof code === 'string') where += ` (${code})`;
    } else {
      where += where ? `.${String(key)}` : String(key);
    }
  }
  const line = lineOf(issue.path, document, lineCounter);
  return `${line ? `line ${line}, ` : ''}${where || '(top level)'}: ${issue.message}`;
}

/** The line of the deepest existing node on the path (a missing field points at its parent). */
function lineOf(path: PropertyKey[], document: Document, lineCounter: LineCounter): number | undefined {
  for (let length = path.length; length >= 0; length--) {
    const keys = path.slice(0, length).map((key) => (typeof key === 'symbol' ? String(key) : key));
    const node = length === 0 ? document.contents : document.getIn(keys, true);
    const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
    if (range) return lineCounter.linePos(range[0]).line;
  }
  return undefined;
}
