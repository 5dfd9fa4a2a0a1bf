// The replication tests' workload, where it is pure: the writer's loop (run
// here by sh against a stand-in client, so that what it logs as acknowledged
// is pinned without a server), its Pod, the log's parsing, and the sampler's
// summary.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  describeSplitBrain,
  lostWrites,
  outagesOf,
  parseWriterLog,
  replicationThreads,
  summarise,
  writerPod,
  writerScript,
  type SampleRound,
  type WorkloadEngine,
} from './workload.ts';

/**
 * Runs the writer's loop for `seconds` with `client` (psql or mariadb) being a
 * stand-in that fails every third call the way the real one does, and
 * returns what the loop printed.
 */
function runLoop(engine: WorkloadEngine, seconds: number): { log: string; calls: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'writer-loop-'));
  try {
    const client = engine === 'mariadb' ? 'mariadb' : 'psql';
    // The real mariadb client echoes the failed statement, framed, before its ERROR line.
    const failure =
      engine === 'mariadb'
        ? `printf -- '--------------\\n%s\\n--------------\\n\\nERROR 1290 (HY000) at line 1: read-only\\n' "$last"`
        : `echo 'psql: error: cannot execute INSERT in a read-only transaction'`;
    writeFileSync(
      join(dir, client),
      `#!/bin/sh
for last; do :; done
echo "$*" >> ${dir}/calls
n=$(wc -l < ${dir}/calls)
sleep 0.01
if [ $((n % 3)) -eq 0 ]; then ${failure} >&2; exit 1; fi
`,
    );
    chmodSync(join(dir, client), 0o755);
    const run = spawnSync('timeout', [String(seconds), 'sh', '-c', writerScript({ engine })], {
      env: {
        PATH: `${dir}:/usr/bin:/bin`,
        DATABASE_URI: 'postgresql://u@h/app',
        DB_HOST: 'h',
        DB_PORT: '3306',
        DB_USER: 'u',
        DB_NAME: 'app',
      },
      encoding: 'utf8',
    });
    const calls = spawnSync('cat', [join(dir, 'calls')], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n');
    return { log: run.stdout, calls };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the writer loop', () => {
  for (const engine of ['postgres', 'mariadb'] as const) {
    test(`${engine}: acks only what the client committed, retries the same id, logs the error line`, () => {
      const { log, calls } = runLoop(engine, 1);
      // parseWriterLog throws on a gap in the acknowledged ids.
      const parsed = parseWriterLog(log);
      assert.ok(parsed.tableReadyAtMs !== undefined, log);
      assert.ok(parsed.acks.length >= 5, `a few acks in a second: ${log}`);
      assert.ok(parsed.failures.length >= 2, log);
      // Every failed insert is followed by a retry of that id, which is then acked.
      for (const f of parsed.failures.filter((x) => x.id > 0 && x.id <= parsed.acks.length))
        assert.ok(parsed.acks.some((a) => a.id === f.id && a.atMs >= f.atMs));
      // The first failure carries the error line, not the echoed statement.
      const message = parsed.failures[0]!.message ?? '';
      assert.match(message, engine === 'mariadb' ? /^ERROR 1290/ : /^psql: error/);
      const inserts = calls.filter((c) => c.includes('insert into regulon_load'));
      assert.ok(inserts.length >= parsed.acks.length);
      if (engine === 'mariadb') {
        assert.match(inserts[0]!, /values \(1\) on duplicate key update id = id$/);
        assert.match(
          calls[0]!,
          /^--no-defaults --protocol=TCP --connect-timeout=2 -h h -P 3306 -u u -D app /,
        );
      } else assert.match(inserts[0]!, /values \(1\) on conflict do nothing$/);
    });
  }
});

