/**
 * A streaming reader of RIFF/WAVE files: integer PCM of 8, 16, 24 or 32 bits and 32/64-bit float, any number
 * of channels, plain or WAVE_FORMAT_EXTENSIBLE. It turns each piece of the file into mono samples as it
 * arrives, holding at most one partial sample frame and the header.
 */
export class InvalidAudioError extends Error {}

const MAX_HEADER_BYTES = 1 << 20;

interface Format {
  float: boolean;
  channels: number;
  sampleRate: number;
  bytesPerSample: number;
  blockAlign: number;
}

export class WavReader {
  private header: Buffer = Buffer.alloc(0);
  private format?: Format;
  private dataLeft = Infinity;
  private carry: Buffer = Buffer.alloc(0);

  /** The mono samples of the next piece of the file (empty while the header is still arriving). */
  push(piece: Uint8Array): { samples: Float32Array; sampleRate: number } {
    let bytes = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    if (!this.format) {
      this.header = Buffer.concat([this.header, bytes]);
      const data = this.parseHeader();
      if (data === undefined) {
        if (this.header.length > MAX_HEADER_BYTES) throw new InvalidAudioError('The WAV file has no data chunk in its first MiB.');
        return { samples: new Float32Array(0), sampleRate: 0 };
      }
      bytes = this.header.subarray(data);
      this.header = Buffer.alloc(0);
    }
    const format = this.format!;
    if (bytes.length > this.dataLeft) bytes = bytes.subarray(0, this.dataLeft);
    this.dataLeft -= bytes.length;
    const all = this.carry.length > 0 ? Buffer.concat([this.carry, bytes]) : bytes;
    const frames = Math.floor(all.length / format.blockAlign);
    this.carry = Buffer.from(all.subarray(frames * format.blockAlign));
    const samples = new Float32Array(frames);
    for (let frame = 0; frame < frames; frame++) {
      let sum = 0;
      for (let channel = 0; channel < format.channels; channel++) sum += this.sample(all, frame * format.blockAlign + channel * format.bytesPerSample);
      samples[frame] = sum / format.channels;
    }
    return { samples, sampleRate: format.sampleRate };
  }

  /** Ends the file: a file whose header never completed is not a WAV file. */
  finish(): void {
    if (!this.format) throw new InvalidAudioError('The WAV file ends before its data chunk.');
  }

  private sample(bytes: Buffer, at: number): number {
    const { float, bytesPerSample } = this.format!;
    if (float) return bytesPerSample === 4 ? bytes.readFloatLE(at) : bytes.readDoubleLE(at);
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

  /** The offset of the data chunk's first byte once the header up to it has arrived. */
  private parseHeader(): number | undefined {
    const header = this.header;
    if (header.length < 12) return undefined;
    if (header.toString('latin1', 0, 4) !== 'RIFF' || header.toString('latin1', 8, 12) !== 'WAVE') throw new InvalidAudioError('The file is not a RIFF/WAVE file.');
    let at = 12;
    while (at + 8 <= header.length) {
      const id = header.toString('latin1', at, at + 4);
      const size = header.readUInt32LE(at + 4);
      if (id === 'data') {
        if (!this.format) throw new InvalidAudioError('The WAV file has its data chunk before its fmt chunk.');
        // 0 and 0xFFFFFFFF: written by a streaming encoder that did not know the length; read to the end.
        this.dataLeft = size === 0 || size === 0xffffffff ? Infinity : size;
        return at + 8;
      }
      if (at + 8 + size > header.length) return undefined;
      if (id === 'fmt ') this.format = readFormat(header.subarray(at + 8, at + 8 + size));
      at += 8 + size + (size % 2);
    }
    return undefined;
  }
}

function readFormat(chunk: Buffer): Format {
  if (chunk.length < 16) throw new InvalidAudioError('The WAV fmt chunk is too short.');
  let tag = chunk.readUInt16LE(0);
  if (tag === 0xfffe && chunk.length >= 26) tag = chunk.readUInt16LE(24); // WAVE_FORMAT_EXTENSIBLE: the sub-format GUID's first two bytes
  const channels = chunk.readUInt16LE(2);
  const sampleRate = chunk.readUInt32LE(4);
  const blockAlign = chunk.readUInt16LE(12);
  const bits = chunk.readUInt16LE(14);
  const float = tag === 3;
  if (tag !== 1 && tag !== 3) throw new InvalidAudioError(`The WAV file is encoded with format ${tag}; dev-stt reads PCM and IEEE float WAV only.`);
  const bytesPerSample = Math.ceil(bits / 8);
  const valid = float ? bytesPerSample === 4 || bytesPerSample === 8 : bytesPerSample >= 1 && bytesPerSample <= 4;
  if (!valid || channels < 1 || sampleRate < 1 || blockAlign < channels * bytesPerSample) {
    throw new InvalidAudioError(`The WAV format is not readable (${channels} channels, ${sampleRate} Hz, ${bits} bits).`);
  }
  return { float, channels, sampleRate, bytesPerSample, blockAlign };
}

/** A WAV file (16-bit PCM, mono) of `samples` in [-1, 1]: the dev-tts pipeline and the tests build them. */
export function wavFile(samples: Float32Array | Int16Array, sampleRate: number): Buffer {
  const pcm = samples instanceof Int16Array ? samples : Int16Array.from(samples, (value) => Math.max(-32768, Math.min(32767, Math.round(value * 32767))));
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
