import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_TIMINGS, parseAgentArgs } from './config.ts';

const base = ['--namespace', 'shop', '--lease', 'orders-primary', '--role-command', 'echo primary'];

describe('parseAgentArgs', () => {
  test('reads the Lease, the identity from POD_NAME, the engine after --, and the default timings', () => {
    const c = parseAgentArgs([...base, '--', 'postgres', '-D', '/data'], { POD_NAME: 'orders-0' });
    assert.deepEqual(
      { namespace: c.namespace, lease: c.lease, identity: c.identity, engine: c.engine },
      {
        namespace: 'shop',
        lease: 'orders-primary',
        identity: 'orders-0',
        engine: ['postgres', '-D', '/data'],
      },
    );
    assert.equal(c.leaseDurationMs, DEFAULT_TIMINGS.leaseDurationMs);
    assert.equal(c.renewDeadlineMs, DEFAULT_TIMINGS.renewDeadlineMs);
  });

  test('--identity wins over POD_NAME, and timings are read in milliseconds', () => {
    const c = parseAgentArgs(
      [...base, '--identity', 'x-1', '--lease-duration-ms', '6000', '--renew-deadline-ms', '4000', '--', 'e'],
      { POD_NAME: 'orders-0' },
    );
    assert.equal(c.identity, 'x-1');
    assert.equal(c.leaseDurationMs, 6000);
    assert.equal(c.renewDeadlineMs, 4000);
  });

  test('says what is missing or wrong, in one line', () => {
    assert.throws(() => parseAgentArgs(base, { POD_NAME: 'p' }), /no engine command after "--"/);
    assert.throws(
      () => parseAgentArgs(['--lease', 'l', '--role-command', 'c', '--', 'e'], {}),
      /--namespace is required/,
    );
    assert.throws(() => parseAgentArgs([...base, '--', 'e'], {}), /--identity \(or the POD_NAME/);
    assert.throws(
      () => parseAgentArgs([...base, '--renew-deadline-ms', '20000', '--', 'e'], { POD_NAME: 'p' }),
      /--renew-deadline-ms \(20000\) must be below --lease-duration-ms \(15000\)/,
    );
    assert.throws(
      () => parseAgentArgs([...base, '--retry-period-ms', 'soon', '--', 'e'], { POD_NAME: 'p' }),
      /--retry-period-ms must be a whole number of milliseconds above 0, not "soon"/,
    );
  });
});
