import http from 'node:http';
import { wavFile } from '../../src/providers/dev/audio/wav-reader';
import type { TestApp } from '../support/harness';
import type { AudioInput } from '../../src/providers/provider';

/** A mono WAV of `seconds` with a 440 Hz tone over each of `spans` (seconds) and silence elsewhere. */
export function toneWav(seconds: number, spans: Array<[number, number]>, sampleRate = 16_000): Buffer {
  const samples = new Float32Array(Math.round(seconds * sampleRate));
  for (const [from, to] of spans) {
    for (let i = Math.round(from * sampleRate); i < Math.round(to * sampleRate); i++)
      samples[i] = 0.5 * Math.sin((2 * Math.PI * 440 * i) / sampleRate);
  }
  return wavFile(samples, sampleRate);
}

/**
 * A WAV header (44 bytes) as an attacker or an odd encoder writes it: any format tag, rate, channels, bits and
 * block alignment, and a data chunk declaring `dataBytes` (default: what `totalBytes` leaves after the header).
 */
export function wavHeader(options: {
  sampleRate: number;
  channels?: number;
  bits?: number;
  tag?: number;
  blockAlign?: number;
  dataBytes?: number;
  totalBytes?: number;
}): Buffer {
  const { sampleRate, channels = 1, bits = 8, tag = 1 } = options;
  const blockAlign = options.blockAlign ?? channels * Math.ceil(bits / 8);
  const dataBytes = options.dataBytes ?? Math.max(0, (options.totalBytes ?? 44) - 44);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(Math.min(0xffffffff, 36 + dataBytes), 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(tag, 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(Math.min(0xffffffff, sampleRate * blockAlign), 28);
  header.writeUInt16LE(blockAlign, 32);
  header.writeUInt16LE(bits, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}

export interface StreamedReply {
  status: number;
  body: any;
  /** Milliseconds from the first byte sent to the reply's headers. */
  answeredAfterMs: number;
  /** File bytes written when the reply came (a reply before the end means the rest was refused unread). */
  sentWhenAnswered: number;
}

/**
 * Posts a transcription form whose file is `head` then `fillBytes` bytes of `fill`, written in 1 MiB pieces as the
 * server takes them (node:http, so that a reply that comes before the end of the body is seen, and when).
 */
export function streamTranscription(
  baseUrl: string,
  key: string,
  fields: Record<string, string>,
  file: {
    name: string;
    head: Buffer;
    fillBytes: number;
    fill?: number;
    /** RFC 5987 `filename*`, percent-encoded UTF-8 */ encodedName?: string;
  },
): Promise<StreamedReply> {
  const url = new URL(baseUrl);
  const boundary = 'switchyardboundary';
  let sent = 0;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = http.request({
      host: url.hostname,
      port: url.port,
      path: '/v2/audio/transcription',
      method: 'POST',
      headers: { 'x-auth-token': key, 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    request.on('response', (response) => {
      const answeredAfterMs = performance.now() - started;
      const sentWhenAnswered = sent;
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          status: response.statusCode ?? 0,
          body: (response.headers['content-type'] ?? '').includes('json') ? JSON.parse(text) : text,
          answeredAfterMs,
          sentWhenAnswered,
        });
      });
    });
    // Writing on after the reply (the server closes the connection) fails; only a failure before it is the test's.
    request.on('error', (error) => (sent > 0 ? undefined : reject(error)));
    for (const [name, value] of Object.entries(fields))
      request.write(`--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
    request.write(
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${file.name}"${file.encodedName ? `; filename*=utf-8''${file.encodedName}` : ''}\r\ncontent-type: application/octet-stream\r\n\r\n`,
    );
    request.write(file.head);
    sent = file.head.length;
    const piece = Buffer.alloc(1 << 20, file.fill ?? 0x80);
    const total = file.head.length + file.fillBytes;
    const pump = () => {
      while (sent < total && !request.destroyed) {
        const next = piece.subarray(0, Math.min(piece.length, total - sent));
        sent += next.length;
        if (!request.write(next)) return void request.once('drain', pump);
      }
      if (!request.destroyed) request.end(`\r\n--${boundary}--\r\n`);
    };
    pump();
  });
}

/** Posts a multipart transcription form (`fields` as text parts, the file as `file`) and reads the JSON reply. */
export async function postTranscription(
  baseUrl: string,
  key: string,
  file: { bytes: Buffer; name: string } | undefined,
  fields: Record<string, string>,
): Promise<{ status: number; body: any; headers: Headers }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (file) form.append('file', new Blob([file.bytes]), file.name);
  const reply = await fetch(`${baseUrl}/v2/audio/transcription`, {
    method: 'POST',
    headers: { 'x-auth-token': key },
    body: form,
  });
  const text = await reply.text();
  return {
    status: reply.status,
    body: text && (reply.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text,
    headers: reply.headers,
  };
}

/** `bytes` as the provider port reads an upload, in pieces of `pieceSize`. */
export function audioInput(bytes: Buffer, format: AudioInput['format'], pieceSize = 4096): AudioInput {
  return {
    format,
    mediaType: format === 'wav' ? 'audio/wav' : 'audio/mpeg',
    filename: `clip.${format}`,
    size: bytes.length,
    async *read() {
      for (let at = 0; at < bytes.length; at += pieceSize) yield bytes.subarray(at, at + pieceSize);
    },
  };
}

