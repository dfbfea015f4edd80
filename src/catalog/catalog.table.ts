import type { Generated, Selectable } from 'kysely';
import type { Json } from '../db/columns';

export type ModelType = 'llm' | 'tts' | 'stt' | 'tti' | 'ttv' | 'embed';

export interface CatalogVendorsTable {
  code: string;
  name: string;
  model_types: Json<ModelType[]>;
  position: number;
}

export interface CatalogModelsTable {
  code: string;
  vendor_code: string;
  upstream_id: string;
  name: string;
  type: ModelType;
  vision: boolean;
  streaming: boolean;
  function_calling: boolean;
  structured_outputs: boolean;
  max_output: number;
  context_window: number;
  is_default: boolean;
  web_visible: boolean;
  protocols: Json<string[]>;
  /** tts: `{voices, max_input_characters}`; stt: `{asynchronous}`; null for other types. */
  audio: Json<Record<string, unknown> | null>;
  position: number;
}

export interface CatalogPricesTable {
  model_code: string;
  unit: 'tokens' | 'seconds' | 'characters';
  count: number;
  input: number;
  output: number;
}

/** A route of the catalog (api-decisions 32): its targets, models or routes, in order. */
export interface CatalogRoutesTable {
  code: string;
  name: string;
  type: ModelType;
  strategy: 'fallback' | 'weighted';
  targets: Json<{ model: string; weight?: number }[]>;
  position: number;
  /** `catalog`: the catalog file's, replaced by each start's sync; `admin`: an operator's, kept (api-decisions 34). */
  origin: Generated<'catalog' | 'admin'>;
}

export type CatalogVendorRow = Selectable<CatalogVendorsTable>;
export type CatalogRouteRow = Selectable<CatalogRoutesTable>;
export type CatalogModelRow = Selectable<CatalogModelsTable>;
export type CatalogPriceRow = Selectable<CatalogPricesTable>;
