import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ApiError,
  errorFromStatus,
  Kinds,
  type KubeObject,
  type ResourceType,
  type Status,
} from '@regulon/client';
import { findCondition } from './conditions.ts';
import type { EventRecorder } from '../events/events.ts';
import { ChildConflictError, type Owner } from '../apply/ownership.ts';
import {
  announceProblems,
  childProblem,
  ChildRejectedError,
  combineProblems,
  isRejection,
  problemResult,
  setProblemConditions,
  type Problem,
} from './problems.ts';

const t0 = new Date('2026-01-01T00:00:00Z');
const owner: Owner = {
  apiVersion: 'regulon.dev/v1alpha1',
  kind: 'Database',
  metadata: { name: 'orders', uid: 'u1', namespace: 'ns' },
};
const status = (code: number, reason: string, message = `${reason} says no`): Status => ({
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  code,
  reason,
  message,
});
const apiError = (code: number, reason: string) => errorFromStatus(code, status(code, reason));

describe('isRejection', () => {
  test('a 4xx the request or the cluster policy causes is a rejection', () => {
    for (const [code, reason] of [
      [400, 'BadRequest'],
      [403, 'Forbidden'],
      [404, 'NotFound'],
      [422, 'Invalid'],
    ] as const)
      assert.equal(isRejection(apiError(code, reason)), true, `${code} ${reason}`);
  });
  test('throttling, conflicts, timeouts, expiry, the client credentials, 5xx and non-API errors are transient', () => {
    for (const [code, reason] of [
      [401, 'Unauthorized'],
      [408, 'Timeout'],
      [409, 'Conflict'],
      [409, 'AlreadyExists'],
      [410, 'Expired'],
      [429, 'TooManyRequests'],
      [500, 'InternalError'],
      [503, 'ServiceUnavailable'],
      [504, 'Timeout'],
    ] as const)
      assert.equal(isRejection(apiError(code, reason)), false, `${code} ${reason}`);
    assert.equal(isRejection(new ApiError(0, status(0, 'Timeout'))), false, 'client-side deadline');
    assert.equal(isRejection(new Error('socket hang up')), false);
    assert.equal(isRejection(new TypeError('x is undefined')), false);
  });
});

describe('childProblem', () => {
  const waits: Array<[ResourceType, string | undefined, string]> = [];
  const ctx = {
    waitFor: (type: ResourceType, ns: string | undefined, name: string) => void waits.push([type, ns, name]),
  };

  test('a conflict is ChildConflict, not retried, and the request waits for the object that holds the name', () => {
    waits.length = 0;
    const mine: KubeObject = { metadata: { name: 'orders-config', namespace: 'ns' } };
    const p = childProblem(new ChildConflictError(Kinds.ConfigMap, mine, owner), ctx);
    assert.equal(p.reason, 'ChildConflict');
    assert.match(
      p.message,
      /ConfigMap ns\/orders-config already exists and was not created by it, not by Database orders/,
    );
    assert.equal(problemResult(p), undefined);
    assert.deepEqual(waits, [[Kinds.ConfigMap, 'ns', 'orders-config']]);
  });

  test("another controller's object is named in the message", () => {
    const theirs: KubeObject = {
      metadata: {
        name: 'orders',
        namespace: 'ns',
        ownerReferences: [
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'other', uid: 'u2', controller: true },
        ],
      },
    };
    const p = childProblem(new ChildConflictError(Kinds.StatefulSet, theirs, owner), ctx);
    assert.match(p.message, /StatefulSet ns\/orders already exists and is controlled by ConfigMap other/);
  });

  test("a rejection is ChildRejected with the server's message, retried with backoff", () => {
    waits.length = 0;
    const err = new ChildRejectedError(
      Kinds.Service,
      'orders',
      errorFromStatus(403, status(403, 'Forbidden', 'services "orders" is forbidden: exceeded quota: q')),
    );
    const p = childProblem(err, ctx);
    assert.equal(p.reason, 'ChildRejected');
    assert.equal(
      p.message,
      'Service orders was rejected by the API server: services "orders" is forbidden: exceeded quota: q',
    );
    assert.deepEqual(problemResult(p), { requeue: true });
    assert.deepEqual(waits, []);
  });

  test('anything else is rethrown, so the work queue retries it with backoff', () => {
    for (const err of [
      apiError(429, 'TooManyRequests'),
      apiError(503, 'ServiceUnavailable'),
      new Error('ECONNRESET'),
    ])
      assert.throws(
        () => childProblem(err, ctx),
        (e) => e === err,
      );
  });
});

