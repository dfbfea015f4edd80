import { recordJobStarted, type Metrics } from '../metrics/metrics';
import { createReadStream } from 'node:fs';
import type { Ledger } from '../billing/ledger';
import { priceCall } from '../billing/pricing';
import type { CatalogModel } from '../catalog/catalog-types';
import type { Catalog } from '../catalog/catalog.service';
import { inTransaction, type Db } from '../db/database';
import type { Engine } from '../engine/engine';
import { invalidRequest, notFound } from '../errors';
import { newId } from '../ids';
import { stillRunning, type Idempotency, type IdempotentCall } from '../idempotency/idempotency';
import type { SpeechModel, SpeechResult, TranscriptionModel } from '../providers/provider';
import { vendorErrorToApiError } from '../providers/provider-errors';
import { callWithFailover } from '../routing/failover-call';
import { validateOutboundUrl } from '../outbound/address-guard';
import type { SpeechOrder, TranscriptionOrder } from './audio.schema';
import type { SpooledAudio } from './multipart-upload';
import {
  billedSeconds,
  heldSeconds,
  transcriptionBody,
  transcriptionCharge,
  transcriptionOperationKey,
} from './transcription-result';
import { transcriptionStatusToWire } from './transcriptions.wire';
import * as transcriptions from './transcriptions.repository';
import type { TranscriptionBody, TranscriptionRow } from './transcriptions.table';

export interface AudioServiceDeps {
  db: Db;
  catalog: Catalog;
  ledger: Ledger;
  engine: Engine;
  idempotency: Idempotency;
  providers: { speechModel(vendor: string): SpeechModel; transcriptionModel(vendor: string): TranscriptionModel };
  allowPrivateNetworks: boolean;
  metrics?: Metrics;
}

/** Bytes per stored chunk of an asynchronous upload. */
const CHUNK_BYTES = 256 * 1024;

export type TranscriptionReply = TranscriptionBody & { usage: { cost: number } };
export type Submitted = { request_id: string; status: string };
/** `replayed`: an Idempotency-Key matched an earlier request, whose outcome this is (nothing ran again). */
export type Transcribed = { reply: TranscriptionReply | Submitted; replayed: boolean };

/**
 * Speech synthesis and transcription (spec "Audio"). Speech and synchronous transcription call the vendor in
 * the request and debit once per request; an asynchronous transcription stores the upload and its job row,
 * and its workflow (src/audio/transcription.job.ts) does the rest.
 */
