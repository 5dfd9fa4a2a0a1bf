import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AlreadyExistsError,
  ApiError,
  ConflictError,
  ForbiddenError,
  GoneError,
  InvalidError,
  NotFoundError,
  ServerError,
  TimeoutError,
  TooManyRequestsError,
  UnauthorizedError,
  errorFromStatus,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  ignoreNotFound,
  syntheticStatus,
  type Status,
} from './errors.ts';

const status = (code: number, reason: string, extra: Partial<Status> = {}): Status => ({
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  code,
  reason,
  message: `server says ${reason}`,
  ...extra,
});

describe('errorFromStatus', () => {
  const cases: Array<[number, string, new (...a: never[]) => ApiError]> = [
    [404, 'NotFound', NotFoundError],
    [409, 'AlreadyExists', AlreadyExistsError],
    [409, 'Conflict', ConflictError],
    [409, '', ConflictError],
    [422, 'Invalid', InvalidError],
    [403, 'Forbidden', ForbiddenError],
    [401, 'Unauthorized', UnauthorizedError],
    [429, 'TooManyRequests', TooManyRequestsError],
    [410, 'Gone', GoneError],
    [410, 'Expired', GoneError],
    [500, 'Expired', GoneError],
    [500, 'InternalError', ServerError],
    [503, 'ServiceUnavailable', ServerError],
    [500, 'ServerTimeout', ServerError],
    [504, 'Timeout', TimeoutError],
    [400, 'BadRequest', ApiError],
  ];
  for (const [code, reason, cls] of cases) {
    it(`${code} ${reason || '(no reason)'} -> ${cls.name}`, () => {
      const err = errorFromStatus(code, status(code, reason));
      assert.equal(err.constructor, cls);
      assert.ok(err instanceof ApiError);
      assert.ok(err instanceof Error);
      assert.equal(err.name, cls.name);
      assert.equal(err.code, code);
      assert.equal(err.reason, reason);
      assert.equal(err.message, `server says ${reason}`);
    });
  }

  it('does not look at the message text', () => {
    const err = errorFromStatus(
      500,
      status(500, 'InternalError', { message: 'object not found, already exists' }),
    );
    assert.ok(err instanceof ServerError);
  });

  it('exposes causes of an Invalid status', () => {
    const causes = [{ reason: 'FieldValueTooLong', field: 'spec.size', message: 'must be <= 10' }];
    const err = errorFromStatus(422, status(422, 'Invalid', { details: { causes } }));
    assert.ok(err instanceof InvalidError);
    assert.deepEqual(err.causes, causes);
    assert.deepEqual((errorFromStatus(422, status(422, 'Invalid')) as InvalidError).causes, []);
  });

  it('takes retryAfterSeconds from the header first, then from details', () => {
    assert.equal(errorFromStatus(429, status(429, 'TooManyRequests'), 3).retryAfterSeconds, 3);
    const withDetails = status(429, 'TooManyRequests', { details: { retryAfterSeconds: 7 } });
    assert.equal(errorFromStatus(429, withDetails).retryAfterSeconds, 7);
    assert.equal(errorFromStatus(429, withDetails, 2).retryAfterSeconds, 2);
    assert.equal(errorFromStatus(429, status(429, 'TooManyRequests')).retryAfterSeconds, undefined);
  });

  it('keeps the Status object', () => {
    const s = status(404, 'NotFound', { details: { name: 'x', kind: 'configmaps' } });
    assert.equal(errorFromStatus(404, s).status, s);
  });

  it('falls back to a generic message when the Status has none', () => {
    const err = errorFromStatus(503, { kind: 'Status', code: 503 });
    assert.match(err.message, /503/);
  });
});

describe('syntheticStatus', () => {
  it('uses short plain text and the reason for the code', () => {
    const s = syntheticStatus(503, 'upstream connect error\n');
    assert.equal(s.message, 'upstream connect error');
    assert.equal(s.reason, 'ServiceUnavailable');
    assert.ok(errorFromStatus(503, s) instanceof ServerError);
  });
  it('does not copy HTML or long bodies', () => {
    assert.equal(syntheticStatus(502, '<html><body>bad gateway</body></html>').message, 'HTTP 502');
    assert.equal(syntheticStatus(500, 'x'.repeat(1000)).message, 'HTTP 500');
  });
  it('maps 404 to NotFound', () => {
    assert.ok(errorFromStatus(404, syntheticStatus(404, '404 page not found')) instanceof NotFoundError);
  });
});

describe('is* helpers', () => {
  it('match only their class', () => {
    const nf = errorFromStatus(404, status(404, 'NotFound'));
    const ae = errorFromStatus(409, status(409, 'AlreadyExists'));
    const cf = errorFromStatus(409, status(409, 'Conflict'));
    const gone = errorFromStatus(410, status(410, 'Expired'));
    const inv = errorFromStatus(422, status(422, 'Invalid'));
    const fb = errorFromStatus(403, status(403, 'Forbidden'));
    assert.ok(isNotFound(nf) && !isNotFound(cf) && !isNotFound(new Error('404')));
    assert.ok(isAlreadyExists(ae) && !isAlreadyExists(cf));
    assert.ok(isConflict(cf) && !isConflict(ae));
    assert.ok(isGone(gone) && !isGone(nf));
    assert.ok(isInvalid(inv) && !isInvalid(nf));
    assert.ok(isForbidden(fb) && !isForbidden(undefined));
  });
});

describe('ignoreNotFound', () => {
  it('gives the result, undefined for a missing object, and rejects with every other error', async () => {
    assert.equal(await ignoreNotFound(Promise.resolve(7)), 7);
    assert.equal(
      await ignoreNotFound(Promise.reject(errorFromStatus(404, status(404, 'NotFound')))),
      undefined,
    );
    const conflict = errorFromStatus(409, status(409, 'Conflict'));
    await assert.rejects(ignoreNotFound(Promise.reject(conflict)), (e) => e === conflict);
  });
});