describe('combineProblems', () => {
  test('the first reason, every message; stalled and retried if any one is', () => {
    const a: Problem = { reason: 'A', message: 'a', stalled: false };
    const b: Problem = { reason: 'B', message: 'b', retry: true };
    assert.deepEqual(combineProblems([a, b]), { reason: 'A', message: 'a; b', stalled: true, retry: true });
    assert.deepEqual(combineProblems([a]), { reason: 'A', message: 'a', stalled: false, retry: false });
    assert.equal(combineProblems([]), undefined);
  });
});

describe('setProblemConditions', () => {
  const opts = { observedGeneration: 3, now: t0 };
  test('a problem: Degraded and Stalled True, Ready False, all naming it', () => {
    const c = setProblemConditions([], { reason: 'ChildRejected', message: 'no' }, opts);
    for (const [type, s] of [
      ['Degraded', 'True'],
      ['Stalled', 'True'],
      ['Ready', 'False'],
    ] as const) {
      const x = findCondition(c, type);
      assert.equal(x?.status, s, type);
      assert.equal(x?.reason, 'ChildRejected', type);
      assert.equal(x?.message, 'no', type);
      assert.equal(x?.observedGeneration, 3, type);
    }
  });
  test('a problem the cluster may get over by itself is Degraded, not Stalled', () => {
    const c = setProblemConditions([], { reason: 'ReplicaFailure', message: 'quota', stalled: false }, opts);
    assert.equal(findCondition(c, 'Degraded')?.status, 'True');
    assert.equal(findCondition(c, 'Stalled')?.status, 'False');
    assert.equal(findCondition(c, 'Ready')?.reason, 'ReplicaFailure');
  });
  test('no problem: Degraded and Stalled False, Ready left to the caller', () => {
    const stalled = setProblemConditions([], { reason: 'X', message: 'x' }, opts);
    const c = setProblemConditions(stalled, undefined, { ...opts, now: new Date('2026-01-01T00:01:00Z') });
    assert.equal(findCondition(c, 'Degraded')?.status, 'False');
    assert.equal(findCondition(c, 'Stalled')?.status, 'False');
    assert.equal(findCondition(c, 'Stalled')?.lastTransitionTime, '2026-01-01T00:01:00Z');
    assert.equal(findCondition(c, 'Ready')?.reason, 'X', 'Ready is the caller’s to set');
  });
});

describe('announceProblems', () => {
  const recorder = () => {
    const events: Array<{ reason: string; note: string }> = [];
    const r = {
      event: (_obj: KubeObject, _type: string, reason: string, _action: string, note: string) =>
        void events.push({ reason, note }),
    } as unknown as EventRecorder;
    return { r, events };
  };
  const problems: Problem[] = [
    { reason: 'ChildConflict', message: 'taken' },
    { reason: 'EnvSecretMissing', message: 'missing' },
  ];

  test('one Warning Event per problem when Degraded does not state them yet', () => {
    const { r, events } = recorder();
    announceProblems(r, { metadata: { name: 'a' } }, problems);
    assert.deepEqual(
      events.map((e) => e.reason),
      ['ChildConflict', 'EnvSecretMissing'],
    );
  });

  test('nothing when the status already reports them (a restarted manager, a new leader)', () => {
    const { r, events } = recorder();
    const conditions = setProblemConditions([], combineProblems(problems), { now: t0 });
    announceProblems(r, { metadata: { name: 'a' }, status: { conditions } }, problems);
    announceProblems(r, { metadata: { name: 'a' }, status: { conditions } }, []);
    assert.deepEqual(events, []);
  });

  test('again when the problem changes', () => {
    const { r, events } = recorder();
    const conditions = setProblemConditions([], problems[0], { now: t0 });
    announceProblems(r, { metadata: { name: 'a' }, status: { conditions } }, problems);
    assert.equal(events.length, 2);
  });
});
