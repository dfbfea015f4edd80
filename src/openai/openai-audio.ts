import Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import {
  AUDIO_UPLOAD_LIMIT_BYTES,
  idempotentUpload,
  markReplayed,
  sendSpeech,
  type AudioRoutesDeps,
} from '../audio/audio.routes';
import { languageField, parseFormFields, promptField } from '../audio/audio.schema';
import type { TranscriptionReply } from '../audio/audio.service';
import { readAudioUpload } from '../audio/multipart-upload';
import type { Catalog } from '../catalog/catalog.service';
import { invalidRequest } from '../errors';
import { idempotent } from '../idempotency/idempotency';
import { modelWork } from '../limits/account-limits';
import { nullable, parseInput } from '../http/validation';
import { SPEECH_FORMATS, type SpeechFormat } from '../providers/provider';

/**
 * OpenAI's audio endpoints under /openai/v1 (`audio.speech.create`, `audio.transcriptions.create`): OpenAI's
 * request and reply shapes over the audio service of /v2/audio, so the same catalog models, voices, text limits,
 * holds, billing, upload checks and Idempotency-Key apply.
 */
export type OpenAIAudioRoutesDeps = AudioRoutesDeps & { catalog: Catalog };

const OPENAI_SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
const isSupportedSpeechFormat = (format: string): format is SpeechFormat => format in SPEECH_FORMATS;

export const openAISpeechBody = z
  .strictObject({
    model: z.string().min(1, 'model is required'),
    input: z.string().refine((text) => text.trim() !== '', 'input must not be empty'),
    voice: z.string().min(1, 'voice is required'),
    response_format: nullable(
      z.enum(OPENAI_SPEECH_FORMATS, {
        error: `response_format must be one of ${Object.keys(SPEECH_FORMATS).join(', ')}`,
      }),
    ),
    speed: nullable(z.number().min(0.25, 'speed is 0.25-4').max(4, 'speed is 0.25-4')),
  })
  .superRefine((body, ctx) => {
    if (body.response_format && !isSupportedSpeechFormat(body.response_format)) {
      ctx.addIssue({
        code: 'custom',
        path: ['response_format'],
        message: `${body.response_format} is not supported here; use one of ${Object.keys(SPEECH_FORMATS).join(', ')}`,
      });
    }
  });

const TRANSCRIPTION_FORMATS = ['json', 'text', 'verbose_json', 'srt', 'vtt'] as const;
type TranscriptionFormat = (typeof TRANSCRIPTION_FORMATS)[number];

/** The text fields of OpenAI's transcription form (multipart values are strings). */
export const openAITranscriptionFields = z
  .strictObject({
    model: z.string().min(1, 'model is required'),
    language: languageField,
    prompt: promptField,
    response_format: z
      .enum(TRANSCRIPTION_FORMATS, { error: `response_format must be one of ${TRANSCRIPTION_FORMATS.join(', ')}` })
      .optional(),
    temperature: z
      .string()
      .regex(/^\d+(\.\d+)?$/, 'temperature must be a number from 0 to 1')
      .transform(Number)
      .pipe(z.number().max(1, 'temperature must be a number from 0 to 1'))
      .optional(),
    // Multipart repeats a field per value; one value is what can be asked for here (segment).
    'timestamp_granularities[]': z
      .enum(['segment', 'word'], { error: 'timestamp_granularities[] must be segment or word' })
      .optional(),
  })
  .superRefine((fields, ctx) => {
    const granularity = fields['timestamp_granularities[]'];
    if (granularity === 'word') {
      ctx.addIssue({
        code: 'custom',
        path: ['timestamp_granularities[]'],
        message: 'word timestamps are not available: the transcript has segment timestamps only',
      });
    }
    if (granularity && fields.response_format !== 'verbose_json') {
      ctx.addIssue({
        code: 'custom',
        path: ['timestamp_granularities[]'],
        message: 'timestamp_granularities[] needs response_format verbose_json',
      });
    }
  });

