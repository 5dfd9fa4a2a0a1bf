import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseSubjectLine } from './protocol.ts';

describe('parseSubjectLine', () => {
  it('reads every message of the protocol', () => {
    assert.deepEqual(parseSubjectLine('{"ev":"synced","ms":12.5,"heapBefore":1000}'), {
      ev: 'synced',
      ms: 12.5,
      heapBefore: 1000,
    });
    assert.equal(parseSubjectLine('{"count":3,"ev":"drained","ms":4}').ev, 'drained');
    assert.equal(
      parseSubjectLine('{"ev":"stats","events":1,"reconciles":2,"heap":3,"objects":4}').ev,
      'stats',
    );
  });

  it('refuses a line that is not JSON, naming it', () => {
    assert.throws(() => parseSubjectLine('I1123 klog line'), /not JSON: I1123 klog line/);
  });

  it('refuses an unknown message', () => {
    assert.throws(() => parseSubjectLine('{"ev":"hello"}'), /unknown message/);
    assert.throws(() => parseSubjectLine('[1,2]'), /unknown message/);
  });

  it('refuses a message without one of its numbers', () => {
    assert.throws(() => parseSubjectLine('{"ev":"seen","events":5}'), /lacks a number "ms"/);
    assert.throws(() => parseSubjectLine('{"ev":"synced","ms":"1","heapBefore":1}'), /lacks a number "ms"/);
  });

  it("reads the sharded replicas' messages, and refuses a list that is not of whole numbers", () => {
    assert.deepEqual(parseSubjectLine('{"ev":"reconciled","ids":[3,1,3],"at":1700000000000}'), {
      ev: 'reconciled',
      ids: [3, 1, 3],
      at: 1700000000000,
    });
    assert.equal(
      parseSubjectLine('{"ev":"shard","objects":9,"buckets":[0,5],"changes":2,"informers":1,"mode":"server"}')
        .ev,
      'shard',
    );
    assert.throws(
      () => parseSubjectLine('{"ev":"reconciled","ids":[1.5],"at":1}'),
      /list of whole numbers "ids"/,
    );
    assert.throws(
      () => parseSubjectLine('{"ev":"shard","objects":9,"changes":2,"informers":1,"mode":"server"}'),
      /list of whole numbers "buckets"/,
    );
    assert.throws(
      () => parseSubjectLine('{"ev":"shard","objects":9,"buckets":[],"changes":2,"informers":1}'),
      /lacks its mode/,
    );
  });

  it('refuses an error without its text', () => {
    assert.throws(() => parseSubjectLine('{"ev":"error"}'), /lacks its text/);
  });
});
