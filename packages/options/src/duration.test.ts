import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatDuration, parseDuration } from './duration.ts';

test('formatDuration writes milliseconds back the way parseDuration reads them', () => {
  const cases: [number, string][] = [
    [0, '0s'],
    [1, '1ms'],
    [1500, '1s500ms'],
    [120_000, '2m'],
    [5_400_000, '1h30m'],
    [90_061_001, '25h1m1s1ms'],
  ];
  for (const [ms, text] of cases) {
    assert.equal(formatDuration(ms), text, String(ms));
    assert.equal(parseDuration(text), ms, text);
  }
});
