import { createDevProvider } from '../../../src/providers/dev/dev-provider';
import { readUslt, usltTag } from '../../../src/providers/dev/audio/id3';
import { audioInput as input, collectAudio as collect, toneWav } from '../../audio/audio-fixtures';

const provider = createDevProvider();

describe('dev audio models', () => {
  it('ID3 USLT: what is written is read back', () => {
    expect(readUslt(usltTag('Привет, мир', 'rus'))).toEqual({ text: 'Привет, мир', language: 'rus' });
  });

  it('dev-stt finds two tones separated by silence as two segments with their times, and the true duration', async () => {
    const wav = toneWav(3, [
      [0.5, 1.5],
      [2, 2.5],
    ]);
    const result = await provider.transcriptionModel!.transcribe({ model: 'dev-stt', audio: input(wav, 'wav', 777) });
    expect(result.durationSeconds).toBe(3);
    expect(result.segments.map(({ start, end }) => [start, end])).toEqual([
      [0.5, 1.5],
      [2, 2.5],
    ]);
    expect(result.text).toBe('');
    expect(result.notice).toMatch(/does not recognise words/);
  });

  it('dev-tts speaks MP3 that dev-stt decodes back to its words; longer text, longer audio', async () => {
    const short = await provider.speechModel!.synthesize({ model: 'dev-tts', voice: 'en-us', text: 'Hello there.' });
    const shortMp3 = await collect(short.audio);
    const long = await provider.speechModel!.synthesize({
      model: 'dev-tts',
      voice: 'en-us',
      text: 'The quick brown fox jumps over the lazy dog. It was a bright cold day in April.',
    });
    const longMp3 = await collect(long.audio);
    const a = await provider.transcriptionModel!.transcribe({ model: 'dev-stt', audio: input(shortMp3, 'mp3') });
    const b = await provider.transcriptionModel!.transcribe({ model: 'dev-stt', audio: input(longMp3, 'mp3') });
    expect(a.text).toBe('Hello there.');
    expect(b.text).toBe('The quick brown fox jumps over the lazy dog. It was a bright cold day in April.');
    expect(b.language).toBe('en');
    expect(b.durationSeconds).toBeGreaterThan(a.durationSeconds * 2);
    expect(a.durationSeconds).toBeGreaterThan(0.5);
    expect(b.segments.length).toBeGreaterThan(0);
    expect(b.segments.map((segment) => segment.text).join(' ')).toBe(b.text);
  });

  it('dev-tts keeps speaking past what one eSpeak instance can render (it died after ~70, taking the process with it)', async () => {
    const heapBefore = process.memoryUsage().heapUsed;
    for (let index = 0; index < 100; index++) {
      const speech = await provider.speechModel!.synthesize({
        model: 'dev-tts',
        voice: 'en-us',
        text: `Sentence number ${index}.`,
      });
      expect((await collect(speech.audio)).length).toBeGreaterThan(1000);
    }
    // The instances dropped are freed, not kept by the module system.
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(150 * 1024 * 1024);
  }, 120_000);
});
