import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leaders, overlappingLeaders, reconcilesWithoutLeading, type Scrape } from './leadership.ts';

/** A scrape read in [at, at + 10]. */
const s = (pod: string, at: number, leading: number, reconciles: number): Scrape => ({
  pod,
  sentAt: at,
  receivedAt: at + 10,
  leading,
  reconciles,
});

test('a clean handover (a stops leading, then b starts) is no overlap', () => {
  const scrapes = [s('a', 0, 1, 5), s('b', 0, 0, 0), s('a', 100, 0, 7), s('b', 100, 0, 0), s('b', 200, 1, 3)];
  assert.deepEqual(overlappingLeaders(scrapes), []);
  assert.deepEqual(reconcilesWithoutLeading(scrapes), []);
  assert.deepEqual(leaders(scrapes), ['a', 'b']);
});

test('a replica still reporting leading after another began is an overlap', () => {
  const scrapes = [s('a', 0, 1, 5), s('b', 100, 1, 1), s('a', 200, 1, 6)];
  assert.equal(overlappingLeaders(scrapes).length, 1);
});

test('leading reports whose windows touch are not taken as proof of an overlap', () => {
  // a's last and b's first were read in overlapping windows: either order is possible.
  const scrapes = [s('a', 0, 1, 5), s('a', 100, 1, 5), s('b', 95, 1, 0)];
  assert.deepEqual(overlappingLeaders(scrapes), []);
});

test('reconciles rising between two scrapes that both say "not leading" are reported', () => {
  const scrapes = [s('b', 0, 0, 0), s('b', 100, 0, 2)];
  assert.equal(reconcilesWithoutLeading(scrapes).length, 1);
});

test('a first scrape with reconciles but not leading is reported', () => {
  assert.equal(reconcilesWithoutLeading([s('b', 0, 0, 4)]).length, 1);
});

test('reconciles that rose up to the last leading scrape, then stayed, are fine', () => {
  const scrapes = [s('a', 0, 1, 5), s('a', 100, 0, 9), s('a', 200, 0, 9)];
  assert.deepEqual(reconcilesWithoutLeading(scrapes), []);
});
