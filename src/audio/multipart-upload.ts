import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import type { Context } from 'koa';
import { ApiError, invalidRequest } from '../errors';
import type { AudioFormat, AudioInput } from '../providers/provider';
import { checkAudioFile, MEDIA_TYPES, SNIFF_BYTES } from './audio-format';
import { isInvalidAudio, maxAudioSeconds, OGG_TAIL_BYTES, readAudioHeader, type AudioHeader } from './audio-header';

/**
 * Reads a transcription upload (multipart/form-data) with busboy as it arrives: the file goes to a temporary
 * file through a stream (memory does not grow with its size), the other parts are small text fields. Over the
 * limit is a 413 the moment the limit is crossed, while the rest is still arriving: the reply goes out and the
 * connection closes instead of reading a body the service will not use. So is a file whose header is refused
 * (audio-header.ts): the 400 goes out when its first bytes arrive. A malformed or unexpected part is a 400;
 * nothing is left on disk after an error.
 */
export interface SpooledAudio {
  fields: Record<string, string>;
  /** `maxSeconds`: the longest the file can play by its header and size (audio-header.ts), fractional. */
  file: { filename: string; format: AudioFormat; size: number; path: string; maxSeconds: number; sha256: string };
  /** The spooled file as the provider port reads it. */
  input(): AudioInput;
  /** Removes the temporary file (safe to call twice). */
  discard(): Promise<void>;
}

const MAX_FIELDS = 16;
const MAX_FIELD_BYTES = 64 * 1024;
/** The multipart envelope and the text fields beside the file. */
const FORM_OVERHEAD_BYTES = MAX_FIELDS * MAX_FIELD_BYTES + 64 * 1024;

