import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Registry } from 'prom-client';
import { oncePerRegistry, registeredMetric } from './metrics.ts';

const counterOn = (registry: Registry, name = 'things_total'): Counter =>
  new Counter({ name, help: 'Things.', registers: [registry] });

describe('oncePerRegistry', () => {
  it('creates once per registry and returns the same value afterwards', () => {
    let calls = 0;
    const things = oncePerRegistry((registry) => {
      calls++;
      return counterOn(registry as Registry);
    });
    const a = new Registry();
    const b = new Registry();
    assert.equal(things(a), things(a));
    assert.notEqual(things(a), things(b));
    assert.equal(calls, 2);
  });

  it('remembers a falsy value instead of creating again', () => {
    let calls = 0;
    const nothing = oncePerRegistry(() => {
      calls++;
      return undefined;
    });
    const registry = new Registry();
    nothing(registry);
    nothing(registry);
    assert.equal(calls, 1);
  });
});

describe('registeredMetric', () => {
  it('reuses a metric already registered under the name instead of failing', () => {
    const registry = new Registry();
    const existing = counterOn(registry);
    const found = registeredMetric(registry, 'things_total', () => counterOn(registry));
    assert.equal(found, existing);
  });

  it('creates the metric when the name is free', async () => {
    const registry = new Registry();
    const made = registeredMetric(registry, 'things_total', () => counterOn(registry));
    made.inc(2);
    assert.match(await registry.metrics(), /^things_total 2$/m);
  });
});
