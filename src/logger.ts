import pino, { type Logger, type LoggerOptions } from 'pino';
import type { LogLevel } from './config';

export type { Logger };

/**
 * Structured JSON logs, or `pretty` lines for a person at a terminal (formatted in this process, synchronously:
 * no worker thread). Credentials are redacted by path as a second line of defence: code never logs them.
 */
export function createLogger(level: LogLevel, format: 'json' | 'pretty' = 'json'): Logger {
  const options: LoggerOptions = {
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
        '*.secret',
      ],
      censor: '[redacted]',
    },
  };
  if (format === 'json') return pino(options);
  const pretty = require('pino-pretty') as typeof import('pino-pretty');
  return pino(options, pretty({ colorize: Boolean(process.stdout.isTTY), sync: true, ignore: 'service,pid,hostname' }));
}
