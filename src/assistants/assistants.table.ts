import type { Generated, Selectable } from 'kysely';
import type { CreatedAt, JsonDefault } from '../db/columns';

export interface AssistantsTable {
  id: Generated<number>;
  account_id: string;
  name: string;
  description: string | null;
  model: string;
  vendor: string;
  instructions: string | null;
  reasoning_effort: 'low' | 'medium' | 'high' | null;
  temperature: number | null;
  tools: JsonDefault<unknown[]>;
  tool_resources: JsonDefault<Record<string, unknown> | null>;
  metadata: JsonDefault<Record<string, string>>;
  created_at: CreatedAt;
}

export type AssistantRow = Selectable<AssistantsTable>;
