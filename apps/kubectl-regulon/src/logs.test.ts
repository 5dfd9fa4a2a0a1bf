import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { linePrefix, prefixLines, roleOf, ROLE_LABEL } from './logs.ts';
import { replicatedDatabase } from './testing/fixtures.ts';

const pod = (name: string, labels: Record<string, string> = {}): V1Pod => ({ metadata: { name, labels } });

describe('logs', () => {
  test('every line gets the prefix, a last line without newline too, and no empty line is invented', () => {
    assert.equal(prefixLines('p (r)', 'a\nb\n'), 'p (r) a\np (r) b\n');
    assert.equal(prefixLines('p (r)', 'a\n\nb'), 'p (r) a\np (r) \np (r) b\n');
    assert.equal(prefixLines('p (r)', ''), '');
  });

  test("the role is the status's, else the role label, else -", () => {
    const db = replicatedDatabase();
    assert.equal(roleOf(db, pod('orders-1', { [ROLE_LABEL]: 'replica' })), 'primary');
    assert.equal(roleOf(db, pod('orders-2')), 'standby');
    assert.equal(roleOf(db, pod('orders-7', { [ROLE_LABEL]: 'replica' })), 'replica');
    assert.equal(roleOf(db, pod('orders-8')), '-');
  });

  test('the container is named only where a Pod has several', () => {
    assert.equal(linePrefix(pod('orders-0'), undefined, 'primary'), 'orders-0 (primary)');
    assert.equal(linePrefix(pod('orders-0'), 'exporter', 'primary'), 'orders-0/exporter (primary)');
  });
});
