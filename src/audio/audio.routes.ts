import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Context } from 'koa';
import { idempotent, idempotentCall, type Idempotency } from '../idempotency/idempotency';
import { modelWork } from '../limits/account-limits';
import { parseSpeechBody, parseTranscriptionFields, type SpeechOrder } from './audio.schema';
import type { AudioService, Transcribed } from './audio.service';
import { readAudioUpload, type SpooledAudio } from './multipart-upload';
import { transcriptionStatusToWire } from './transcriptions.wire';

export interface AudioRoutesDeps {
  audio: AudioService;
  idempotency: Idempotency;
}

/** A synthesis as an Idempotency-Key stores it: the whole file (a few hundred KB at most), base64. */
interface StoredSpeech {
  mediaType: string;
  requestId: string;
  audio: string;
}

/**
 * Synthesises `order` and sends the audio: piped as the vendor produces it, or with an Idempotency-Key (docs/api-decisions.md
 * 17) read whole and stored with the key before it is sent, so a retry gets the same bytes and is not billed again
 * (a synthesis that fails midway stores nothing). Each surface declares its own scope (their bodies differ).
 */
export async function sendSpeech(ctx: Context, deps: AudioRoutesDeps, order: SpeechOrder): Promise<void> {
  const { audio } = deps;
  const call = idempotentCall(ctx, ctx.request.body);
  const extension = order.format ?? 'mp3';
  ctx.attachment(`speech.${extension}`, { type: 'inline' });
  if (!call) {
    const speech = await audio.speak(ctx.state.auth.accountId, order);
    ctx.type = speech.mediaType;
    ctx.set('X-Request-Id', speech.requestId);
    // Piped as the vendor produces it; a failure mid-way ends the connection (the status has gone out).
    ctx.body = Readable.from(speech.audio, { objectMode: false });
    return;
  }
  const { reply, replayed } = await deps.idempotency.run(call, async (requestId): Promise<StoredSpeech> => {
    const speech = await audio.speak(ctx.state.auth.accountId, order, requestId);
    const chunks: Buffer[] = [];
    for await (const chunk of speech.audio) chunks.push(Buffer.from(chunk));
    return {
      mediaType: speech.mediaType,
      requestId: speech.requestId,
      audio: Buffer.concat(chunks).toString('base64'),
    };
  });
  if (replayed) ctx.set('Idempotent-Replayed', 'true');
  ctx.type = reply.mediaType;
  ctx.set('X-Request-Id', reply.requestId);
  ctx.body = Buffer.from(reply.audio, 'base64');
}

/** api-decisions 20: an audio upload is at most 25 MiB. */
export const AUDIO_UPLOAD_LIMIT_BYTES = 25 * 1024 * 1024;

/** /v2/audio (spec "Audio"; api-decisions 9, 20, 24). */
export function audioRoutes(deps: AudioRoutesDeps): Router {
  const { audio } = deps;
  const router = new Router({ prefix: '/v2/audio' });

  router.post('/speech', idempotent('speech'), modelWork({ job: false }), async (ctx) => {
    await sendSpeech(ctx, deps, parseSpeechBody(ctx.request.body));
  });

  router.post('/transcription', idempotent('transcription'), modelWork({ job: false }), async (ctx) => {
    const upload = await readAudioUpload(ctx, { limitBytes: AUDIO_UPLOAD_LIMIT_BYTES });
    try {
      const fields = parseTranscriptionFields(upload.fields);
      ctx.body = markReplayed(
        ctx,
        await audio.transcribe(ctx.state.auth.accountId, fields, upload, idempotentUpload(ctx, upload)),
      );
    } finally {
      await upload.discard();
    }
  });

  router.get('/transcription/check/:id', async (ctx) => {
    ctx.body = transcriptionStatusToWire(await audio.find(ctx.state.auth.accountId, ctx.params.id));
  });

  router.get('/transcription/result/:id', async (ctx) => {
    ctx.body = await audio.result(ctx.state.auth.accountId, ctx.params.id);
  });

  return router;
}

/** An upload's Idempotency-Key, bound to its form fields and the file's bytes (by their SHA-256). */
export const idempotentUpload = (ctx: Context, upload: SpooledAudio) =>
  idempotentCall(ctx, { fields: upload.fields, file: upload.file.sha256 });

/** A transcription's reply, marked `Idempotent-Replayed: true` when an earlier request with its key made it. */
export function markReplayed(ctx: Context, transcribed: Transcribed): Transcribed['reply'] {
  if (transcribed.replayed) ctx.set('Idempotent-Replayed', 'true');
  return transcribed.reply;
}
