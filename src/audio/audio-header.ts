import type { AudioFormat } from '../providers/provider';

/**
 * What an upload's header says about its audio, read before anything decodes it: a header is all an attacker
 * needs to write to make a decoder do absurd work (a WAV declaring 1 Hz turns 25 MB into 290 days of audio, one
 * analysis window per sample), so absurd headers are refused here, and the longest the file can play, which
 * bounds the billing hold and the charge, comes from the header and the file's size, never from a decoder.
 *
 * WAV is read exactly (format and data size). MP3 has no duration in its header: the first frame's MPEG version
 * gives the lowest bitrate its frames can have, and so the longest the bytes can last. Other formats are bounded
 * by 8 kbit/s, below every speech codec in use.
 */

/** Sample rates, channel counts and durations a recording of speech has; outside them a header is refused. */
export const AUDIO_BOUNDS = {
  minSampleRate: 8_000,
  maxSampleRate: 192_000,
  maxChannels: 8,
  maxSeconds: 8 * 3600,
} as const;

/** A header (or the bytes where one should be) that no decoder should be given. Checked by name (isInvalidAudio). */
export class InvalidAudioError extends Error {
  override readonly name = 'InvalidAudioError';
}

export const isInvalidAudio = (error: unknown): error is InvalidAudioError =>
  error instanceof Error && error.name === 'InvalidAudioError';

/** How far into a file its header is looked for: a WAV's data chunk, an MP3's first frame after its ID3 tag. */
export const MAX_HEADER_BYTES = 1 << 20;

/** The floor of the formats whose header is not read: 8 kbit/s. */
const FLOOR_BYTES_PER_SECOND = 1000;

export interface WavFormat {
  /** 1 (integer PCM) or 3 (IEEE float), after WAVE_FORMAT_EXTENSIBLE's sub-format; others are compressed. */
  tag: number;
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
  bytesPerSample: number;
  blockAlign: number;
}

export interface WavHeader {
  format: WavFormat;
  /** Offset of the data chunk's first byte. */
  dataOffset: number;
  /** The data chunk's declared size; undefined when a streaming encoder left it open (0 or 0xFFFFFFFF). */
  dataBytes: number | undefined;
}

/** What the header bounds: the bytes of audio per second at the least. */
export type AudioHeader = { format: AudioFormat; minBytesPerSecond: number; wav?: WavHeader };

/** The PCM/float sample formats a decoder reads sample by sample. */
export const isPcm = (format: WavFormat) => format.tag === 1 || format.tag === 3;

/**
 * The WAV header at the start of `head`, or undefined while the data chunk has not arrived yet (`complete`: the
 * file ends with `head`, so there is no more to wait for). Throws InvalidAudioError for a header out of bounds.
 */
export function readWavHeader(head: Uint8Array, complete = false): WavHeader | undefined {
  const bytes = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  const more = () => {
    if (complete) throw new InvalidAudioError('The WAV file ends before its data chunk.');
    if (bytes.length >= MAX_HEADER_BYTES)
      throw new InvalidAudioError('The WAV file has no data chunk in its first MiB.');
    return undefined;
  };
  if (bytes.length < 12) return more();
  if (bytes.toString('latin1', 0, 4) !== 'RIFF' || bytes.toString('latin1', 8, 12) !== 'WAVE')
    throw new InvalidAudioError('The file is not a RIFF/WAVE file.');
  let format: WavFormat | undefined;
  let at = 12;
  while (at + 8 <= bytes.length) {
    const id = bytes.toString('latin1', at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === 'data') {
      if (!format) throw new InvalidAudioError('The WAV file has its data chunk before its fmt chunk.');
      return { format, dataOffset: at + 8, dataBytes: size === 0 || size === 0xffffffff ? undefined : size };
    }
    if (at + 8 + size > bytes.length) return more();
    if (id === 'fmt ') format = readWavFormat(bytes.subarray(at + 8, at + 8 + size));
    at += 8 + size + (size % 2);
  }
  return more();
}

function readWavFormat(chunk: Buffer): WavFormat {
  if (chunk.length < 16) throw new InvalidAudioError('The WAV fmt chunk is too short.');
  let tag = chunk.readUInt16LE(0);
  if (tag === 0xfffe && chunk.length >= 26) tag = chunk.readUInt16LE(24); // WAVE_FORMAT_EXTENSIBLE: the sub-format GUID's first two bytes
  const channels = chunk.readUInt16LE(2);
  const sampleRate = chunk.readUInt32LE(4);
  const blockAlign = chunk.readUInt16LE(12);
  const bitsPerSample = chunk.readUInt16LE(14);
  const bytesPerSample = Math.ceil(bitsPerSample / 8);
  const { minSampleRate, maxSampleRate, maxChannels } = AUDIO_BOUNDS;
  const declared = `${channels} channel(s), ${sampleRate} Hz, ${bitsPerSample} bits`;
  if (sampleRate < minSampleRate || sampleRate > maxSampleRate) {
    throw new InvalidAudioError(
      `The WAV header declares ${declared}: the sample rate must be ${minSampleRate}-${maxSampleRate} Hz.`,
    );
  }
  if (channels < 1 || channels > maxChannels)
    throw new InvalidAudioError(`The WAV header declares ${declared}: it must have 1-${maxChannels} channels.`);
  const format = { tag, channels, sampleRate, bitsPerSample, bytesPerSample, blockAlign };
  if (isPcm(format)) {
    const sizes = tag === 3 ? [4, 8] : [1, 2, 3, 4];
    if (!sizes.includes(bytesPerSample))
      throw new InvalidAudioError(
        `The WAV header declares ${declared}: ${tag === 3 ? 'float samples have 32 or 64 bits' : 'integer samples have 8-32 bits'}.`,
      );
    // A frame is one sample of each channel: any other alignment makes the data chunk's length mean another duration.
    if (blockAlign !== channels * bytesPerSample)
      throw new InvalidAudioError(
        `The WAV header declares ${declared} in blocks of ${blockAlign} bytes, not ${channels * bytesPerSample}.`,
      );
  } else if (blockAlign < 1) {
    throw new InvalidAudioError(`The WAV header declares ${declared} in blocks of 0 bytes.`);
  }
  return format;
}

