import { InvalidAudioError, isPcm, readWavHeader, type WavFormat } from '../../../audio/audio-header';

/**
 * A streaming reader of RIFF/WAVE files: integer PCM of 8, 16, 24 or 32 bits and 32/64-bit float, any number
 * of channels within the header bounds (audio-header.ts), plain or WAVE_FORMAT_EXTENSIBLE. It turns each piece
 * of the file into mono samples as it arrives, holding at most one partial sample frame and the header.
 */
export class WavReader {
  private header: Buffer = Buffer.alloc(0);
  private format?: WavFormat;
  private dataLeft = Infinity;
  private carry: Buffer = Buffer.alloc(0);

  /** The mono samples of the next piece of the file (empty while the header is still arriving). */
  push(piece: Uint8Array): { samples: Float32Array; sampleRate: number } {
    let bytes = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    if (!this.format) {
      this.header = Buffer.concat([this.header, bytes]);
      const wav = readWavHeader(this.header);
      if (!wav) return { samples: new Float32Array(0), sampleRate: 0 };
      if (!isPcm(wav.format))
        throw new InvalidAudioError(
          `The WAV file is encoded with format ${wav.format.tag}; dev-stt reads PCM and IEEE float WAV only.`,
        );
      this.format = wav.format;
      this.dataLeft = wav.dataBytes ?? Infinity;
      bytes = this.header.subarray(wav.dataOffset);
      this.header = Buffer.alloc(0);
    }
    const format = this.format;
    if (bytes.length > this.dataLeft) bytes = bytes.subarray(0, this.dataLeft);
    this.dataLeft -= bytes.length;
    const all = this.carry.length > 0 ? Buffer.concat([this.carry, bytes]) : bytes;
    const frames = Math.floor(all.length / format.blockAlign);
    this.carry = Buffer.from(all.subarray(frames * format.blockAlign));
    const samples = new Float32Array(frames);
    for (let frame = 0; frame < frames; frame++) {
      let sum = 0;
      for (let channel = 0; channel < format.channels; channel++)
        sum += this.sample(all, frame * format.blockAlign + channel * format.bytesPerSample);
      samples[frame] = sum / format.channels;
    }
    return { samples, sampleRate: format.sampleRate };
  }

  /** Ends the file: a file whose header never completed is not a WAV file. */
  finish(): void {
    if (!this.format) readWavHeader(this.header, true);
  }

  private sample(bytes: Buffer, at: number): number {
    const { tag, bytesPerSample } = this.format!;
    if (tag === 3) return bytesPerSample === 4 ? bytes.readFloatLE(at) : bytes.readDoubleLE(at);
    switch (bytesPerSample) {
      case 1:
        return (bytes[at]! - 128) / 128;
      case 2:
        return bytes.readInt16LE(at) / 32768;
      case 3:
        return bytes.readIntLE(at, 3) / 8388608;
      default:
        return bytes.readInt32LE(at) / 2147483648;
    }
  }
}

/** A WAV file (16-bit PCM, mono) of `samples` in [-1, 1]: the dev-tts pipeline and the tests build them. */
export function wavFile(samples: Float32Array | Int16Array, sampleRate: number): Buffer {
  const pcm =
    samples instanceof Int16Array
      ? samples
      : Int16Array.from(samples, (value) => Math.max(-32768, Math.min(32767, Math.round(value * 32767))));
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + pcm.byteLength, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(pcm.byteLength, 40);
  return Buffer.concat([header, Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength)]);
}
