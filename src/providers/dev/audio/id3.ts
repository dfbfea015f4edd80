/**
 * The ID3v2 `USLT` frame (unsynchronised lyrics/text transcription): dev-tts writes the text it spoke into it,
 * dev-stt reads it back. Writing makes an ID3v2.4 tag with one UTF-8 frame; reading accepts ID3v2.3 and 2.4
 * tags as other tools write them (all four text encodings).
 */
import { id3TagSize } from '../../../audio/audio-header';

const HEADER_BYTES = 10;

const syncsafe = (value: number) =>
  Buffer.from([(value >> 21) & 0x7f, (value >> 14) & 0x7f, (value >> 7) & 0x7f, value & 0x7f]);
const readSyncsafe = (bytes: Uint8Array, at: number) =>
  ((bytes[at]! & 0x7f) << 21) |
  ((bytes[at + 1]! & 0x7f) << 14) |
  ((bytes[at + 2]! & 0x7f) << 7) |
  (bytes[at + 3]! & 0x7f);

/** An ID3v2.4 tag holding one USLT frame with `text` (language: ISO 639-2, e.g. `eng`). */
export function usltTag(text: string, language: string): Buffer {
  const content = Buffer.concat([
    Buffer.from([3]),
    Buffer.from(language.padEnd(3, ' ').slice(0, 3), 'latin1'),
    Buffer.from([0]),
    Buffer.from(text, 'utf8'),
  ]);
  const frame = Buffer.concat([Buffer.from('USLT', 'latin1'), syncsafe(content.length), Buffer.from([0, 0]), content]);
  return Buffer.concat([Buffer.from('ID3', 'latin1'), Buffer.from([4, 0, 0]), syncsafe(frame.length), frame]);
}

/** The first USLT frame of a complete ID3v2.3/2.4 tag (`tag` from the file's start), if any. */
export function readUslt(tag: Uint8Array): { text: string; language: string } | undefined {
  const version = tag[3];
  if (id3TagSize(tag) === 0 || (version !== 3 && version !== 4)) return undefined;
  const end = Math.min(tag.length, HEADER_BYTES + readSyncsafe(tag, 6));
  let at = HEADER_BYTES;
  if ((tag[5]! & 0x40) !== 0)
    at += version === 4 ? readSyncsafe(tag, at) : 4 + Buffer.from(tag.subarray(at, at + 4)).readUInt32BE(0);
  while (at + HEADER_BYTES <= end) {
    const id = Buffer.from(tag.subarray(at, at + 4)).toString('latin1');
    if (!/^[A-Z0-9]{4}$/.test(id)) break; // padding
    const size = version === 4 ? readSyncsafe(tag, at + 4) : Buffer.from(tag.subarray(at + 4, at + 8)).readUInt32BE(0);
    const body = tag.subarray(at + HEADER_BYTES, Math.min(end, at + HEADER_BYTES + size));
    if (id === 'USLT' && body.length >= 4) return decodeUslt(body);
    at += HEADER_BYTES + size;
  }
  return undefined;
}

function decodeUslt(body: Uint8Array): { text: string; language: string } {
  const encoding = body[0]!;
  const language = Buffer.from(body.subarray(1, 4)).toString('latin1');
  const rest = Buffer.from(body.subarray(4));
  const wide = encoding === 1 || encoding === 2;
  // The content descriptor ends with a terminator of the encoding's width.
  let split = -1;
  for (let i = 0; i + (wide ? 1 : 0) < rest.length; i += wide ? 2 : 1) {
    if (rest[i] === 0 && (!wide || rest[i + 1] === 0)) {
      split = i + (wide ? 2 : 1);
      break;
    }
  }
  const text = split < 0 ? Buffer.alloc(0) : rest.subarray(split);
  return { text: decodeText(text, encoding).replace(/\0+$/, ''), language };
}

function decodeText(bytes: Buffer, encoding: number): string {
  switch (encoding) {
    case 0:
      return bytes.toString('latin1');
    case 1: {
      if (bytes[0] === 0xfe && bytes[1] === 0xff) return swapToLe(bytes.subarray(2)).toString('utf16le');
      return (bytes[0] === 0xff && bytes[1] === 0xfe ? bytes.subarray(2) : bytes).toString('utf16le');
    }
    case 2:
      return swapToLe(bytes).toString('utf16le');
    default:
      return bytes.toString('utf8');
  }
}

function swapToLe(bytes: Buffer): Buffer {
  const copy = Buffer.from(bytes.subarray(0, bytes.length - (bytes.length % 2)));
  return copy.swap16();
}
