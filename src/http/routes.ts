import type Router from '@koa/router';
import { assistantsRoutes } from '../assistants/assistants.routes';
import { catalogRoutes } from '../catalog/catalog.routes';
import { v1Routes } from '../catalog/v1.routes';
import { chatRoutes } from '../chat/chat.routes';
import { conversationsRoutes } from '../conversations/conversations.routes';
import { embeddingsRoutes } from '../embeddings/embeddings.routes';
import { organizationRoutes } from '../organization/organization.routes';
import { responsesRoutes } from '../responses/responses.routes';
import type { AppDeps } from '../runtime';

/**
 * Every public route module, mounted behind X-Auth-Token. Each slice adds its `*Routes(deps)` here.
 */
export const publicRouteModules: Array<(deps: AppDeps) => Router> = [
  organizationRoutes,
  embeddingsRoutes,
  chatRoutes,
  conversationsRoutes,
  assistantsRoutes,
  catalogRoutes,
  v1Routes,
  responsesRoutes,
];
