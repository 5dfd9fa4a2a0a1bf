import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseQuorum, parseRole } from './agent.ts';
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

  test("its Pod's uid from --pod-uid or POD_UID; without either its Pod is not checked", () => {
    assert.equal(parseAgentArgs([...base, '--pod-uid', 'u-1', '--', 'e'], { POD_NAME: 'p' }).podUid, 'u-1');
    assert.equal(parseAgentArgs([...base, '--', 'e'], { POD_NAME: 'p', POD_UID: 'u-2' }).podUid, 'u-2');
    assert.equal(parseAgentArgs([...base, '--', 'e'], { POD_NAME: 'p' }).podUid, undefined);
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

  test('without a Lease, metrics only: the Lease and the role command go together, and then the metrics are required', () => {
    const metrics = ['--metrics-port', '9150', '--metrics-engine', 'memcached', '--metrics-command', 'stats'];
    const c = parseAgentArgs(['--namespace', 'shop', ...metrics, '--', 'memcached'], { POD_NAME: 'p' });
    assert.equal(c.lease, undefined);
    assert.equal(c.roleCommand, undefined);
    assert.deepEqual(c.metrics, { port: 9150, engine: 'memcached', command: 'stats' });
    assert.throws(
      () => parseAgentArgs(['--namespace', 'shop', '--lease', 'l', ...metrics, '--', 'e'], { POD_NAME: 'p' }),
      /--lease and --role-command go together/,
    );
    assert.throws(
      () => parseAgentArgs(['--namespace', 'shop', '--role-command', 'c', '--', 'e'], { POD_NAME: 'p' }),
      /--lease and --role-command go together/,
    );
    assert.throws(
      () =>
        parseAgentArgs(['--namespace', 'shop', '--quorum-command', 'q', ...metrics, '--', 'e'], {
          POD_NAME: 'p',
        }),
      /--quorum-command is the primary Lease's/,
    );
    assert.throws(
      () => parseAgentArgs(['--namespace', 'shop', '--', 'e'], { POD_NAME: 'p' }),
      /without --lease it only publishes metrics/,
    );
  });

  test('the metrics endpoint: port, engine and command together, or none', () => {
    assert.equal(parseAgentArgs([...base, '--', 'e'], { POD_NAME: 'p' }).metrics, undefined);
    const metrics = [
      '--metrics-port',
      '9121',
      '--metrics-engine',
      'redis',
      '--metrics-command',
      'redis-cli info',
    ];
    assert.deepEqual(parseAgentArgs([...base, ...metrics, '--', 'e'], { POD_NAME: 'p' }).metrics, {
      port: 9121,
      engine: 'redis',
      command: 'redis-cli info',
    });
    assert.throws(
      () => parseAgentArgs([...base, '--metrics-port', '9121', '--', 'e'], { POD_NAME: 'p' }),
      /--metrics-port, --metrics-engine and --metrics-command go together/,
    );
    const withEngine = (engine: string) =>
      metrics.map((a, i) => (metrics[i - 1] === '--metrics-engine' ? engine : a));
    assert.throws(
      () => parseAgentArgs([...base, ...withEngine('oracle'), '--', 'e'], { POD_NAME: 'p' }),
      /--metrics-engine "oracle" is not one the agent knows \(redis, memcached, mariadb, postgres\)/,
    );
    assert.throws(
      () =>
        parseAgentArgs([...base, ...metrics.map((a) => (a === '9121' ? '70000' : a)), '--', 'e'], {
          POD_NAME: 'p',
        }),
      /--metrics-port must be a port number, not "70000"/,
    );
  });

  test('reads the quorum command, which is optional', () => {
    assert.equal(parseAgentArgs([...base, '--', 'e'], { POD_NAME: 'p' }).quorumCommand, undefined);
    const c = parseAgentArgs([...base, '--quorum-command', 'echo 2 3', '--', 'e'], { POD_NAME: 'p' });
    assert.equal(c.quorumCommand, 'echo 2 3');
  });
});

describe('the answers of the engine commands', () => {
  test('role: primary, replica, or nothing known', () => {
    assert.equal(parseRole('primary\n'), true);
    assert.equal(parseRole(' replica '), false);
    assert.equal(parseRole('t'), undefined);
    assert.equal(parseRole(undefined), undefined);
  });
  test('quorum: two whole numbers, in touch between 1 and the members', () => {
    assert.deepEqual(parseQuorum('2 3\n'), { inTouch: 2, members: 3 });
    assert.deepEqual(parseQuorum('1 1'), { inTouch: 1, members: 1 });
    for (const bad of ['', '2', '4 3', '0 3', '2 3 4', 'two three', undefined])
      assert.equal(parseQuorum(bad), undefined, JSON.stringify(bad));
  });
});
