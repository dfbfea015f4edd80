import type Router from '@koa/router';
import { conversationsRoutes } from '../conversations/conversations.routes';
import { organizationRoutes } from '../organization/organization.routes';
import type { AppDeps } from '../runtime';

/**
 * Every public route module, mounted behind X-Auth-Token. Each slice adds its `*Routes(deps)` here.
 */
export const publicRouteModules: Array<(deps: AppDeps) => Router> = [
  organizationRoutes,
  conversationsRoutes,
];
