import type { Price } from '../catalog/catalog-types';
import type { HoldRequest, Ledger } from './ledger';
import { affordableOutput, priceCall } from './pricing';

export interface GenerationHoldRequest {
  accountId: string;
  operationKey: string;
  jobId?: string;
  price: Price | null;
  /** An upper bound of the call's input tokens (promptTokenBound). */
  inputBound: number;
  /** The output cap: the request's, or the model's when the request leaves it open. */
  cap: number;
  /** The request set the cap: it is held whole or refused (402), never lowered. */
  capFixed: boolean;
  /** Tokens of earlier calls of the same operation (a later turn), billed with it: the hold covers them too. */
  prior?: { inputTokens: number; outputTokens: number };
}

/**
 * The hold of a model call (docs/architecture.md, "Money: holds"): its input bound and output cap at the model's price, plus
 * what earlier calls of the operation used; at least one output token's worth when the cap may be lowered.
 * `capFor` turns the hold placed into the cap the call may use: an open cap lowered to what it pays (docs/api-decisions.md
 * 25), down to one output token.
 */
export function generationHold(request: GenerationHoldRequest): { hold: HoldRequest; capFor(held: number): number } {
  const prior = request.prior ?? { inputTokens: 0, outputTokens: 0 };
  const input = prior.inputTokens + request.inputBound;
  const amount = priceCall(request.price, { input, output: prior.outputTokens + request.cap }).amount;
  const minAmount = request.capFixed
    ? amount
    : priceCall(request.price, { input, output: prior.outputTokens + 1 }).amount;
  return {
    hold: { accountId: request.accountId, operationKey: request.operationKey, jobId: request.jobId, amount, minAmount },
    capFor: (held) =>
      request.capFixed
        ? request.cap
        : Math.max(
            1,
            affordableOutput(request.price, held, input, prior.outputTokens + request.cap) - prior.outputTokens,
          ),
  };
}

/** Places the hold of a model call (generationHold) and answers the cap the call may use; 402 when not even one token fits. */
export async function holdForGeneration(ledger: Pick<Ledger, 'hold'>, request: GenerationHoldRequest): Promise<number> {
  const { hold, capFor } = generationHold(request);
  return capFor(await ledger.hold(hold));
}

/** A model's output cap when a request leaves it open: its catalog limit, or this for a model whose limit is not known. */
export const OPEN_OUTPUT_CAP = 32_768;

export const outputCapOf = (requested: number | null | undefined, modelMaxOutput: number): number =>
  requested ?? (modelMaxOutput > 0 ? modelMaxOutput : OPEN_OUTPUT_CAP);
