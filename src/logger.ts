import pino, { type Logger } from 'pino';
import type { LogLevel } from './config';

export type { Logger };

/** Structured JSON logs. Credentials are redacted by path as a second line of defence: code never logs them. */
export function createLogger(level: LogLevel): Logger {
  return pino({
    level,
    base: { service: 'switchyard' },
    redact: {
      paths: [
        'req.headers["x-auth-token"]',
        'req.headers.authorization',
        'headers["x-auth-token"]',
        'headers.authorization',
        '*.apiKey',
        '*.authorization',
        '*.key',
      ],
      censor: '[redacted]',
    },
  });
}
