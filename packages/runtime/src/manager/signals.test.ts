import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '@regulon/client';
import { createLogger } from '../observability/logging.ts';
import { Manager } from './manager.ts';
import { stopOnSignals } from './signals.ts';

test('the first SIGTERM stops the manager gracefully; a second forces the exit', () => {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const mgr = new Manager({
    client: KubeClient.fromKubeConfig(kc),
    logger: createLogger({ level: 'silent' }),
  });
  let stops = 0;
  mgr.stop = () => void stops++;
  const exits: number[] = [];
  const remove = stopOnSignals(mgr, { exit: (code) => void exits.push(code) });
  try {
    process.emit('SIGTERM', 'SIGTERM');
    assert.equal(stops, 1);
    assert.deepEqual(exits, []);
    process.emit('SIGINT', 'SIGINT');
    assert.deepEqual(exits, [1]);
    assert.equal(stops, 1);
  } finally {
    remove();
  }
});
