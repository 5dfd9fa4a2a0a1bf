/**
 * The subset of pino's interface the packages log through, so that a pino logger (or a
 * child of one) can be passed in without the packages depending on pino.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

const noop = (): void => {};

/** Discards everything: the default where no logger is given. */
export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop };
