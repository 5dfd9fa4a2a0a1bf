import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, NotFoundError, UnauthorizedError } from '@regulon/client';
import { defaultBackupName } from './backup.ts';
import { describeFailure, UsageError, UserError } from './errors.ts';

describe('describeFailure', () => {
  test('usage errors exit 2 and point to --help; the rest exit 1', () => {
    assert.deepEqual(describeFailure(new UsageError('status: missing NAME')), {
      line: 'status: missing NAME (see --help)',
      code: 2,
    });
    assert.deepEqual(describeFailure(new UserError('Database "x" not found in namespace "y"')).code, 1);
    assert.deepEqual(describeFailure(new ConfigError('kubeconfig has no context "z"')), {
      line: 'kubeconfig has no context "z"',
      code: 1,
    });
    assert.equal(describeFailure(new UnauthorizedError(401, { message: 'Unauthorized' })).code, 1);
  });

  test('one line, whatever the error carries', () => {
    const err = new NotFoundError(404, { message: 'databases.regulon.dev "x" not found\nmore' });
    assert.deepEqual(describeFailure(err), { line: 'databases.regulon.dev "x" not found', code: 1 });
    assert.equal(describeFailure(new Error('first\n    at stack')).line, 'first');
  });
});

describe('defaultBackupName', () => {
  test("the Database's name and the UTC second, lower case as a name must be", () => {
    assert.equal(
      defaultBackupName('orders', new Date('2026-12-01T14:05:12.345Z')),
      'orders-20261201t140512z',
    );
  });
});
