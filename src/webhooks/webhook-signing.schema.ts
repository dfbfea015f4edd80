import { z } from 'zod';
import { MAX_KEEP_PREVIOUS_SECONDS } from './webhook-signing.service';

/**
 * POST /v2/organization/webhook-signing/rotate. The body is optional: without `keep_previous_seconds` the replaced
 * secret stops signing at once (what a leaked secret needs).
 */
export const rotateWebhookSecretSchema = z.strictObject({
  keep_previous_seconds: z
    .number()
    .int()
    .min(0)
    .max(MAX_KEEP_PREVIOUS_SECONDS)
    .optional()
    .describe(
      'How long the replaced secret keeps signing beside the new one (a second signature), so a receiver can be switched over without a gap; 0 (the default): it stops at once.',
    ),
});