/** The size of the ID3v2 tag at the start of `head` (header, frames, footer), or 0 when there is none. */
export function id3TagSize(head: Uint8Array): number {
  if (head.length < 10 || head[0] !== 0x49 || head[1] !== 0x44 || head[2] !== 0x33) return 0;
  const syncsafe = ((head[6]! & 0x7f) << 21) | ((head[7]! & 0x7f) << 14) | ((head[8]! & 0x7f) << 7) | (head[9]! & 0x7f);
  return 10 + syncsafe + ((head[5]! & 0x10) !== 0 ? 10 : 0);
}

/**
 * The lowest bitrate (bytes per second) of the MPEG audio whose frame header is at `at`, or undefined when there
 * is none: MPEG-1 frames have at least 32 kbit/s; MPEG-2 and 2.5 frames of layers II and III 8 kbit/s. A free-format
 * frame (no bitrate in its header) is refused: nothing bounds how long its bytes last.
 */
function mpegFloor(bytes: Uint8Array, at: number): number | undefined {
  const [b0, b1, b2] = [bytes[at]!, bytes[at + 1]!, bytes[at + 2]!];
  if (b0 !== 0xff || (b1 & 0xe0) !== 0xe0) return undefined;
  const version = (b1 >> 3) & 3; // 0: MPEG-2.5, 1: reserved, 2: MPEG-2, 3: MPEG-1
  const layer = (b1 >> 1) & 3; // 0: reserved, 1: III, 2: II, 3: I
  const bitrate = b2 >> 4;
  if (version === 1 || layer === 0 || bitrate === 15 || ((b2 >> 2) & 3) === 3) return undefined;
  if (bitrate === 0) throw new InvalidAudioError('The MP3 file is free-format (its frames declare no bitrate).');
  return version === 3 || layer === 3 ? 4000 : 1000;
}

/** The MP3's floor from its first frame, or undefined while it has not arrived. Scans past an ID3 tag and padding. */
function readMp3Floor(head: Uint8Array, complete: boolean): number | undefined {
  const tag = id3TagSize(head);
  // A tag larger than the window (cover art) hides the first frame: the 8 kbit/s floor holds for any MPEG audio.
  if (tag + 4 > MAX_HEADER_BYTES) return FLOOR_BYTES_PER_SECOND;
  for (let at = tag; at + 4 <= head.length && at < tag + 64 * 1024; at++) {
    const floor = mpegFloor(head, at);
    if (floor !== undefined) return floor;
  }
  if (complete || head.length >= Math.min(MAX_HEADER_BYTES, tag + 64 * 1024))
    throw new InvalidAudioError('The MP3 file has no MPEG audio frame after its header.');
  return undefined;
}

/**
 * The header of a file of `format` that starts with `head`, or undefined while more of it is needed (at most
 * MAX_HEADER_BYTES; `complete` when the file ends with `head`). Throws InvalidAudioError for an absurd one.
 */
export function readAudioHeader(format: AudioFormat, head: Uint8Array, complete = false): AudioHeader | undefined {
  if (format === 'wav') {
    const wav = readWavHeader(head, complete);
    if (!wav) return undefined;
    const { format: sample } = wav;
    return {
      format,
      wav,
      minBytesPerSecond: isPcm(sample) ? sample.sampleRate * sample.blockAlign : FLOOR_BYTES_PER_SECOND,
    };
  }
  if (format === 'mp3') {
    const floor = readMp3Floor(head, complete);
    return floor === undefined ? undefined : { format, minBytesPerSecond: floor };
  }
  return { format, minBytesPerSecond: FLOOR_BYTES_PER_SECOND };
}

/**
 * The longest a file of `fileBytes` with this header can play, in seconds (fractional); InvalidAudioError past
 * AUDIO_BOUNDS.maxSeconds. A WAV's data is what its chunk declares, cut to what the file holds.
 */
export function maxAudioSeconds(header: AudioHeader, fileBytes: number): number {
  const audioBytes = header.wav
    ? Math.max(0, Math.min(header.wav.dataBytes ?? Infinity, fileBytes - header.wav.dataOffset))
    : fileBytes;
  const seconds = audioBytes / header.minBytesPerSecond;
  if (seconds > AUDIO_BOUNDS.maxSeconds) {
    throw new InvalidAudioError(
      `The file can last ${Math.round(seconds / 360) / 10} hours by its header; at most ${AUDIO_BOUNDS.maxSeconds / 3600} hours are accepted.`,
    );
  }
  return seconds;
}
