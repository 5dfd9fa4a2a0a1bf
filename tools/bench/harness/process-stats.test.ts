import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { processStats } from './process-stats.ts';

describe('processStats', () => {
  it('reads CPU time and memory that grow with work done', () => {
    const before = processStats(process.pid);
    const keep: number[][] = [];
    const started = process.cpuUsage();
    // Burn CPU and hold memory until the kernel's clock can see it.
    while (process.cpuUsage(started).user < 300_000) keep.push(new Array<number>(10_000).fill(keep.length));
    const after = processStats(process.pid);
    assert.ok(after.cpuSeconds >= before.cpuSeconds + 0.2, `${before.cpuSeconds} → ${after.cpuSeconds}`);
    assert.ok(after.rssBytes > 10 * 1024 * 1024, `rss ${after.rssBytes}`);
    assert.ok(after.peakRssBytes >= after.rssBytes);
    assert.ok(keep.length > 0);
  });
  it('fails for a process that does not exist', () => {
    assert.throws(() => processStats(2 ** 22 + 1), /ENOENT/);
  });
});
