// The rollout check behind Ready and currentVersion: the live StatefulSet must
// run the template the controller wants now, not only report settled revisions.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1StatefulSet } from '@kubernetes/client-node';
import type { DatabaseObject } from './api.ts';
import { desiredStatefulSet, image } from './children.ts';
import { childNames } from './names.ts';
import { computeStatus } from './status.ts';
import { databaseWith } from './testing/parameters-corpus.ts';

/** The StatefulSet as the API server would report it once `db`'s template ran on every replica. */
function settled(db: DatabaseObject): V1StatefulSet {
  const sts = desiredStatefulSet(db, childNames(db).credentials, image(db));
  return {
    ...sts,
    metadata: { ...sts.metadata, generation: 2 },
    status: {
      observedGeneration: 2,
      replicas: 1,
      readyReplicas: 1,
      updatedReplicas: 1,
      currentRevision: 'r2',
      updateRevision: 'r2',
    },
  };
}

const statusOf = (db: DatabaseObject, sts: V1StatefulSet) =>
  computeStatus(db, {
    statefulSet: sts,
    backupJobs: [],
    problem: undefined,
    credentialsSecret: childNames(db).credentials,
  });

test('a settled StatefulSet running the desired template is Ready, and its version is current', () => {
  const db = databaseWith('postgres', { max_connections: '100' });
  const status = statusOf(db, settled(db));
  assert.equal(status.conditions?.find((c) => c.type === 'Ready')?.reason, 'AllReplicasReady');
  assert.equal(status.currentVersion, '16.6');
});

test('a settled StatefulSet running an older template (same image) is not Ready: the new one is not applied yet', () => {
  const before = databaseWith('postgres', { max_connections: '100' });
  // The parameters changed: the desired template carries another config hash, the live one still the old.
  const db = databaseWith('postgres', { max_connections: '200' });
  const status = statusOf(db, settled(before));
  assert.equal(status.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  assert.equal(status.conditions?.find((c) => c.type === 'Progressing')?.reason, 'RollingOut');
  assert.equal(status.phase, 'Provisioning');
});

test('a Database whose parameters cannot be rendered is never counted as rolled out (and computing it does not throw)', () => {
  const good = databaseWith('postgres', {});
  const db = databaseWith('postgres', { port: '1' });
  const status = statusOf(db, settled(good));
  assert.equal(status.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  assert.equal(status.currentVersion, undefined);
});
