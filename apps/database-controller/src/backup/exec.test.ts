// What an exec's Status on stream 3 says: success, an exit code, or a failure to run.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { outcome } from './exec.ts';

describe('outcome', () => {
  test('success, an exit code, and a failure to run', () => {
    assert.deepEqual(outcome('{"metadata":{},"status":"Success"}'), { exitCode: 0 });
    assert.deepEqual(
      outcome(
        '{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}',
      ),
      { exitCode: 3 },
    );
    assert.deepEqual(
      outcome(
        '{"status":"Failure","message":"container not found (\\"postgres\\")","reason":"InternalError"}',
      ),
      { exitCode: -1, error: 'container not found ("postgres")' },
    );
    assert.equal(outcome('').exitCode, -1);
  });
});
