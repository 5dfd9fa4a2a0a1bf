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

  it('refuses an error without its text', () => {
    assert.throws(() => parseSubjectLine('{"ev":"error"}'), /lacks its text/);
  });
});
