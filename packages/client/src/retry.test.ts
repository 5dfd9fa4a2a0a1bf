import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffDelayMs, defaultRetryPolicy, isIdempotent, isRetryable, parseRetryAfter } from './retry.ts';

const policy = { maxRetries: 5, baseDelayMs: 100, maxDelayMs: 2000 };

describe('backoffDelayMs', () => {
  it('doubles per retry, between half and all of the exponential step', () => {
    for (let retry = 0; retry < 4; retry++) {
      const step = 100 * 2 ** retry;
      assert.equal(
        backoffDelayMs(retry, policy, undefined, () => 0),
        step / 2,
      );
      assert.equal(
        backoffDelayMs(retry, policy, undefined, () => 1),
        step,
      );
    }
  });

  it('is capped at maxDelayMs', () => {
    assert.equal(
      backoffDelayMs(20, policy, undefined, () => 1),
      2000,
    );
    assert.equal(
      backoffDelayMs(20, policy, undefined, () => 0),
      1000,
    );
  });

  it('uses Retry-After instead, capped', () => {
    assert.equal(
      backoffDelayMs(0, policy, 1, () => 0.5),
      1000,
    );
    assert.equal(
      backoffDelayMs(3, policy, 0, () => 0.5),
      0,
    );
    assert.equal(
      backoffDelayMs(0, policy, 120, () => 0.5),
      2000,
    );
  });

  it('has documented defaults', () => {
    assert.deepEqual(defaultRetryPolicy, { maxRetries: 5, baseDelayMs: 200, maxDelayMs: 30_000 });
  });
});

describe('parseRetryAfter', () => {
  it('parses delta-seconds', () => {
    assert.equal(parseRetryAfter('1'), 1);
    assert.equal(parseRetryAfter(' 30 '), 30);
    assert.equal(parseRetryAfter(['5', '6']), 5);
  });
  it('parses an HTTP-date relative to now', () => {
    const now = Date.parse('Wed, 21 Oct 2015 07:28:00 GMT');
    assert.equal(parseRetryAfter('Wed, 21 Oct 2015 07:28:10 GMT', now), 10);
    assert.equal(parseRetryAfter('Wed, 21 Oct 2015 07:27:00 GMT', now), 0);
  });
  it('ignores garbage and absence', () => {
    assert.equal(parseRetryAfter(undefined), undefined);
    assert.equal(parseRetryAfter('soon'), undefined);
    assert.equal(parseRetryAfter('-1'), undefined);
  });
});

describe('isIdempotent', () => {
  it('reads, deletes and server-side apply are; create and other patches are not', () => {
    assert.ok(isIdempotent('GET'));
    assert.ok(isIdempotent('head'));
    assert.ok(isIdempotent('DELETE'));
    assert.ok(isIdempotent('PATCH', 'application/apply-patch+yaml'));
    assert.ok(isIdempotent('PATCH', 'application/apply-patch+yaml; charset=utf-8'));
    assert.ok(!isIdempotent('POST', 'application/json'));
    assert.ok(!isIdempotent('PUT', 'application/json'));
    assert.ok(!isIdempotent('PATCH', 'application/merge-patch+json'));
    assert.ok(!isIdempotent('PATCH', 'application/json-patch+json'));
    assert.ok(!isIdempotent('PATCH'));
  });
});

describe('isRetryable', () => {
  it('retries 429 for every request', () => {
    assert.ok(isRetryable({ kind: 'response', code: 429 }, false));
    assert.ok(isRetryable({ kind: 'response', code: 429 }, true));
  });
  it('retries 5xx only when idempotent, never 501', () => {
    for (const code of [500, 502, 503, 504]) {
      assert.ok(isRetryable({ kind: 'response', code }, true), String(code));
      assert.ok(!isRetryable({ kind: 'response', code }, false), String(code));
    }
    assert.ok(!isRetryable({ kind: 'response', code: 501 }, true));
  });
  it('never retries other 4xx', () => {
    for (const code of [400, 401, 403, 404, 409, 410, 422]) {
      assert.ok(!isRetryable({ kind: 'response', code }, true), String(code));
    }
  });
  it('retries a refused connection always, a reset one only when idempotent', () => {
    assert.ok(isRetryable({ kind: 'network', errorCode: 'ECONNREFUSED' }, false));
    assert.ok(isRetryable({ kind: 'network', errorCode: 'ECONNRESET' }, true));
    assert.ok(!isRetryable({ kind: 'network', errorCode: 'ECONNRESET' }, false));
    assert.ok(!isRetryable({ kind: 'network', errorCode: 'ERR_TLS_CERT_ALTNAME_INVALID' }, true));
    assert.ok(!isRetryable({ kind: 'network', errorCode: undefined }, true));
  });
});
