import type { CatalogModel } from '../catalog/catalog-types';
import type { GenerateTextResult, LanguageModel, TextStreamPart } from '../providers/provider';
import { callWithFailover, planTargets, type FailoverDeps } from './failover-call';

export interface RoutingDeps extends FailoverDeps {
  providers: { languageModel(vendor: string): LanguageModel };
}

/** A language model call to a model or a route, and the catalog model that served it (known once output began). */
export interface ServedLanguageModel {
  model: LanguageModel;
  /** The target that answered; before that, the first target to be tried. */
  served(): CatalogModel;
}

/**
 * The language model a request names, for callers whose call is not a durable job (chat completions): a model's own;
 * for a route, one whose calls go through callWithFailover (api-decisions 32), a stream failing over only before its
 * first part. Each target is called with its own model id; `request.model` is ignored.
 */
export function languageModelFor(
  model: CatalogModel,
  deps: RoutingDeps,
  draw: () => number = Math.random,
): ServedLanguageModel {
  if (!model.route) {
    const own = deps.providers.languageModel(model.vendor);
    return { model: own, served: () => model };
  }
  const drawn = draw();
  let served = planTargets(model, deps, drawn)[0];
  async function routed<T>(call: (language: LanguageModel, own: { model: string; maxRetries?: number }) => Promise<T>) {
    const answered = await callWithFailover(
      model,
      deps,
      ({ target, maxRetries }) =>
        call(deps.providers.languageModel(target.vendor), {
          model: target.upstreamId,
          ...(maxRetries === undefined ? {} : { maxRetries }),
        }),
      () => drawn,
    );
    served = answered.served;
    return answered.result;
  }

  const routedModel: LanguageModel = {
    generateText: (request): Promise<GenerateTextResult> =>
      routed((language, own) => language.generateText({ ...request, ...own })),
    async *streamText(request): AsyncGenerator<TextStreamPart> {
      const opened = await routed(async (language, own) => {
        const iterator = language.streamText({ ...request, ...own })[Symbol.asyncIterator]();
        return { iterator, first: await iterator.next() };
      });
      const { iterator } = opened;
      try {
        for (let step = opened.first; !step.done; step = await iterator.next()) yield step.value;
      } finally {
        await iterator.return?.();
      }
    },
  };
  return { model: routedModel, served: () => served };
}