/** The whole of an audio stream (a speech model's MP3). */
export async function collectAudio(audio: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for await (const piece of audio) pieces.push(Buffer.from(piece));
  return Buffer.concat(pieces);
}

/** The account's debits of `service` (speech, transcription), newest first. */
export async function debits(suite: { app: TestApp; key: string }, service: string) {
  const reply = await suite.app.request('GET', '/v2/organization/transactions?limit=200', { key: suite.key });
  return reply.body.transactions.filter((row: any) => row.metadata.service === service);
}

/** Polls check until the job leaves queued/processing (the engine runs it in this process). */
export async function settle(suite: { app: TestApp; key: string }, id: string): Promise<string> {
  for (;;) {
    const check = await suite.app.request('GET', `/v2/audio/transcription/check/${id}`, { key: suite.key });
    expect(check.status).toBe(200);
    if (!['queued', 'processing'].includes(check.body.status)) return check.body.status;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A FLAC file of 16-bit mono `samples` (-1..1), written here by hand: STREAMINFO, then frames of `blockSize`
 * samples with VERBATIM subframes (FLAC's uncompressed coding), each frame with its CRC-8 header and CRC-16 footer,
 * as the format specifies. `totalSamples` is what STREAMINFO declares (default: the truth; 0: unknown).
 */
export function flacFile(
  samples: Float32Array,
  sampleRate: number,
  options: { blockSize?: number; totalSamples?: number } = {},
): Buffer {
  const blockSize = options.blockSize ?? 4096;
  const streamInfo = Buffer.alloc(34);
  streamInfo.writeUInt16BE(blockSize, 0);
  streamInfo.writeUInt16BE(blockSize, 2);
  // Frame sizes (6 bytes) left 0: unknown. Then 20 bits of rate, 3 of channels − 1, 5 of bits − 1, 36 of samples.
  const total = BigInt(options.totalSamples ?? samples.length);
  streamInfo.writeBigUInt64BE((BigInt(sampleRate) << 44n) | (0n << 41n) | (15n << 36n) | total, 10);
  const frames: Buffer[] = [];
  for (let start = 0, number = 0; start < samples.length; start += blockSize, number++) {
    const block = samples.subarray(start, start + blockSize);
    const header = Buffer.concat([
      // Sync code, fixed block size; block size from the header's end (7), rate code; mono, 16 bits.
      Buffer.from([0xff, 0xf8, 0x70 | rateCode(sampleRate), 0x08]),
      codedNumber(number),
      Buffer.from([(block.length - 1) >> 8, (block.length - 1) & 0xff]),
    ]);
    const subframe = Buffer.alloc(1 + 2 * block.length);
    subframe[0] = 0x02; // VERBATIM, no wasted bits
    block.forEach((value, index) =>
      subframe.writeInt16BE(Math.max(-32768, Math.min(32767, Math.round(value * 32767))), 1 + 2 * index),
    );
    const frame = Buffer.concat([header, Buffer.from([crc8(header)]), subframe]);
    const footer = Buffer.alloc(2);
    footer.writeUInt16BE(crc16(frame));
    frames.push(frame, footer);
  }
  // "fLaC", then the STREAMINFO block, marked last (type 0, 34 bytes).
  return Buffer.concat([Buffer.from('fLaC', 'latin1'), Buffer.from([0x80, 0, 0, 34]), streamInfo, ...frames]);
}

/** A frame header's sample rate code: the rate itself for the common ones, else 0 ("as in STREAMINFO"). */
function rateCode(sampleRate: number): number {
  const codes: Record<number, number> = { 8000: 4, 16000: 5, 22050: 6, 24000: 7, 32000: 8, 44100: 9, 48000: 10 };
  return codes[sampleRate] ?? 0;
}

/** A frame number as FLAC codes it: UTF-8's scheme, extended to 36 bits. */
function codedNumber(value: number): Buffer {
  if (value < 0x80) return Buffer.from([value]);
  const bytes: number[] = [];
  let rest = value;
  let room = 0x3f; // what the first byte can still hold
  while (rest > room) {
    bytes.unshift(0x80 | (rest & 0x3f));
    rest = Math.floor(rest / 64);
    room >>= 1;
  }
  const lead = (0xff << (7 - bytes.length)) & 0xff;
  return Buffer.from([lead | rest, ...bytes]);
}

function crc8(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x80 ? ((crc << 1) ^ 0x07) & 0xff : (crc << 1) & 0xff;
  }
  return crc;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x8005) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** Mono float samples of `seconds` with a 440 Hz tone over each of `spans` (seconds), as toneWav has them. */
export function toneSamples(seconds: number, spans: Array<[number, number]>, sampleRate = 16_000): Float32Array {
  const samples = new Float32Array(Math.round(seconds * sampleRate));
  for (const [from, to] of spans) {
    for (let i = Math.round(from * sampleRate); i < Math.round(to * sampleRate); i++)
      samples[i] = 0.5 * Math.sin((2 * Math.PI * 440 * i) / sampleRate);
  }
  return samples;
}

/** The start of an MP4 (ISO media) file: a format the upload accepts and dev-stt does not decode. */
export const MP4_HEAD = Buffer.concat([
  Buffer.from([0, 0, 0, 0x18]),
  Buffer.from('ftypisom', 'latin1'),
  Buffer.alloc(64),
]);
