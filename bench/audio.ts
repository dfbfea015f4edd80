import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { wavFile } from '../src/providers/dev/audio/wav-reader';
import { environmentFacts, percentile, round, startBenchStack, writeReport } from './support';

/**
 * Transcription uploads under load: `concurrency` clients each upload a WAV of `megabytes` MiB (just under the
 * 25 MiB limit) to `model` at once, `rounds` times. Reports the upload throughput (MiB/s of request bodies
 * answered), per-upload latency, and the service's resident memory over its idle size, sampled every 20 ms
 * from /proc: busboy streams the file to a temporary file (and, for an asynchronous model, into database
 * chunks), so memory must not grow with the file size (target: ≤ 150 MB over idle with 20 × 25 MiB).
 */
export async function runAudioBench(options: {
  pglite: boolean;
  postgresUrl: string;
  concurrency: number;
  megabytes: number;
  rounds: number;
  model: string;
  output: string;
}) {
  const stack = await startBenchStack({ pin: false, pglite: options.pglite, postgresUrl: options.postgresUrl });
  try {
    const pid = stack.service.child.pid!;
    const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
    // A 16 kHz mono WAV of tone bursts: real audio for dev-stt to decode, `megabytes` long.
    const sampleRate = 16_000;
    const samples = new Float32Array(Math.floor((options.megabytes * 1024 * 1024 - 44) / 2));
    for (let i = 0; i < samples.length; i++)
      samples[i] = Math.floor(i / sampleRate) % 3 === 0 ? 0 : 0.4 * Math.sin((2 * Math.PI * 300 * i) / sampleRate);
    const file = new Blob([wavFile(samples, sampleRate)]);

    const upload = async () => {
      const form = new FormData();
      form.append('model', options.model);
      form.append('file', file, 'bench.wav');
      const started = performance.now();
      const reply = await fetch(`${stack.base}/v2/audio/transcription`, {
        method: 'POST',
        headers: { 'x-auth-token': stack.key },
        body: form,
      });
      const body = (await reply.json()) as { duration?: number; status?: string };
      if (reply.status !== 200) throw new Error(`upload answered ${reply.status}: ${JSON.stringify(body)}`);
      return performance.now() - started;
    };

    // Warm-up (code paths, connections), then the idle size.
    await upload();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const idle = rssMb();
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb())), 20);
    const latencies: number[] = [];
    const started = performance.now();
    for (let round = 0; round < options.rounds; round++) {
      latencies.push(...(await Promise.all(Array.from({ length: options.concurrency }, upload))));
    }
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    latencies.sort((a, b) => a - b);
    const uploads = options.concurrency * options.rounds;
    const report = {
      benchmark: 'audio-upload',
      environment: environmentFacts(),
      backend: stack.backend,
      model: options.model,
      concurrency: options.concurrency,
      fileMiB: round(file.size / 1024 / 1024, 2),
      uploads,
      seconds: round(seconds, 2),
      throughputMiBps: round((uploads * file.size) / 1024 / 1024 / seconds, 1),
      latencyMs: {
        p50: round(percentile(latencies, 0.5), 0),
        p99: round(percentile(latencies, 0.99), 0),
        max: round(latencies[latencies.length - 1]!, 0),
      },
      rssMb: { idle: round(idle, 1), peak: round(peak, 1), overIdle: round(peak - idle, 1), target: 150 },
    };
    writeReport(options.output, report);
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await stack.stop();
  }
}
