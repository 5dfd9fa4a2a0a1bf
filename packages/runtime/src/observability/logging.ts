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
  level?: string | undefined;
  name?: string | undefined;
  destination?: DestinationStream | undefined;
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

/**
 * A child of `parent` made on first use. A converged reconcile logs nothing
 * at the default level, yet pino's child() serialises and redacts its
 * bindings at once: about 6 µs, a quarter of such a reconcile's CPU in the
 * framework benchmark. Calls at a level the parent has off return at once,
 * without making the child; anything else (another level, child(), bindings())
 * goes to the real child, so the result is a whole pino Logger.
 */
export function lazyChild(parent: Logger, bindings: Record<string, unknown>): Logger {
  let child: Logger | undefined;
  const real = () => (child ??= parent.child(bindings));
  const levels = new Set(Object.keys(parent.levels.values));
  const off = () => {};
  return new Proxy({} as Logger, {
    get(_, prop) {
      if (!child && typeof prop === 'string' && levels.has(prop) && !parent.isLevelEnabled(prop)) return off;
      const target = real();
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
    set(_, prop, value) {
      return Reflect.set(real(), prop, value);
    },
  });
}
