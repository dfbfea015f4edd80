import type { AudioFormat } from '../providers/provider';

/**
 * The upload's format from its first bytes, and whether its extension agrees (spec "Audio": flac, m4a, mp3,
 * mp4, mpeg, mpga, oga, ogg, wav, webm). A file is accepted only when both name the same family, so a
 * renamed text file or a WAV called `.mp3` is a clear 400 instead of a vendor's puzzling one.
 */
export const AUDIO_EXTENSIONS = ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm'] as const;

/** The formats each extension may hold. `.mpeg` is MPEG audio or an MPEG program stream; `.mp4`/`.m4a` an ISO media file. */
const FORMATS_OF: Readonly<Record<(typeof AUDIO_EXTENSIONS)[number], readonly AudioFormat[]>> = {
  flac: ['flac'],
  m4a: ['mp4'],
  mp3: ['mp3'],
  mp4: ['mp4'],
  mpeg: ['mp3', 'mpeg'],
  mpga: ['mp3'],
  oga: ['ogg'],
  ogg: ['ogg'],
  wav: ['wav'],
  webm: ['webm'],
};

export const MEDIA_TYPES: Readonly<Record<AudioFormat, string>> = {
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  flac: 'audio/flac',
  ogg: 'audio/ogg',
  mp4: 'audio/mp4',
  webm: 'audio/webm',
  mpeg: 'video/mpeg',
};

/** Bytes needed to tell the formats apart (an ID3 tag is skipped by its declared size, up to 1 MiB). */
export const SNIFF_BYTES = 16;

/** The format of a file starting with `head` (at least SNIFF_BYTES, or the whole file), or undefined. */
export function sniffAudioFormat(head: Uint8Array): AudioFormat | undefined {
  const ascii = (from: number, to: number) => Buffer.from(head.subarray(from, to)).toString('latin1');
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WAVE') return 'wav';
  if (ascii(0, 4) === 'fLaC') return 'flac';
  if (ascii(0, 4) === 'OggS') return 'ogg';
  if (ascii(4, 8) === 'ftyp') return 'mp4';
  if (head[0] === 0x1a && head[1] === 0x45 && head[2] === 0xdf && head[3] === 0xa3) return 'webm';
  // ID3v2 precedes MP3 (and sometimes FLAC) audio; an MP3 frame starts with 11 set sync bits and a valid layer.
  if (ascii(0, 3) === 'ID3') return 'mp3';
  if (head[0] === 0xff && ((head[1] ?? 0) & 0xe0) === 0xe0 && ((head[1] ?? 0) & 0x06) !== 0) return 'mp3';
  if (head[0] === 0 && head[1] === 0 && head[2] === 1 && (head[3] === 0xba || head[3] === 0xb3)) return 'mpeg';
  return undefined;
}

export type FileCheck = { ok: true; format: AudioFormat } | { ok: false; message: string };

/** Checks the name's extension and the content against each other. */
export function checkAudioFile(filename: string, head: Uint8Array): FileCheck {
  const extension = /\.([A-Za-z0-9]+)$/.exec(filename)?.[1]?.toLowerCase();
  if (!extension || !(extension in FORMATS_OF)) {
    return {
      ok: false,
      message: `The file "${filename}" has no supported extension (${AUDIO_EXTENSIONS.join(', ')}).`,
    };
  }
  const format = sniffAudioFormat(head);
  if (!format)
    return {
      ok: false,
      message: `The content of "${filename}" is not audio in a supported format (${AUDIO_EXTENSIONS.join(', ')}).`,
    };
  if (!FORMATS_OF[extension as keyof typeof FORMATS_OF].includes(format)) {
    return {
      ok: false,
      message: `The content of "${filename}" is ${format.toUpperCase()}, not what its .${extension} extension says.`,
    };
  }
  return { ok: true, format };
}
