declare module 'mespeak' {
  interface SpeakOptions {
    voice?: string;
    rawdata?: 'buffer' | 'array' | 'arraybuffer' | 'base64' | 'mime' | boolean;
    speed?: number;
    pitch?: number;
    amplitude?: number;
    wordgap?: number;
    variant?: string;
  }
  export function loadConfig(config: unknown): void;
  export function loadVoice(voice: unknown): void;
  export function isVoiceLoaded(voiceId: string): boolean;
  export function speak(text: string, options: SpeakOptions): Uint8Array | null;
}