export async function readAudioUpload(
  ctx: Context,
  options: { limitBytes: number; directory?: string },
): Promise<SpooledAudio> {
  const { limitBytes } = options;
  if (!ctx.is('multipart/form-data')) {
    throw new ApiError(
      415,
      'request.unsupported_media_type',
      `The request body must be multipart/form-data with a "file" part (Content-Type: ${ctx.get('content-type') || 'none'}).`,
    );
  }
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > limitBytes + FORM_OVERHEAD_BYTES) refuseRest(ctx, tooLarge(limitBytes));

  const target = path.join(options.directory ?? os.tmpdir(), `switchyard-upload-${randomUUID()}`);
  const discard = () => fs.promises.rm(target, { force: true });
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: ctx.req.headers,
      limits: { fileSize: limitBytes, files: 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, parts: MAX_FIELDS + 1 },
    });
  } catch (error) {
    throw invalidRequest('transcription', `The multipart body cannot be read: ${(error as Error).message}.`);
  }

  const fields: Record<string, string> = {};
  let file: SpooledAudio['file'] | undefined;
  let writing: Promise<void> | undefined;
  let fileStream: (NodeJS.ReadableStream & { destroy(): void }) | undefined;

  const parsed = new Promise<void>((resolve, reject) => {
    const fail = (error: ApiError) => {
      ctx.req.unpipe(parser);
      // Ends the temporary file's write stream too (its pipeline rejects): no descriptor stays open.
      fileStream?.destroy();
      reject(error);
    };
    parser.on('field', (name, value, info) => {
      if (info.nameTruncated || info.valueTruncated)
        return fail(
          invalidRequest('transcription', `The form field "${name}" is longer than ${MAX_FIELD_BYTES} bytes.`),
        );
      if (name in fields) return fail(invalidRequest('transcription', `The form field "${name}" is given twice.`));
      fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      if (name !== 'file') {
        stream.resume();
        return fail(
          invalidRequest('transcription', `Unexpected file part "${name}": the audio goes in the "file" part.`),
        );
      }
      fileStream = stream;
      const filename = info.filename || 'upload';
      // Stored with an asynchronous job: the database refuses text with NUL.
      if (filename.includes('\u0000'))
        return fail(invalidRequest('transcription', 'The file name must not contain NUL characters.'));
      let size = 0;
      // What an Idempotency-Key binds the upload by (with the form's fields).
      const digest = createHash('sha256');
      // The first bytes, until the format and its header are known (at most MAX_HEADER_BYTES and a chunk).
      let head = Buffer.alloc(0);
      let format: AudioFormat | undefined;
      let header: AudioHeader | undefined;
      let inspected = false;
      // The end of an Ogg file, for the granule position of its last page (its length: audio-header.ts).
      let tail = Buffer.alloc(0);
      stream.on('limit', () => fail(tooLarge(limitBytes)));
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        digest.update(chunk);
        if (format === undefined || format === 'ogg') {
          tail = Buffer.concat([tail, chunk]);
          if (tail.length > 2 * OGG_TAIL_BYTES) tail = tail.subarray(tail.length - OGG_TAIL_BYTES);
        }
        if (inspected) return;
        head = Buffer.concat([head, chunk]);
        try {
          inspect(false);
        } catch (error) {
          fail(error as ApiError);
        }
      });
      /** Sniffs the format, then reads its header; a refusal is answered while the rest is still arriving. */
      const inspect = (complete: boolean) => {
        if (!format) {
          if (head.length < SNIFF_BYTES && !complete) return;
          const verdict = checkAudioFile(filename, head);
          if (!verdict.ok) {
            inspected = true;
            throw invalidRequest('audio', verdict.message, 'unsupported_format');
          }
          format = verdict.format;
        }
        header = audioHeaderOrRefusal(() => readAudioHeader(format!, head, complete));
        if (header) {
          inspected = true;
          head = Buffer.alloc(0);
        }
      };
      writing = pipeline(stream, fs.createWriteStream(target)).then(() => {
        if (size === 0) throw invalidRequest('audio', `The file "${filename}" is empty.`, 'unsupported_format');
        if (!inspected) inspect(true);
        const known = header!;
        file = {
          filename,
          format: known.format,
          size,
          path: target,
          maxSeconds: audioHeaderOrRefusal(() => maxAudioSeconds(known, size, tail.subarray(-OGG_TAIL_BYTES))),
          sha256: digest.digest('hex'),
        };
      });
      writing.catch(() => undefined);
    });
    parser.on('filesLimit', () =>
      fail(invalidRequest('transcription', 'The form has more than one file; send one "file" part.')),
    );
    parser.on('fieldsLimit', () =>
      fail(invalidRequest('transcription', `The form has more than ${MAX_FIELDS} fields.`)),
    );
    parser.on('partsLimit', () => fail(invalidRequest('transcription', 'The form has too many parts.')));
    parser.on('error', (error: Error) =>
      fail(invalidRequest('transcription', `The multipart body cannot be read: ${error.message}.`)),
    );
    parser.on('close', resolve);
    ctx.req.on('error', () => fail(invalidRequest('transcription', 'The upload was interrupted.')));
    ctx.req.on('close', () => {
      if (!ctx.req.complete) fail(invalidRequest('transcription', 'The upload was interrupted.'));
    });
  });
  ctx.req.pipe(parser);

  try {
    await parsed;
    await writing;
  } catch (error) {
    await discard();
    // The rest of the body is not read: the connection closes after the reply.
    if (ApiError.isInstance(error)) refuseRest(ctx, error);
    throw invalidRequest('transcription', 'The upload was interrupted.');
  }
  if (!file) {
    await discard();
    throw invalidRequest('transcription', 'The form has no "file" part with the audio.');
  }
  const spooled = file;
  return {
    fields,
    file: spooled,
    input: () => ({
      format: spooled.format,
      mediaType: MEDIA_TYPES[spooled.format],
      filename: spooled.filename,
      size: spooled.size,
      read: () => fs.createReadStream(spooled.path, { highWaterMark: 256 * 1024 }),
    }),
    discard,
  };
}

/** Answers `error` at once and closes the connection after it, leaving the rest of the body unread. */
function refuseRest(ctx: Context, error: ApiError): never {
  ctx.set('Connection', 'close');
  throw error;
}

/** A header out of bounds is the client's to fix: 400 `audio.invalid_file`. */
function audioHeaderOrRefusal<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (isInvalidAudio(error)) throw invalidRequest('audio', error.message, 'invalid_file');
    throw error;
  }
}

const tooLarge = (limit: number) =>
  new ApiError(
    413,
    'request.too_large',
    `The audio file exceeds the limit of ${limit} bytes (${Math.round(limit / 1024 / 1024)} MiB).`,
  );