export function createAudioService(deps: AudioServiceDeps) {
  const { db, catalog, ledger, engine } = deps;

  /** The synthesis, started: the vendor accepted the text and the request is billed; the MP3 may still be arriving. */
  async function speak(
    accountId: string,
    body: SpeechOrder,
    requestId = newId('req'),
  ): Promise<SpeechResult & { requestId: string }> {
    const model = catalog.requireUsableModel(body.model, 'audio', 'tts');
    const audio = model.audio && 'voices' in model.audio ? model.audio : { voices: [], maxInputCharacters: 0 };
    if (!audio.voices.includes(body.voice)) {
      throw invalidRequest(
        'audio',
        `Model ${model.code} has no voice "${body.voice}"; its voices: ${audio.voices.join(', ')}.`,
        'unknown_voice',
      );
    }
    const characters = [...body.text].length;
    if (characters > audio.maxInputCharacters) {
      throw invalidRequest(
        'audio',
        `text is ${characters} characters; model ${model.code} takes at most ${audio.maxInputCharacters}.`,
        'text_too_long',
      );
    }
    const { amount } = priceCall(model.price, { input: characters, output: 0 });
    const operationKey = `speech:${requestId}`;
    // The price is known before the call: held (a route's dearest target's), then settled by the debit at the price of
    // the model that served (released if the vendor fails).
    const result = await ledger.withHold({ accountId, operationKey, amount }, async () => {
      let synthesized: SpeechResult;
      let served: CatalogModel;
      try {
        ({ result: synthesized, served } = await callWithFailover(model, deps, ({ target, maxRetries }) =>
          deps.providers.speechModel(target.vendor).synthesize({
            model: target.upstreamId,
            voice: body.voice,
            text: body.text,
            format: body.format,
            speed: body.speed,
            maxRetries,
          }),
        ));
      } catch (error) {
        throw vendorErrorToApiError(error, 'audio');
      }
      await ledger.debit({
        accountId,
        cost: priceCall(served.price, { input: characters, output: 0 }).exact,
        operationKey,
        metadata: {
          source: 'api',
          vendor: served.vendor,
          model: served.code,
          ...(model.route ? { route: model.code } : {}),
          service: 'speech',
          request_id: requestId,
          characters,
        },
        usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, characters },
      });
      return synthesized;
    });
    return { ...result, requestId };
  }

  /**
   * A synchronous model's reply, or an asynchronous model's `{request_id, status: queued}`. With an Idempotency-Key
   * (docs/api-decisions.md 17): a synchronous reply is stored with the key; an asynchronous request's key names the
   * transcription it created, claimed in the transaction that writes it, and a repeat answers its current status.
   */
  async function transcribe(
    accountId: string,
    fields: TranscriptionOrder,
    upload: SpooledAudio,
    idempotent?: IdempotentCall,
  ): Promise<Transcribed> {
    const model = catalog.requireUsableModel(fields.model, 'transcription', 'stt');
    const asynchronous = model.audio !== null && 'asynchronous' in model.audio && model.audio.asynchronous;
    if (!asynchronous) {
      for (const field of ['callback_url', 'meta'] as const) {
        if (fields[field] !== undefined)
          throw invalidRequest(
            'transcription',
            `${field} applies to asynchronous models only; ${model.code} transcribes within the request.`,
          );
      }
    }
    if (fields.callback_url !== undefined)
      validateOutboundUrl(fields.callback_url, { allowPrivateNetworks: deps.allowPrivateNetworks }, 'transcription');
    // The duration is known after the call: held for the longest the upload can play, which its header bounds.
    const held = heldSeconds(upload.file.maxSeconds);
    const maxCost = priceCall(model.price, { input: held, output: 0 }).amount;
    if (asynchronous) return submit(accountId, model.code, fields, upload, maxCost, idempotent);

    const transcribeNow = (requestId: string): Promise<TranscriptionReply> =>
      ledger.withHold({ accountId, operationKey: transcriptionOperationKey(requestId), amount: maxCost }, async () => {
        let transcribed;
        let served: CatalogModel;
        try {
          ({ result: transcribed, served } = await callWithFailover(model, deps, ({ target, maxRetries }) =>
            deps.providers.transcriptionModel(target.vendor).transcribe({
              model: target.upstreamId,
              audio: upload.input(),
              language: fields.language,
              prompt: fields.prompt,
              beamSize: fields.beam_size,
              temperature: fields.temperature,
              maxRetries,
            }),
          ));
        } catch (error) {
          throw vendorErrorToApiError(error, 'transcription');
        }
        const { cost, debit } = transcriptionCharge({
          accountId,
          model: served,
          seconds: billedSeconds(transcribed.durationSeconds, held),
          requestId,
          ...(model.route ? { route: model.code } : {}),
        });
        // The reply is made before the debit: nothing that can still fail comes after the charge.
        const reply = { ...transcriptionBody(transcribed), usage: { cost } };
        await ledger.debit(debit);
        return reply;
      });
    if (!idempotent) return { reply: await transcribeNow(newId('req')), replayed: false };
    return deps.idempotency.run(idempotent, transcribeNow);
  }

  /** Stores the upload in chunks, then the row turns `queued` together with its job row, and the job starts. */
  async function submit(
    accountId: string,
    model: string,
    fields: TranscriptionOrder,
    upload: SpooledAudio,
    maxCost: number,
    idempotent?: IdempotentCall,
  ): Promise<Transcribed> {
    const replay = idempotent && (await findIdempotent(idempotent));
    if (replay) return { reply: replay, replayed: true };
    // Uploads a crashed process left half-stored are removed by whoever stores the next one.
    await transcriptions.sweepAbandonedUploads(db);
    const id = newId('stt');
    // The hold and the row (and the Idempotency-Key) are written together: a row that cannot be written (or a hold
    // refused) leaves none of them. Settled by the job's debit; released below if the upload is not stored (by the
    // sweep if this process dies first).
    const written = await inTransaction(db, async (trx) => {
      if (idempotent && !(await deps.idempotency.claimCreation(trx, idempotent, id))) return false;
      await ledger.hold({ accountId, operationKey: transcriptionOperationKey(id), amount: maxCost, jobId: id }, trx);
      await transcriptions.insertUploading(trx, {
        id,
        account_id: accountId,
        model,
        status: 'uploading',
        file_name: upload.file.filename,
        file_format: upload.file.format,
        file_bytes: upload.file.size,
        options: JSON.stringify({
          language: fields.language ?? null,
          prompt: fields.prompt ?? null,
          beam_size: fields.beam_size ?? null,
          source: fields.source ?? null,
          max_seconds: upload.file.maxSeconds,
        }),
        callback_url: fields.callback_url ?? null,
        meta: JSON.stringify(fields.meta ?? null),
        result: JSON.stringify(null),
        error: JSON.stringify(null),
      });
      return true;
    });
    if (!written) {
      const winner = await findIdempotent(idempotent!);
      if (!winner) throw stillRunning();
      return { reply: winner, replayed: true };
    }
    try {
      let seq = 0;
      for await (const chunk of createReadStream(upload.file.path, { highWaterMark: CHUNK_BYTES })) {
        await transcriptions.appendChunk(db, id, seq++, chunk as Buffer);
      }
      // Its job is admitted with the status change: queued and its job row in one statement.
      await engine.admit({ kind: 'transcription', accountId }, async (admission) => {
        const queued = await transcriptions.markQueued(db, id, admission);
        return { jobId: queued?.id, result: queued };
      });
    } catch (error) {
      await transcriptions.deleteTranscription(db, id).catch(() => undefined);
      await ledger.release(accountId, transcriptionOperationKey(id)).catch(() => undefined);
      // A key that named it is free again: the retry stores the upload anew.
      if (idempotent) await deps.idempotency.forgetCreation(idempotent, id).catch(() => undefined);
      throw error;
    }
    recordJobStarted(deps.metrics, 'transcription', catalog.getModel(model));
    return { reply: { request_id: id, status: 'queued' }, replayed: false };
  }

  /** The transcription a live key created, with its current status (400 for another body). */
  async function findIdempotent(idempotent: IdempotentCall): Promise<Submitted | undefined> {
    const id = await deps.idempotency.findCreation(idempotent);
    if (id === undefined) return undefined;
    const row = await transcriptions.findTranscription(db, idempotent.accountId, id);
    // Only a storing that failed deletes a transcription, and it frees the key with it (forgetCreation).
    if (!row) return undefined;
    return transcriptionStatusToWire(row);
  }

  async function find(accountId: string, id: string): Promise<TranscriptionRow> {
    const row = await transcriptions.findTranscription(db, accountId, id);
    if (!row) throw notFound('transcription', `No transcription request with id ${id}.`);
    return row;
  }

  /** GET .../result/{id}: the reply plus `meta`; 400 `transcription.not_ready` before it ends, its error when it failed. */
  async function result(
    accountId: string,
    id: string,
  ): Promise<TranscriptionReply & { meta: Record<string, unknown> | null }> {
    const row = await find(accountId, id);
    if (row.status === 'failed') {
      const error = row.error ?? { code: 'transcription.execution_failed', message: 'The transcription failed.' };
      throw invalidRequest('transcription', `Transcription ${id} failed (${error.code}): ${error.message}`, 'failed');
    }
    if (row.status !== 'completed' || !row.result) {
      throw invalidRequest(
        'transcription',
        `Transcription ${id} is ${row.status}; its result is ready when GET .../check/${id} says completed.`,
        'not_ready',
      );
    }
    return { ...row.result, usage: { cost: row.cost ?? 0 }, meta: row.meta };
  }

  return { speak, transcribe, find, result };
}

export type AudioService = ReturnType<typeof createAudioService>;
