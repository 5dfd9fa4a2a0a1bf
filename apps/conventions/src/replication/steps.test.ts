import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Topology } from './plan.ts';
import { carryOutStep } from './steps.ts';

test('a topology move is recorded first, with the time it is written, and a forced one warns with what it may lose', async () => {
  const said: string[] = [];
  const recorded: Topology[] = [];
  const ctx = {
    event: (type: string, reason: string) => void said.push(`${type} ${reason}`),
    warn: (reason: string, message: string) => void said.push(`Warning ${reason}: ${message}`),
    log: { info: () => {} },
  } as unknown as Parameters<typeof carryOutStep>[0];
  const actions = {
    recordTopology: (t: Topology) => Promise.resolve(void recorded.push(t)),
    deletePod: () => Promise.resolve(),
    promote: () => Promise.resolve(true),
  };
  const was: Topology = { primary: 'db-0', initialized: true, since: 1 };
  const forced = `db-2 takes over by a person's order, at position 900: db-1 may hold commits it lacks`;
  await carryOutStep(
    ctx,
    { kind: 'topology', topology: { ...was, primary: 'db-2' }, reason: 'ForcedFailover', message: forced },
    was,
    actions,
    () => 5_000,
  );
  await carryOutStep(
    ctx,
    { kind: 'topology', topology: { ...was, primary: 'db-1' }, reason: 'Failover', message: 'lost' },
    was,
    actions,
    () => 6_000,
  );
  assert.deepEqual(recorded, [
    { primary: 'db-2', initialized: true, since: 5_000 },
    { primary: 'db-1', initialized: true, since: 6_000 },
  ]);
  assert.deepEqual(said, [`Warning ForcedFailover: ${forced}`, 'Warning FailoverStarted: lost']);
});

test('a replaced Pod is deleted with its own grace: a rolling update says so as news, a stopped replica restarted as a warning', async () => {
  const said: string[] = [];
  const deleted: string[] = [];
  const ctx = {
    event: (type: string, reason: string, message: string) => void said.push(`${type} ${reason}: ${message}`),
    warn: (reason: string, message: string) => void said.push(`Warning ${reason}: ${message}`),
    log: { info: () => {} },
  } as unknown as Parameters<typeof carryOutStep>[0];
  const actions = {
    recordTopology: () => Promise.resolve(),
    deletePod: (pod: string, uid: string, grace?: number) =>
      Promise.resolve(void deleted.push(`${pod}/${uid}/${grace ?? 'own grace'}`)),
    promote: () => Promise.resolve(true),
  };
  const topology: Topology = { primary: 'db-0', initialized: true, since: 1 };
  await carryOutStep(
    ctx,
    { kind: 'replace', pod: 'db-2', uid: 'u2', reason: 'RollingUpdate', message: 'new template' },
    topology,
    actions,
  );
  await carryOutStep(
    ctx,
    { kind: 'replace', pod: 'db-1', uid: 'u1', reason: 'ReplicationStopped', message: 'error 1236' },
    topology,
    actions,
  );
  assert.deepEqual(deleted, ['db-2/u2/own grace', 'db-1/u1/own grace']);
  assert.deepEqual(said, ['Normal RollingUpdate: new template', 'Warning ReplicaRestarted: error 1236']);
});
