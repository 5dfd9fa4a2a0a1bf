import type { Logger } from 'pino';
import type { Manager } from './manager.ts';

export interface SignalOptions {
  logger?: Logger | undefined;
  /** Injected for tests; default process.exit. */
  exit?: (code: number) => void;
}

/**
 * SIGTERM or SIGINT stops the manager gracefully; a second signal forces the
 * exit at once (exit code 1), for an operator who won't wait for the drain.
 * Returns a function that removes the handlers.
 */
export function stopOnSignals(mgr: Manager, opts: SignalOptions = {}): () => void {
  const log = opts.logger ?? mgr.logger;
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  let received = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    received++;
    if (received === 1) {
      log.info({ signal }, 'shutting down gracefully; send the signal again to force');
      mgr.stop();
    } else {
      log.warn({ signal }, 'second signal: exiting now');
      exit(1);
    }
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return () => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };
}

/**
 * A promise that rejects with nobody listening (a reconciler's
 * fire-and-forget call) would end the process under Node's default policy;
 * a manager logs it and keeps its other controllers running.
 */
export function logUnhandledRejections(logger: Logger): () => void {
  const onRejection = (reason: unknown) => {
    logger.error(
      { err: reason instanceof Error ? reason : new Error(String(reason)) },
      'unhandled promise rejection',
    );
  };
  process.on('unhandledRejection', onRejection);
  return () => process.off('unhandledRejection', onRejection);
}
