import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';

/**
 * Paths pino censors in every log line. Controllers log objects, errors and
 * requests; none of them may ever carry Secret data, tokens or credentials
 * into a log. (pino's redaction matches exact paths, so the common nestings
 * are listed.)
 */
export const REDACTED_PATHS = [
  'data',
  'stringData',
  '*.data',
  '*.stringData',
  '*.*.data',
  '*.*.stringData',
  'token',
  '*.token',
  'password',
  '*.password',
  '*.*.password',
  'authorization',
  '*.authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  'client-key-data',
  '*.client-key-data',
];

export const DEFAULT_LOG_LEVEL = 'info';

export interface LoggerConfig {
  level?: string;
  name?: string;
  destination?: DestinationStream;
}

/** A JSON logger on stdout, with Secret data and tokens redacted. */
export function createLogger(config: LoggerConfig = {}): Logger {
  const options: LoggerOptions = {
    level: config.level ?? process.env['LOG_LEVEL'] ?? DEFAULT_LOG_LEVEL,
    base: config.name ? { name: config.name } : {},
    redact: { paths: REDACTED_PATHS, censor: '[REDACTED]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  return config.destination ? pino(options, config.destination) : pino(options);
}
