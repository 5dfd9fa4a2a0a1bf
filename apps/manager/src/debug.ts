/** The environment variable that arms the hook; only the value `1` does. */
export const BLOCK_ON_SIGNAL_ENV = 'REGULON_DEBUG_BLOCK_ON_SIGNAL';

/**
 * Debug only, for the liveness-probe test: with REGULON_DEBUG_BLOCK_ON_SIGNAL=1,
 * SIGUSR2 blocks the event loop for good, the way a hung manager would (no
 * HTTP answers, no Lease renewals, no reconciles), so the test can watch the
 * kubelet restart it. Deliberately not a flag in `--help`: it exists to break
 * the process. Unarmed, nothing is installed and SIGUSR2 keeps Node's default
 * action (the process ends), so a stray signal cannot hang a production manager.
 *
 * The block is Atomics.wait on a value nobody changes: it stops the main
 * thread without burning a core while the kubelet's probe failures add up.
 * Returns a function that removes the handler.
 */
export function blockOnSignalForDebug(env: NodeJS.ProcessEnv, warn: (message: string) => void): () => void {
  if (env[BLOCK_ON_SIGNAL_ENV] !== '1') return () => {};
  const block = () => {
    warn('SIGUSR2: blocking the event loop for good (REGULON_DEBUG_BLOCK_ON_SIGNAL=1)');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  };
  warn(`${BLOCK_ON_SIGNAL_ENV}=1: SIGUSR2 will block the event loop (a debug hook for liveness tests)`);
  process.on('SIGUSR2', block);
  return () => process.off('SIGUSR2', block);
}
