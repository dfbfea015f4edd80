import type { AudioFormat } from '../providers/provider';

/**
 * What an upload's header says about its audio, read before anything decodes it: a header is all an attacker
 * needs to write to make a decoder do absurd work (a WAV declaring 1 Hz turns 25 MB into 290 days of audio, one
 * analysis window per sample), so absurd headers are refused here, and the longest the file can play, which
 * bounds the billing hold and the charge, comes from the header and the file's size, never from a decoder.
 *
 * WAV is read exactly (format and data size). MP3 has no duration in its header: the first frame's MPEG version
 * gives the lowest bitrate its frames can have, and so the longest the bytes can last. FLAC declares its length in
 * its STREAMINFO, and an Ogg stream its end in its last page's granule position; both are checked for what FLAC,
 * Vorbis and Opus allow. Other formats are bounded by 8 kbit/s, below every speech codec in use.
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

/** A FLAC file's STREAMINFO (the first metadata block, which every FLAC file has). */
export interface FlacStreamInfo {
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  /** The largest block (samples per channel in a frame) the stream has. */
  maxBlockSize: number;
  /** The samples per channel of the whole stream; 0 when the encoder did not know it (a stream written on the fly). */
  totalSamples: number;
}

/** An Ogg file's first stream, from its identification header: Vorbis or Opus. */
export interface OggStreamInfo {
  codec: 'vorbis' | 'opus';
  serial: number;
  channels: number;
  /** The rate its granule positions count in: Vorbis's own, 48 kHz for Opus. */
  granuleRate: number;
  /** Opus: the samples at the start that are not played. */
  preSkip: number;
}

/** What the header bounds: the bytes of audio per second at the least. */
export type AudioHeader = {
  format: AudioFormat;
  minBytesPerSecond: number;
  wav?: WavHeader;
  flac?: FlacStreamInfo;
  ogg?: OggStreamInfo;
};

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

/** Bytes a FLAC frame has at the least (header, a constant subframe, CRC): what bounds a stream of unknown length. */
const FLAC_MIN_FRAME_BYTES = 10;

/**
 * The STREAMINFO of the FLAC file starting with `head` ("fLaC", then STREAMINFO, which must come first), or undefined
 * while it has not arrived. Throws InvalidAudioError for one out of AUDIO_BOUNDS or not what FLAC allows.
 */
export function readFlacStreamInfo(head: Uint8Array, complete = false): FlacStreamInfo | undefined {
  if (head.length < 42) {
    if (complete) throw new InvalidAudioError('The FLAC file ends before its STREAMINFO block.');
    return undefined;
  }
  const bytes = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  if (bytes.toString('latin1', 0, 4) !== 'fLaC') throw new InvalidAudioError('The file is not a FLAC file.');
  if ((bytes[4]! & 0x7f) !== 0 || bytes.readUIntBE(5, 3) !== 34)
    throw new InvalidAudioError('The FLAC file does not start with its STREAMINFO block.');
  const minBlockSize = bytes.readUInt16BE(8);
  const maxBlockSize = bytes.readUInt16BE(10);
  // 20 bits of sample rate, 3 of channels − 1, 5 of bits per sample − 1, 36 of total samples.
  const packed = bytes.readBigUInt64BE(18);
  const sampleRate = Number(packed >> 44n);
  const channels = Number((packed >> 41n) & 0x7n) + 1;
  const bitsPerSample = Number((packed >> 36n) & 0x1fn) + 1;
  const totalSamples = Number(packed & 0xfffffffffn);
  const declared = `${channels} channel(s), ${sampleRate} Hz, ${bitsPerSample} bits`;
  const { minSampleRate, maxSampleRate, maxChannels } = AUDIO_BOUNDS;
  if (sampleRate < minSampleRate || sampleRate > maxSampleRate)
    throw new InvalidAudioError(
      `The FLAC header declares ${declared}: the sample rate must be ${minSampleRate}-${maxSampleRate} Hz.`,
    );
  if (channels > maxChannels)
    throw new InvalidAudioError(`The FLAC header declares ${declared}: it must have 1-${maxChannels} channels.`);
  if (bitsPerSample < 4) throw new InvalidAudioError(`The FLAC header declares ${declared}: samples have 4-32 bits.`);
  if (minBlockSize < 16 || maxBlockSize < minBlockSize)
    throw new InvalidAudioError(
      `The FLAC header declares blocks of ${minBlockSize}-${maxBlockSize} samples: FLAC's are 16-65535, the least first.`,
    );
  return { sampleRate, channels, bitsPerSample, maxBlockSize, totalSamples };
}

/**
 * The first stream of the Ogg file starting with `head`, from the identification header on its first page (Vorbis
 * or Opus: the codecs of speech in Ogg), or undefined while that page has not arrived. Throws InvalidAudioError for
 * another codec, or a header out of AUDIO_BOUNDS.
 */
