import fs from 'node:fs';
import path from 'node:path';
import type { Mp3Encoder } from '@breezystack/lamejs';
import type { FLACDecoder } from '@wasm-audio-decoders/flac';
import type { OggVorbisDecoder } from '@wasm-audio-decoders/ogg-vorbis';
import type { MPEGDecoder } from 'mpg123-decoder';

/**
 * The audio codecs of the dev vendor ship as ES modules with browser bundles beside them, and this
 * service is CommonJS: `@breezystack/lamejs`'s `require` entry is an IIFE that only declares a global
 * `var lamejs`, and `mpg123-decoder`, `@wasm-audio-decoders/flac` and `@wasm-audio-decoders/ogg-vorbis` have no
 * CommonJS entry at all (each UMD bundle, its WebAssembly inlined, sits in an ESM package, so Node refuses to
 * `require` it). Each bundle is evaluated here as the script it is, once, on first use; the types still come from
 * the packages.
 */
function evaluateBundle<T>(file: string, epilogue: string): T {
  const code = fs.readFileSync(file, 'utf8');
  const module = { exports: {} as Record<string, unknown> };
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- a published bundle, read from node_modules
  return new Function('exports', 'require', 'module', `${code}\n${epilogue}`).call(
    {},
    module.exports,
    require,
    module,
  ) as T;
}

let lame: { Mp3Encoder: typeof Mp3Encoder } | undefined;
let mpg123: { MPEGDecoder: typeof MPEGDecoder } | undefined;

export function lamejs(): { Mp3Encoder: typeof Mp3Encoder } {
  return (lame ??= evaluateBundle<{ Mp3Encoder: typeof Mp3Encoder }>(
    require.resolve('@breezystack/lamejs'),
    'return lamejs;',
  ));
}

export function mpg123Decoder(): { MPEGDecoder: typeof MPEGDecoder } {
  return (mpg123 ??= evaluateBundle<{ MPEGDecoder: typeof MPEGDecoder }>(
    path.join(path.dirname(require.resolve('mpg123-decoder')), 'dist/mpg123-decoder.min.js'),
    'return module.exports;',
  ));
}

let flac: { FLACDecoder: typeof FLACDecoder } | undefined;
let oggVorbis: { OggVorbisDecoder: typeof OggVorbisDecoder } | undefined;

export function flacDecoder(): { FLACDecoder: typeof FLACDecoder } {
  return (flac ??= evaluateBundle<{ FLACDecoder: typeof FLACDecoder }>(
    path.join(path.dirname(require.resolve('@wasm-audio-decoders/flac')), 'dist/flac-decoder.min.js'),
    'return module.exports;',
  ));
}

export function oggVorbisDecoder(): { OggVorbisDecoder: typeof OggVorbisDecoder } {
  return (oggVorbis ??= evaluateBundle<{ OggVorbisDecoder: typeof OggVorbisDecoder }>(
    path.join(path.dirname(require.resolve('@wasm-audio-decoders/ogg-vorbis')), 'dist/ogg-vorbis-decoder.min.js'),
    'return module.exports;',
  ));
}
