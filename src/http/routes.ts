import type Router from '@koa/router';
import { assistantsRoutes, type AssistantsRoutesDeps } from '../assistants/assistants.routes';
import { audioRoutes, type AudioRoutesDeps } from '../audio/audio.routes';
import { catalogRoutes, type CatalogRoutesDeps } from '../catalog/catalog.routes';
import { v1Routes, type V1RoutesDeps } from '../catalog/v1.routes';
import { chatRoutes, type ChatRoutesDeps } from '../chat/chat.routes';
import { conversationsRoutes, type ConversationsRoutesDeps } from '../conversations/conversations.routes';
import { embeddingsRoutes, type EmbeddingsRoutesDeps } from '../embeddings/embeddings.routes';
import { openAIAudioRoutes } from '../openai/openai-audio';
import {
  openAIConversationsRoutes,
  openAIResponsesRoutes,
  openAIRoutes,
  type OpenAIRoutesDeps,
} from '../openai/openai.routes';
import { organizationRoutes, type OrganizationRoutesDeps } from '../organization/organization.routes';
import { responsesRoutes, type ResponsesRoutesDeps } from '../responses/responses.routes';
import { runsRoutes, type RunsRoutesDeps } from '../threads/runs.routes';
import { threadsRoutes, type ThreadsRoutesDeps } from '../threads/threads.routes';
import { webhookSigningRoutes, type WebhookSigningRoutesDeps } from '../webhooks/webhook-signing.routes';

/** What the public route modules need together: each declares its own slice. */
export type PublicRoutesDeps = OrganizationRoutesDeps &
  EmbeddingsRoutesDeps &
  ChatRoutesDeps &
  ConversationsRoutesDeps &
  AssistantsRoutesDeps &
  CatalogRoutesDeps &
  V1RoutesDeps &
  ResponsesRoutesDeps &
  RunsRoutesDeps &
  ThreadsRoutesDeps &
  AudioRoutesDeps &
  OpenAIRoutesDeps &
  WebhookSigningRoutesDeps;

/**
 * Every public route module, mounted behind X-Auth-Token. Each slice adds its `*Routes(deps)` here.
 */
export const publicRouteModules: Array<(deps: PublicRoutesDeps) => Router> = [
  organizationRoutes,
  webhookSigningRoutes,
  embeddingsRoutes,
  chatRoutes,
  conversationsRoutes,
  assistantsRoutes,
  catalogRoutes,
  v1Routes,
  responsesRoutes,
  // Before threads: `POST /v2/threads/runs` is not the update of a thread named `runs`.
  runsRoutes,
  threadsRoutes,
  audioRoutes,
  openAIRoutes,
  openAIResponsesRoutes,
  openAIConversationsRoutes,
  openAIAudioRoutes,
];
