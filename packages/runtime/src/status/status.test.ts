import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WRITTEN_STATUS_TTL_MS, WrittenStatus } from './status.ts';

interface S {
  phase: string;
}
const obj = (rv: string, phase: string) => ({
  metadata: { uid: 'u1', resourceVersion: rv },
  status: { phase },
});

describe('WrittenStatus', () => {
  it('shows the status it wrote while the cache still has the older one', () => {
    const w = new WrittenStatus<S>();
    w.remember(obj('11', 'Ready'), { phase: 'Ready' });
    assert.deepEqual(w.current(obj('10', 'Provisioning')).status, { phase: 'Ready' });
    assert.equal(w.size, 1);
  });
  it('believes the cache again once it shows the write, by resourceVersion or by content', () => {
    const w = new WrittenStatus<S>();
    w.remember(obj('11', 'Ready'), { phase: 'Ready' });
    const caught = obj('11', 'Ready');
    assert.equal(w.current(caught), caught);
    assert.equal(w.size, 0);
    w.remember(obj('11', 'Ready'), { phase: 'Ready' });
    const later = obj('12', 'Ready'); // e.g. a label changed since
    assert.equal(w.current(later), later);
    assert.equal(w.size, 0);
  });
  it('never hides what the cache says for longer than the TTL', () => {
    let now = 1_000;
    const w = new WrittenStatus<S>(() => now);
    w.remember(obj('11', 'Ready'), { phase: 'Ready' });
    now += WRITTEN_STATUS_TTL_MS + 1;
    const other = obj('12', 'Degraded'); // someone else's status write
    assert.equal(w.current(other), other);
  });
  it('leaves objects it never wrote alone', () => {
    const w = new WrittenStatus<S>();
    const o = obj('1', 'Pending');
    assert.equal(w.current(o), o);
  });
  it('keeps showing its write up to the TTL exactly, while the cache stays behind', () => {
    let now = 1_000;
    const w = new WrittenStatus<S>(() => now);
    w.remember(obj('11', 'Ready'), { phase: 'Ready' });
    now += WRITTEN_STATUS_TTL_MS;
    assert.deepEqual(w.current(obj('10', 'Provisioning')).status, { phase: 'Ready' });
    assert.equal(w.size, 1);
    now += 1;
    assert.deepEqual(w.current(obj('10', 'Provisioning')).status, { phase: 'Provisioning' });
    assert.equal(w.size, 0, 'an expired entry is dropped when read');
  });
  it('a newer write replaces the older one and restarts the TTL', () => {
    let now = 1_000;
    const w = new WrittenStatus<S>(() => now);
    w.remember(obj('11', 'Ready'), { phase: 'Ready' });
    now += WRITTEN_STATUS_TTL_MS - 1;
    w.remember(obj('12', 'Degraded'), { phase: 'Degraded' });
    now += 2; // past the first write's TTL, well within the second's
    // The cache shows the first write, not the second: the second is still hidden from it.
    assert.deepEqual(w.current(obj('11', 'Ready')).status, { phase: 'Degraded' });
    assert.equal(w.size, 1);
  });
  it('remembers per object (uid)', () => {
    const w = new WrittenStatus<S>();
    w.remember(obj('11', 'Ready'), { phase: 'Ready' });
    const other = { metadata: { uid: 'u2', resourceVersion: '5' }, status: { phase: 'Pending' } };
    assert.equal(w.current(other), other);
    assert.equal(w.size, 1);
  });
  it('returns a copy: the cached object is never modified', () => {
    const w = new WrittenStatus<S>();
    w.remember(obj('11', 'Ready'), { phase: 'Ready' });
    const cached = obj('10', 'Provisioning');
    const shown = w.current(cached);
    assert.notEqual(shown, cached);
    assert.deepEqual(cached.status, { phase: 'Provisioning' });
    assert.equal(shown.metadata, cached.metadata);
  });
  it('remembers nothing from a response without uid or resourceVersion', () => {
    const w = new WrittenStatus<S>();
    w.remember({ metadata: { uid: 'u1' } }, { phase: 'Ready' });
    w.remember({ metadata: { resourceVersion: '11' } }, { phase: 'Ready' });
    assert.equal(w.size, 0);
  });
  it('drops expired entries of objects never read again once it holds 1024, and only expired ones', () => {
    let now = 1_000;
    const w = new WrittenStatus<S>(() => now);
    const write = (uid: string) =>
      w.remember({ metadata: { uid, resourceVersion: '1' } }, { phase: 'Ready' });
    for (let i = 0; i < 1024; i++) write(`old-${i}`);
    now += WRITTEN_STATUS_TTL_MS / 2;
    write('recent');
    assert.equal(w.size, 1025, 'nothing had expired yet');
    now += WRITTEN_STATUS_TTL_MS / 2 + 1;
    write('newest');
    assert.equal(w.size, 2, 'the 1024 expired entries are gone; the recent one is kept');
    assert.deepEqual(
      w.current({ metadata: { uid: 'recent', resourceVersion: '0' }, status: { phase: 'x' } }).status,
      {
        phase: 'Ready',
      },
    );
  });
});
