/**
 * An energy-based voice-activity pass over decoded audio, fed in pieces so that memory does not grow with the
 * file: it keeps one number per 10 ms window (a 30-minute file: 180,000 numbers), not the samples, and a histogram
 * of them in 0.01 dB steps for the percentiles (sorting the levels of an eight-hour file took half a second of
 * the event loop).
 *
 * A window is speech when its level is above a threshold set from the file itself: 15 dB over its noise floor
 * (the 10th percentile of window levels), at most 25 dB under its loud parts (the 95th percentile), and never
 * under -50 dBFS. Speech windows closer than 300 ms form one segment (the pauses between words); segments
 * shorter than 60 ms are dropped (clicks).
 */
export interface SpeechSegment {
  start: number;
  end: number;
}

const WINDOW_SECONDS = 0.01;
const MERGE_GAP_SECONDS = 0.3;
const MIN_SEGMENT_SECONDS = 0.06;
const ABSOLUTE_FLOOR_DB = -50;
/** The histogram's range and step: silence is -120 dB (the 1e-12 below), full scale 0 dB; float samples may exceed it. */
const HISTOGRAM_FLOOR_DB = -120;
const HISTOGRAM_CEILING_DB = 40;
const HISTOGRAM_STEP_DB = 0.01;

export class SpeechActivity {
  private windowSamples = 0;
  private sampleRate = 0;
  private sum = 0;
  private filled = 0;
  private samples = 0;
  private readonly levels: number[] = [];
  private readonly histogram = new Uint32Array(
    Math.ceil((HISTOGRAM_CEILING_DB - HISTOGRAM_FLOOR_DB) / HISTOGRAM_STEP_DB) + 1,
  );

  /** Mono samples in [-1, 1] at `sampleRate` (the first call's rate is kept). */
  push(mono: Float32Array, sampleRate: number): void {
    if (this.sampleRate === 0) {
      this.sampleRate = sampleRate;
      this.windowSamples = Math.max(1, Math.round(sampleRate * WINDOW_SECONDS));
    }
    for (let i = 0; i < mono.length; i++) {
      const sample = mono[i]!;
      this.sum += sample * sample;
      if (++this.filled === this.windowSamples) this.closeWindow();
    }
    this.samples += mono.length;
  }

  get durationSeconds(): number {
    return this.sampleRate === 0 ? 0 : this.samples / this.sampleRate;
  }

  /** The speech segments, in seconds (rounded to milliseconds). */
  segments(): SpeechSegment[] {
    if (this.filled > 0) this.closeWindow();
    const { levels } = this;
    if (levels.length === 0) return [];
    const floor = this.percentile(0.1);
    const loud = this.percentile(0.95);
    const threshold = Math.max(ABSOLUTE_FLOOR_DB, Math.min(floor + 15, loud - 25));
    const windowSeconds = this.windowSamples / this.sampleRate;
    const gap = Math.round(MERGE_GAP_SECONDS / windowSeconds);
    const segments: Array<{ first: number; last: number }> = [];
    for (let index = 0; index < levels.length; index++) {
      if (levels[index]! <= threshold) continue;
      const open = segments[segments.length - 1];
      if (open && index - open.last <= gap) open.last = index;
      else segments.push({ first: index, last: index });
    }
    const end = this.durationSeconds;
    return segments
      .map(({ first, last }) => ({
        start: round(first * windowSeconds),
        end: round(Math.min(end, (last + 1) * windowSeconds)),
      }))
      .filter((segment) => segment.end - segment.start >= MIN_SEGMENT_SECONDS);
  }

  private closeWindow(): void {
    const meanSquare = this.sum / this.filled;
    const level = 10 * Math.log10(meanSquare + 1e-12);
    this.levels.push(level);
    this.histogram[this.bin(level)]! += 1;
    this.sum = 0;
    this.filled = 0;
  }

  private bin(level: number): number {
    return Math.max(
      0,
      Math.min(this.histogram.length - 1, Math.round((level - HISTOGRAM_FLOOR_DB) / HISTOGRAM_STEP_DB)),
    );
  }

  /** The level below which a `fraction` of the windows lie, to the histogram's step. */
  private percentile(fraction: number): number {
    const rank = Math.floor((this.levels.length - 1) * fraction);
    let seen = 0;
    for (let bin = 0; bin < this.histogram.length; bin++) {
      seen += this.histogram[bin]!;
      if (seen > rank) return HISTOGRAM_FLOOR_DB + bin * HISTOGRAM_STEP_DB;
    }
    return HISTOGRAM_CEILING_DB;
  }
}

const round = (seconds: number) => Math.round(seconds * 1000) / 1000;

/** The mean of the channels, as one buffer. */
export function mixDown(channels: Float32Array[], length: number): Float32Array {
  if (channels.length === 1) return channels[0]!.subarray(0, length);
  const mono = new Float32Array(length);
  for (const channel of channels) for (let i = 0; i < length; i++) mono[i]! += channel[i]! / channels.length;
  return mono;
}
