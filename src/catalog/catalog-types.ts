import type { ModelType } from './catalog.table';

export type { ModelType };

/** Which adapter family speaks to a vendor; src/providers/registry.ts maps each to its factory. */
export type AdapterKind = 'openai' | 'anthropic' | 'google' | 'openai-compatible' | 'deepgram' | 'dev';

/** The service protocols a model can be used through (model record `protocols`). */
export type ModelProtocol = 'responses' | 'chat_completions';

export interface Price {
  unit: 'tokens' | 'seconds' | 'characters';
  count: number;
  /** Kopecks per `count` units. */
  input: number;
  output: number;
}

export interface CatalogModel {
  code: string;
  vendor: string;
  /** The id the vendor's API knows the model by. */
  upstreamId: string;
  name: string;
  type: ModelType;
  vision: boolean;
  streaming: boolean;
  functionCalling: boolean;
  structuredOutputs: boolean;
  maxOutput: number;
  contextWindow: number;
  isDefault: boolean;
  webVisible: boolean;
  protocols: string[];
  price: Price | null;
  /** What a tts or stt model adds to its record; null for other types. */
  audio: AudioCapabilities | null;
  /**
   * Set on a route's model record (an alias, api-decisions 32): its capabilities are what its available targets
   * share, its price the dearest target's (what holds are placed at), and it is served by one of `targets`.
   */
  route?: CatalogRoute;
}

export type RouteStrategy = 'fallback' | 'weighted';

/** A route of the catalog (`routes:`): an alias code served by its targets, models or other routes of its type. */
export interface CatalogRoute {
  code: string;
  name: string;
  type: ModelType;
  strategy: RouteStrategy;
  targets: { model: string; weight?: number }[];
}

/** A route as the admin API shows it (api-decisions 34): where it comes from, and whether this process serves it. */
export interface AdminRoute extends CatalogRoute {
  origin: 'catalog' | 'admin';
  /** False for an operator's route that no longer fits the catalog file (it is logged at start; fix or delete it). */
  served: boolean;
}

/**
 * tts: the voices it speaks and the longest text it takes (characters); stt: whether it transcribes
 * asynchronously (a job with check/result and a callback) instead of in the request.
 */
export type AudioCapabilities = { voices: string[]; maxInputCharacters: number } | { asynchronous: boolean };

export interface CatalogVendor {
  code: string;
  name: string;
  modelTypes: ModelType[];
  adapter: AdapterKind;
  /** Settings variable holding the vendor key (e.g. OPENAI_API_KEY). Absent for `dev`. */
  apiKeyEnv?: string;
  /** Settings variable overriding the base URL (e.g. OPENAI_BASE_URL). */
  baseUrlEnv?: string;
  /** Base URL used when `baseUrlEnv` is not set. */
  defaultBaseUrl?: string;
  /** False for local servers (Ollama, vLLM): configured by their base URL alone. */
  requiresKey: boolean;
}

/** Whether a vendor (and so its models) can be called; `missing` names the setting to add. */
export interface Availability {
  available: boolean;
  missing?: string;
}
