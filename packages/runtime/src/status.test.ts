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
});