describe('the writer Pod', () => {
  test('postgres: the URI from the Secret, as before', () => {
    const pod = writerPod({ namespace: 'ns', db: 'pg' });
    const c = pod.spec!.containers[0]!;
    assert.deepEqual(
      c.env?.map((e) => [e.name, e.valueFrom?.secretKeyRef?.key ?? e.value]),
      [
        ['DATABASE_URI', 'uri'],
        ['PGCONNECT_TIMEOUT', '2'],
        ['PGAPPNAME', 'regulon-load-writer'],
      ],
    );
    assert.match(c.command!.at(-1)!, /psql "\$DATABASE_URI"/);
  });

  test('mariadb: each connection value from the Secret, the password only in MYSQL_PWD', () => {
    const pod = writerPod({ namespace: 'ns', db: 'm', engine: 'mariadb', secretName: 'creds' });
    const c = pod.spec!.containers[0]!;
    assert.deepEqual(
      c.env?.map((e) => [e.name, e.valueFrom?.secretKeyRef?.name, e.valueFrom?.secretKeyRef?.key, e.value]),
      [
        ['DB_HOST', 'creds', 'host', undefined],
        ['DB_PORT', 'creds', 'port', undefined],
        ['DB_USER', 'creds', 'username', undefined],
        ['DB_NAME', 'creds', 'database', undefined],
        ['MYSQL_PWD', 'creds', 'password', undefined],
      ],
    );
    const script = c.command!.at(-1)!;
    assert.match(script, /mariadb --no-defaults --protocol=TCP/);
    assert.doesNotMatch(script, /psql|--password|-p"/);
    // Restricted Pod Security, and none of the instance label (the Services must not select it).
    assert.equal(pod.spec!.securityContext?.runAsNonRoot, true);
    assert.equal(pod.metadata?.labels?.['app.kubernetes.io/instance'], undefined);
  });
});

test('parseWriterLog: acks in order, failures with their message, a rotated log refused', () => {
  const log = parseWriterLog(
    [
      'start 1000',
      'fail 0 1001 1 ERROR 2002 (HY000): x',
      'table 1100',
      'ack 1 1200',
      'fail 2 1300 124',
      'ack 2 1900',
      '',
    ].join('\n'),
  );
  assert.deepEqual(log, {
    startedAtMs: 1000,
    tableReadyAtMs: 1100,
    acks: [
      { id: 1, atMs: 1200 },
      { id: 2, atMs: 1900 },
    ],
    failures: [
      { id: 0, atMs: 1001, exitCode: 1, message: 'ERROR 2002 (HY000): x' },
      { id: 2, atMs: 1300, exitCode: 124 },
    ],
  });
  assert.throws(() => parseWriterLog('ack 5 1\n'), /follows ack 0/);
  assert.throws(() => parseWriterLog('ack 1 1\n'), /no start line/);
  assert.deepEqual(outagesOf(log.acks), [{ fromMs: 1200, toMs: 1900, durationMs: 700, afterId: 1 }]);
  assert.deepEqual(lostWrites([1, 2, 3], new Set([1, 3])), [2]);
});

test('replicationThreads: what SHOW SLAVE STATUS says runs', () => {
  assert.equal(replicationThreads(undefined), '');
  assert.equal(replicationThreads({ Slave_IO_Running: 'No', Slave_SQL_Running: 'No' }), '');
  assert.equal(
    replicationThreads({ Slave_IO_Running: 'Connecting', Slave_SQL_Running: 'Yes' }),
    'IO Connecting, SQL Yes',
  );
  assert.equal(replicationThreads({ Slave_IO_Running: 'Yes', Slave_SQL_Running: 'No' }), 'IO Yes');
});

test('summarise: split-brain rounds, the writable sequence and the spans with none', () => {
  const round = (atMs: number, writable: string[]): SampleRound => ({
    atMs,
    tookMs: 10,
    instances: writable.map((name) => ({ name, ip: `10.0.0.${name.slice(-1)}`, role: 'writable' })),
    writable,
  });
  const s = summarise([
    round(0, ['db-0']),
    round(200, []),
    round(400, []),
    round(600, ['db-1']),
    round(800, ['db-1', 'db-0']),
    round(1000, ['db-1']),
  ]);
  assert.equal(s.maxWritableAtOnce, 2);
  assert.deepEqual(s.splitBrainRounds, [{ atMs: 800, writable: ['db-1', 'db-0'] }]);
  assert.deepEqual(s.splitBrainSpans, [
    { fromMs: 800, toMs: 800, rounds: 1, writable: ['db-0@10.0.0.0', 'db-1@10.0.0.1'] },
  ]);
  assert.equal(describeSplitBrain(s, 0), 'db-0@10.0.0.0 and db-1@10.0.0.1 from +0.8 s to +0.8 s (1 rounds)');
  assert.deepEqual(s.writableSequence, ['db-0', 'db-1', 'db-0', 'db-1']);
  assert.deepEqual(s.noWritableSpans, [{ fromMs: 200, toMs: 600 }]);
});

test('summarise: consecutive split-brain rounds with the same instances make one span; a new address starts another', () => {
  const round = (atMs: number, writable: Array<[string, string]>): SampleRound => ({
    atMs,
    tookMs: 10,
    instances: writable.map(([name, ip]) => ({ name, ip, role: 'writable' })),
    writable: writable.map(([name]) => name),
  });
  const s = summarise([
    round(0, [['db-0', 'a']]),
    round(200, [
      ['db-0', 'a'],
      ['db-2', 'c'],
    ]),
    round(400, [
      ['db-2', 'c'],
      ['db-0', 'a'],
    ]),
    round(600, [['db-2', 'c']]),
    round(800, [
      ['db-0', 'b'],
      ['db-2', 'c'],
    ]),
  ]);
  assert.deepEqual(s.splitBrainSpans, [
    { fromMs: 200, toMs: 400, rounds: 2, writable: ['db-0@a', 'db-2@c'] },
    { fromMs: 800, toMs: 800, rounds: 1, writable: ['db-0@b', 'db-2@c'] },
  ]);
  assert.equal(
    describeSplitBrain(s, 100),
    'db-0@a and db-2@c from +0.1 s to +0.3 s (2 rounds); db-0@b and db-2@c from +0.7 s to +0.7 s (1 rounds)',
  );
});
