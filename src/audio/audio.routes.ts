import { Readable } from 'node:stream';
import Router from '@koa/router';
import { parseSpeechBody, parseTranscriptionFields } from './audio.schema';
import type { AudioService } from './audio.service';
import { readAudioUpload } from './multipart-upload';
import { transcriptionStatusToWire } from './transcription-result';

export interface AudioRoutesDeps {
  audio: AudioService;
}

/** DECISIONS.md 20: an audio upload is at most 25 MiB. */
export const AUDIO_UPLOAD_LIMIT_BYTES = 25 * 1024 * 1024;

/** /v2/audio (spec "Audio"; DECISIONS.md 9, 20, 24). */
export function audioRoutes(deps: AudioRoutesDeps): Router {
  const { audio } = deps;
  const router = new Router({ prefix: '/v2/audio' });

  router.post('/speech', async (ctx) => {
    const body = parseSpeechBody(ctx.request.body);
    const speech = await audio.speak(ctx.state.auth.accountId, body);
    ctx.type = speech.mediaType;
    ctx.set('X-Request-Id', speech.requestId);
    ctx.attachment('speech.mp3', { type: 'inline' });
    // Piped as the vendor produces it; a failure mid-way ends the connection (the status has gone out).
    ctx.body = Readable.from(speech.audio, { objectMode: false });
  });

  router.post('/transcription', async (ctx) => {
    const upload = await readAudioUpload(ctx, { limitBytes: AUDIO_UPLOAD_LIMIT_BYTES });
    try {
      const fields = parseTranscriptionFields(upload.fields);
      ctx.body = await audio.transcribe(ctx.state.auth.accountId, fields, upload);
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