export function readOggStreamInfo(head: Uint8Array, complete = false): OggStreamInfo | undefined {
  const bytes = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  const more = () => {
    if (complete) throw new InvalidAudioError('The Ogg file ends before its first page does.');
    return undefined;
  };
  if (bytes.length < 27) return more();
  if (bytes.toString('latin1', 0, 4) !== 'OggS' || bytes[4] !== 0)
    throw new InvalidAudioError('The file is not an Ogg file (version 0).');
  if ((bytes[5]! & 0x02) === 0) throw new InvalidAudioError('The Ogg file does not start with a stream.');
  const segments = bytes[26]!;
  if (bytes.length < 27 + segments) return more();
  let size = 0;
  for (let index = 0; index < segments; index++) size += bytes[27 + index]!;
  const start = 27 + segments;
  if (bytes.length < start + size) return more();
  const packet = bytes.subarray(start, start + size);
  const serial = bytes.readUInt32LE(14);
  const { minSampleRate, maxSampleRate, maxChannels } = AUDIO_BOUNDS;
  if (packet.length >= 30 && packet[0] === 1 && packet.toString('latin1', 1, 7) === 'vorbis') {
    const channels = packet[11]!;
    const sampleRate = packet.readUInt32LE(12);
    const [small, large] = [packet[28]! & 0x0f, packet[28]! >> 4];
    if (packet.readUInt32LE(7) !== 0 || (packet[29]! & 1) !== 1 || small < 6 || large > 13 || small > large)
      throw new InvalidAudioError('The Ogg Vorbis identification header is not valid.');
    if (sampleRate < minSampleRate || sampleRate > maxSampleRate)
      throw new InvalidAudioError(
        `The Ogg Vorbis header declares ${sampleRate} Hz: the sample rate must be ${minSampleRate}-${maxSampleRate} Hz.`,
      );
    if (channels < 1 || channels > maxChannels)
      throw new InvalidAudioError(
        `The Ogg Vorbis header declares ${channels} channels: 1-${maxChannels} are accepted.`,
      );
    return { codec: 'vorbis', serial, channels, granuleRate: sampleRate, preSkip: 0 };
  }
  if (packet.length >= 19 && packet.toString('latin1', 0, 8) === 'OpusHead') {
    const channels = packet[9]!;
    if (packet[8]! >> 4 !== 0)
      throw new InvalidAudioError(`The Ogg Opus header has version ${packet[8]}: 0.x is read.`);
    if (channels < 1 || channels > maxChannels)
      throw new InvalidAudioError(`The Ogg Opus header declares ${channels} channels: 1-${maxChannels} are accepted.`);
    return { codec: 'opus', serial, channels, granuleRate: 48_000, preSkip: packet.readUInt16LE(10) };
  }
  throw new InvalidAudioError('The Ogg file holds neither Vorbis nor Opus audio.');
}

/**
 * The granule position of the last audio page of stream `serial` in `tail` (the end of an Ogg file): where its audio
 * ends, in its granule rate; undefined when the tail has none.
 */
function lastGranule(tail: Uint8Array, serial: number): bigint | undefined {
  const bytes = Buffer.from(tail.buffer, tail.byteOffset, tail.byteLength);
  for (let at = bytes.length - 27; at >= 0; at--) {
    if (bytes[at] !== 0x4f || bytes.toString('latin1', at, at + 4) !== 'OggS' || bytes[at + 4] !== 0) continue;
    if (bytes.readUInt32LE(at + 14) !== serial) continue;
    // 0 on the header pages; -1 on a page where no packet ends.
    const granule = bytes.readBigInt64LE(at + 6);
    if (granule > 0n) return granule;
  }
  return undefined;
}

/** How much of an Ogg file's end `maxAudioSeconds` needs to find its last page (a page is at most 65,307 bytes). */
export const OGG_TAIL_BYTES = 65_307 * 2;

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
  if (format === 'flac') {
    const flac = readFlacStreamInfo(head, complete);
    if (!flac) return undefined;
    return { format, flac, minBytesPerSecond: (FLAC_MIN_FRAME_BYTES * flac.sampleRate) / flac.maxBlockSize };
  }
  if (format === 'ogg') {
    const ogg = readOggStreamInfo(head, complete);
    return ogg && { format, ogg, minBytesPerSecond: FLOOR_BYTES_PER_SECOND };
  }
  return { format, minBytesPerSecond: FLOOR_BYTES_PER_SECOND };
}

/**
 * The longest a file of `fileBytes` with this header can play, in seconds (fractional); InvalidAudioError past
 * AUDIO_BOUNDS.maxSeconds. A WAV's data is what its chunk declares, cut to what the file holds. A FLAC file plays what
 * its STREAMINFO declares (by its size when it declares no length: a frame of the largest block in the fewest bytes
 * FLAC allows); an Ogg file to the granule position of its last page, found in `tail` (its last OGG_TAIL_BYTES).
 * Compressed formats may lie: a decoder refuses audio longer than this, and a charge never exceeds it.
 */
export function maxAudioSeconds(header: AudioHeader, fileBytes: number, tail?: Uint8Array): number {
  const seconds = declaredSeconds(header, fileBytes, tail);
  if (seconds > AUDIO_BOUNDS.maxSeconds) {
    throw new InvalidAudioError(
      `The file can last ${Math.round(seconds / 360) / 10} hours by its header; at most ${AUDIO_BOUNDS.maxSeconds / 3600} hours are accepted.`,
    );
  }
  return seconds;
}

function declaredSeconds(header: AudioHeader, fileBytes: number, tail: Uint8Array | undefined): number {
  if (header.flac && header.flac.totalSamples > 0) return header.flac.totalSamples / header.flac.sampleRate;
  if (header.ogg) {
    const granule = tail && lastGranule(tail, header.ogg.serial);
    if (granule === undefined)
      throw new InvalidAudioError('The Ogg file has no audio page at its end that tells its length.');
    return Math.max(0, Number(granule) - header.ogg.preSkip) / header.ogg.granuleRate;
  }
  const audioBytes = header.wav
    ? Math.max(0, Math.min(header.wav.dataBytes ?? Infinity, fileBytes - header.wav.dataOffset))
    : fileBytes;
  return audioBytes / header.minBytesPerSecond;
}