export function openAIAudioRoutes(deps: OpenAIAudioRoutesDeps): Router {
  const router = new Router({ prefix: '/openai/v1/audio' });

  router.post('/speech', idempotent('speech.openai'), modelWork({ job: false }), async (ctx) => {
    const body = parseInput(openAISpeechBody, ctx.request.body ?? {}, 'audio');
    const format = body.response_format as SpeechFormat | undefined;
    await sendSpeech(ctx, deps, { model: body.model, voice: body.voice, text: body.input, format, speed: body.speed });
  });

  router.post('/transcriptions', idempotent('transcription.openai'), modelWork({ job: false }), async (ctx) => {
    const upload = await readAudioUpload(ctx, { limitBytes: AUDIO_UPLOAD_LIMIT_BYTES });
    try {
      const fields = parseFormFields(openAITranscriptionFields, upload.fields);
      const model = deps.catalog.getModel(fields.model);
      if (model?.audio && 'asynchronous' in model.audio && model.audio.asynchronous) {
        throw invalidRequest(
          'transcription',
          `${model.code} transcribes asynchronously; its requests go to POST /v2/audio/transcription (OpenAI's endpoint answers within the request).`,
        );
      }
      const reply = markReplayed(
        ctx,
        await deps.audio.transcribe(
          ctx.state.auth.accountId,
          { model: fields.model, language: fields.language, prompt: fields.prompt, temperature: fields.temperature },
          upload,
          idempotentUpload(ctx, upload),
        ),
      ) as TranscriptionReply;
      sendTranscription(ctx, reply, fields.response_format ?? 'json', fields.temperature ?? 0);
    } finally {
      await upload.discard();
    }
  });

  return router;
}

/** A transcript in the asked-for format (OpenAI's `json`, `text`, `verbose_json`, `srt`, `vtt`). */
function sendTranscription(
  ctx: Context,
  reply: TranscriptionReply,
  format: TranscriptionFormat,
  temperature: number,
): void {
  const usage = { type: 'duration' as const, seconds: Math.ceil(reply.duration) };
  switch (format) {
    case 'json':
      ctx.body = { text: reply.text, usage };
      return;
    case 'verbose_json':
      ctx.body = verboseTranscription(reply, temperature);
      return;
    case 'text':
      ctx.type = 'text/plain';
      ctx.body = `${reply.text}\n`;
      return;
    case 'srt':
      ctx.type = 'text/plain';
      ctx.body = reply.segments
        .map(
          (segment, index) =>
            `${index + 1}\n${timestamp(segment.start, ',')} --> ${timestamp(segment.end, ',')}\n${segment.text}\n`,
        )
        .join('\n');
      return;
    case 'vtt':
      ctx.type = 'text/vtt';
      ctx.body = `WEBVTT\n\n${reply.segments.map((segment) => `${timestamp(segment.start, '.')} --> ${timestamp(segment.end, '.')}\n${segment.text}\n`).join('\n')}`;
      return;
  }
}

/**
 * OpenAI's `verbose_json`. Its segments' decoder statistics (`avg_logprob`, `compression_ratio`, `no_speech_prob`)
 * and token ids come from Whisper's decoder, which the models here do not expose: they are 0 and [] (README,
 * "OpenAI SDK and compatible clients"); `seek` is the segment's start in centiseconds, as Whisper counts it.
 */
export function verboseTranscription(reply: TranscriptionReply, temperature: number) {
  return {
    task: 'transcribe' as const,
    language: languageName(reply.language),
    duration: reply.duration,
    text: reply.text,
    segments: reply.segments.map((segment, id) => ({
      id,
      seek: Math.round(segment.start * 100),
      start: segment.start,
      end: segment.end,
      text: segment.text,
      tokens: [] as number[],
      temperature,
      avg_logprob: 0,
      compression_ratio: 0,
      no_speech_prob: 0,
    })),
    usage: { type: 'duration' as const, seconds: Math.ceil(reply.duration) },
  };
}

const languageNames = new Intl.DisplayNames(['en'], { type: 'language' });

/** OpenAI names the language in English, lower case (`english`), where the transcript has its code (`en`, `pt-BR`). */
function languageName(code: string | null): string {
  if (!code) return 'unknown';
  const base = code.split('-')[0]!;
  try {
    return (languageNames.of(base) ?? base).toLowerCase();
  } catch {
    return base.toLowerCase();
  }
}

/** `HH:MM:SS,mmm` (SRT) or `HH:MM:SS.mmm` (WebVTT). */
function timestamp(seconds: number, separator: ',' | '.'): string {
  const millis = Math.round(seconds * 1000);
  const pad = (value: number, width = 2) => String(value).padStart(width, '0');
  return `${pad(Math.floor(millis / 3_600_000))}:${pad(Math.floor(millis / 60_000) % 60)}:${pad(Math.floor(millis / 1000) % 60)}${separator}${pad(millis % 1000, 3)}`;
}
