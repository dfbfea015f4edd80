import { wavFile } from '../../src/providers/dev/audio/wav-reader';
import type { AudioInput } from '../../src/providers/provider';

/** A mono WAV of `seconds` with a 440 Hz tone over each of `spans` (seconds) and silence elsewhere. */
export function toneWav(seconds: number, spans: Array<[number, number]>, sampleRate = 16_000): Buffer {
  const samples = new Float32Array(Math.round(seconds * sampleRate));
  for (const [from, to] of spans) {
    for (let i = Math.round(from * sampleRate); i < Math.round(to * sampleRate); i++) samples[i] = 0.5 * Math.sin((2 * Math.PI * 440 * i) / sampleRate);
  }
  return wavFile(samples, sampleRate);
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
  const reply = await fetch(`${baseUrl}/v2/audio/transcription`, { method: 'POST', headers: { 'x-auth-token': key }, body: form });
  const text = await reply.text();
  return { status: reply.status, body: text && (reply.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text, headers: reply.headers };
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
