import assert from 'node:assert/strict';
import { test } from 'node:test';
import { excerpt, podTrouble } from './pod-trouble.ts';

const crashLooping = (restartCount: number, message?: string) => ({
  metadata: { name: 'db-0' },
  status: {
    containerStatuses: [
      {
        name: 'postgres',
        ready: false,
        restartCount,
        state: {
          waiting: { reason: 'CrashLoopBackOff', message: 'back-off 20s restarting failed container' },
        },
        lastState: { terminated: { exitCode: 1, reason: 'Error', ...(message ? { message } : {}) } },
      },
    ],
  },
});

const RESTORE_LOG = [
  'regulon: restoring the backup of s3://bucket/ns/ledger',
  "ERROR: [075]: unable to find backup set with stop time less than '2026-11-24 23:29:40.64+00'",
  'regulon: restore failed',
  '',
].join('\n');

test('a container that keeps crashing: its exit code and the line of its log that says why', () => {
  assert.deepEqual(podTrouble(crashLooping(3, RESTORE_LOG)), {
    pod: 'db-0',
    container: 'postgres',
    message:
      "container postgres exits with code 1: ERROR: [075]: unable to find backup set with stop time less than '2026-11-24 23:29:40.64+00'",
  });
  assert.equal(podTrouble(crashLooping(3))?.message, 'container postgres exits with code 1');
});

test('one crash is not a loop: the restart heals a killed server', () => {
  assert.equal(podTrouble(crashLooping(1, RESTORE_LOG)), undefined);
});

test('a container that cannot start says so at once, in the kubelet words', () => {
  const pod = {
    metadata: { name: 'db-1' },
    status: {
      initContainerStatuses: [
        {
          name: 'init',
          state: {
            waiting: {
              reason: 'CreateContainerConfigError',
              message: "couldn't find key password in Secret ns/db-credentials",
            },
          },
        },
      ],
    },
  };
  assert.equal(
    podTrouble(pod)?.message,
    "container init cannot start (CreateContainerConfigError): couldn't find key password in Secret ns/db-credentials",
  );
});

test('a running Pod, one starting, and one being deleted have no trouble to report', () => {
  assert.equal(podTrouble({ metadata: { name: 'a' }, status: {} }), undefined);
  assert.equal(
    podTrouble({
      metadata: { name: 'a' },
      status: {
        containerStatuses: [
          { name: 'c', restartCount: 5, state: { waiting: { reason: 'ContainerCreating' } } },
        ],
      },
    }),
    undefined,
  );
  assert.equal(
    podTrouble({
      ...crashLooping(4, RESTORE_LOG),
      metadata: { name: 'db-0', deletionTimestamp: '2026-11-25T00:00:00Z' },
    }),
    undefined,
  );
});

test('the excerpt: the last line naming an error, else the last line; long lines cut', () => {
  assert.equal(excerpt('a\nFATAL:  could not open file\nb\n'), 'FATAL:  could not open file');
  assert.equal(excerpt('starting\nstopped\n'), 'stopped');
  assert.equal(excerpt(''), '');
  const long = excerpt(`ERROR: ${'x'.repeat(1000)}`);
  assert.equal(long.length, 400);
  assert.ok(long.endsWith('…'));
});
