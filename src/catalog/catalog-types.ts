import type { ModelType } from './catalog.table';

export type { ModelType };
export const MODEL_TYPES: readonly ModelType[] = ['llm', 'tts', 'stt', 'tti', 'ttv', 'embed'];

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
}

export interface CatalogVendor {
  code: string;
  name: string;
  modelTypes: ModelType[];
}
