import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { BLOCK_ON_SIGNAL_ENV } from './debug.ts';

/**
 * A child that arms the hook from its environment, then prints a tick every
 * 10 ms. Returns the child and a promise of its first tick.
 */
function ticker(env: NodeJS.ProcessEnv) {
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { blockOnSignalForDebug } from ${JSON.stringify(new URL('./debug.ts', import.meta.url).href)};
       blockOnSignalForDebug(process.env, () => {});
       setInterval(() => process.stdout.write('tick\\n'), 10);`,
    ],
    { env, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let ticks = 0;
  child.stdout.on('data', (d: Buffer) => (ticks += d.toString().split('tick').length - 1));
  const firstTick = once(child.stdout, 'data');
  return { child, firstTick, ticks: () => ticks };
}

test('unarmed, SIGUSR2 keeps its default action: the process ends, it does not hang', async () => {
  const env = { ...process.env };
  delete env[BLOCK_ON_SIGNAL_ENV];
  const { child, firstTick } = ticker({ ...env, [BLOCK_ON_SIGNAL_ENV]: 'true' });
  await firstTick;
  const exited = once(child, 'exit');
  child.kill('SIGUSR2');
  const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
  assert.deepEqual([code, signal], [null, 'SIGUSR2'], 'only the value 1 arms the hook');
});

test('armed with REGULON_DEBUG_BLOCK_ON_SIGNAL=1, SIGUSR2 blocks the event loop: timers stop, the process stays', async (t) => {
  const { child, firstTick, ticks } = ticker({ ...process.env, [BLOCK_ON_SIGNAL_ENV]: '1' });
  t.after(() => child.kill('SIGKILL'));
  await firstTick;
  child.kill('SIGUSR2');
  // The handler runs on the loop: a tick or two already queued may still arrive.
  // After that, a 10 ms timer would tick about 100 times in this second if the loop ran.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const before = ticks();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.equal(ticks(), before, 'no timer fired: the event loop is blocked');
  assert.equal(child.exitCode, null, 'the process is still there');
  assert.equal(child.signalCode, null);
});
