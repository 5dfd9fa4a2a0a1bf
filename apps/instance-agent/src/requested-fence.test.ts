import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger } from '@regulon/runtime';
import { RequestedFence } from './requested-fence.ts';
import { EngineProcess } from './supervisor.ts';

const log = createLogger({ name: 'requested-fence-test', level: 'silent' });

test('a requested fence stops the engine (SIGINT first), writes the liveness marker, and waits to be lifted', async () => {
  const marker = join(mkdtempSync(join(tmpdir(), 'fence-')), 'starting');
  const fence = new RequestedFence({ log, livenessMarker: marker });
  // An engine that stops on SIGINT, as postgres's fast shutdown does.
  const engine = new EngineProcess(['sh', '-c', 'trap "exit 0" INT; sleep 30 & wait']);
  await new Promise((r) => setTimeout(r, 200));
  fence.set(false, engine);
  assert.equal(engine.running, true, 'not fenced: nothing happens');
  fence.set(true, engine);
  const exit = await engine.exited;
  engine.killRemaining();
  assert.equal(exit.code, 0);
  assert.equal(fence.stopped(engine), true);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(existsSync(marker), true, 'the liveness probe takes the stopped engine for starting');
  let lifted: boolean | undefined;
  const waiting = fence.untilUnfenced().then((v) => (lifted = v));
  fence.set(true, engine);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(lifted, undefined, 'still fenced');
  fence.set(false, engine);
  await waiting;
  assert.equal(lifted, true);
  assert.equal(existsSync(marker), false);
  assert.equal(fence.stopped(engine), false);
});

test('an engine that ignores SIGINT gets SIGTERM, then SIGKILL; closing ends the wait', async () => {
  const fence = new RequestedFence({ log, stopStepsMs: [100, 100] });
  const engine = new EngineProcess(['sh', '-c', 'trap "" INT; trap "" TERM; sleep 30 & wait; sleep 30']);
  await new Promise((r) => setTimeout(r, 200));
  fence.set(true, engine);
  const exit = await engine.exited;
  assert.equal(exit.signal, 'SIGKILL');
  engine.killRemaining();
  const waiting = fence.untilUnfenced();
  fence.close();
  assert.equal(await waiting, false);
});
