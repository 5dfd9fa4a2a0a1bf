// The replication tests' workload, where it is pure: the writer's loop (run
// here by sh against a stand-in client, so that what it logs as acknowledged
// is pinned without a server), its Pod, and the log's parsing.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import {
  lostWrites,
  outagesOf,
  parseWriterLog,
  replicationThreads,
  WRITER_SOURCE,
  writerPod,
  writerSettings,
  type WorkloadEngine,
} from './workload.ts';

/**
 * Stand-ins for the two drivers writer.py imports, each writing every statement
 * it is given (with the address it dials) to $STUB_CALLS: every third call fails
 * the way the real server answers a read-only instance, and the eighth hangs
 * (postgres: no answer on the socket; mariadb: the driver's read timeout).
 */
const STUB_DRIVERS: Record<string, string> = {
  'psycopg2/__init__.py': `
import os, weakref
from . import extensions
class Error(Exception): pass
class OperationalError(Error): pass
def _call(line, log='STUB_CALLS'):
    with open(os.environ[log], 'a') as f: f.write(line + '\\n')
    return sum(1 for _ in open(os.environ[log]))
class _Cursor:
    def __init__(self, conn): self.conn = conn
    def execute(self, sql):
        self.conn.cursor_ref = weakref.ref(self)
        n = _call(f'{self.conn.hostaddr} {self.conn.dsn} {sql}')
        if n == 8: self.conn.hang = True
        elif n % 3 == 0: self.conn.error = 'cannot execute INSERT in a read-only transaction'
class _Conn:
    def __init__(self, dsn, hostaddr):
        self.dsn, self.hostaddr, self.error, self.hang, self.cursor_ref = dsn, hostaddr, None, False, None
        self.r, self.w = os.pipe()
    def poll(self):
        # As psycopg2 does: an asynchronous query is polled through its cursor, which must still exist.
        if self.cursor_ref and self.cursor_ref() is None:
            raise Error('the asynchronous cursor has disappeared')
        if self.hang: return extensions.POLL_READ
        if self.error: raise Error(self.error + '\\nLINE 1: ...')
        return extensions.POLL_OK
    def fileno(self): return self.r
    def cursor(self): return _Cursor(self)
    def close(self): os.close(self.r); os.close(self.w)
def connect(dsn, hostaddr=None, async_=0):
    assert async_ == 1
    conn = _Conn(dsn, hostaddr)
    # The tenth session never opens: its server does not answer.
    if _call('connect', 'STUB_CONNECTS') == 10: conn.hang = True
    return conn
`,
  'psycopg2/extensions.py': 'POLL_OK, POLL_READ, POLL_WRITE = 0, 1, 2\n',
  'pymysql/__init__.py': `
import os
from . import err
def _call(line):
    with open(os.environ['STUB_CALLS'], 'a') as f: f.write(line + '\\n')
    return sum(1 for _ in open(os.environ['STUB_CALLS']))
class _Cursor:
    def __init__(self, kw): self.kw = kw
    def execute(self, sql):
        n = _call(f"{self.kw['host']}:{self.kw['port']} {self.kw['user']}@{self.kw['database']} {sql}")
        if n == 8: raise err.OperationalError(2013, 'Lost connection to server during query (timed out)')
        if n % 3 == 0: raise err.OperationalError(1290, 'The MariaDB server is running with the --read-only option')
class _Conn:
    def __init__(self, kw): self.kw = kw
    def cursor(self): return _Cursor(self.kw)
    def close(self): pass
def connect(**kw):
    assert kw['autocommit'] and kw['password'] == 'secret'
    return _Conn(kw)
`,
  'pymysql/err.py': 'class OperationalError(Exception): pass\n',
};

/** Runs writer.py for `seconds` against the stand-in drivers; returns what it printed and the calls. */
function runLoop(engine: WorkloadEngine, seconds: number): { log: string; calls: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'writer-loop-'));
  try {
    for (const [file, source] of Object.entries(STUB_DRIVERS)) {
      mkdirSync(join(dir, dirname(file)), { recursive: true });
      writeFileSync(join(dir, file), source);
    }
    const settings = Object.fromEntries(
      writerSettings({ engine, statementTimeoutSeconds: 0.3 }).map((e) => [e.name, e.value!]),
    );
    const run = spawnSync('timeout', [String(seconds), 'python3', '-c', WRITER_SOURCE], {
      env: {
        PATH: '/usr/bin:/bin',
        PYTHONPATH: dir,
        STUB_CALLS: join(dir, 'calls'),
        STUB_CONNECTS: join(dir, 'connects'),
        WRITER_CONNECT_TIMEOUT: '0.2',
        ...settings,
        // localhost: a name this machine resolves, to an address the calls must show.
        DATABASE_URI: 'postgresql://u@localhost/app',
        DB_HOST: 'localhost',
        DB_PORT: '3306',
        DB_USER: 'u',
        DB_NAME: 'app',
        MYSQL_PWD: 'secret',
      },
      encoding: 'utf8',
    });
    assert.equal(run.stderr, '', 'the loop raised nothing');
    const calls = spawnSync('cat', [join(dir, 'calls')], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter(Boolean);
    return { log: run.stdout, calls };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the writer loop', () => {
  for (const engine of ['postgres', 'mariadb'] as const) {
    test(`${engine}: acks only what committed, retries the same id, logs the error line, times out a hung statement`, () => {
      const { log, calls } = runLoop(engine, 2);
      // parseWriterLog throws on a gap in the acknowledged ids.
      const parsed = parseWriterLog(log);
      assert.ok(parsed.tableReadyAtMs !== undefined, log);
      assert.ok(parsed.acks.length >= 5, `a few acks: ${log}`);
      // The first call creates the table; the third (insert 2) is refused, the eighth (insert 5) hangs.
      const failures = parsed.failures.map((f) => [f.id, f.exitCode]);
      assert.deepEqual(failures.slice(0, 2), [
        [2, 1],
        [4, 1],
      ]);
      assert.ok(
        failures.some(([id, code]) => id === 5 && code === 124),
        `the hung insert of id 5 timed out: ${log}`,
      );
      // postgres: the tenth session never opens, and that attempt times out as well.
      if (engine === 'postgres')
        assert.equal(
          failures.filter(([, code]) => code === 124).length,
          2,
          `a session that never opened timed out: ${log}`,
        );
      // Every failed insert is followed by a retry of that id, which is then acked.
      for (const f of parsed.failures.filter((x) => x.id > 0 && x.id <= parsed.acks.length))
        assert.ok(parsed.acks.some((a) => a.id === f.id && a.atMs >= f.atMs));
      // The first failure carries the server's first line; a repeated message is not repeated.
      assert.match(
        parsed.failures[0]!.message ?? '',
        engine === 'mariadb'
          ? /^ERROR 1290: The MariaDB server is running/
          : /^cannot execute INSERT in a read-only transaction$/,
      );
      assert.equal(parsed.failures[1]!.message, undefined);
      const inserts = calls.filter((c) => c.includes('insert into regulon_load'));
      assert.ok(inserts.length >= parsed.acks.length);
      // Every call dials the address the name resolved to once.
      if (engine === 'mariadb') {
        assert.match(inserts[0]!, /values \(1\) on duplicate key update id = id$/);
        for (const c of calls) assert.match(c, /^127\.0\.0\.1:3306 u@app /);
      } else {
        assert.match(inserts[0]!, /values \(1\) on conflict do nothing$/);
        for (const c of calls) assert.match(c, /^127\.0\.0\.1 postgresql:\/\/u@localhost\/app /);
      }
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
        ['PGAPPNAME', 'regulon-load-writer'],
        ['WRITER_ENGINE', 'postgres'],
        [
          'WRITER_CREATE',
          'create table if not exists regulon_load (id bigint primary key, at timestamptz default now())',
        ],
        ['WRITER_INSERT', 'insert into regulon_load (id) values ({id}) on conflict do nothing'],
        ['WRITER_STATEMENT_TIMEOUT', '5'],
        ['WRITER_PAUSE', '0'],
      ],
    );
    assert.deepEqual(c.command!.slice(0, 2), ['python3', '-c']);
  });

  test('mariadb: each connection value from the Secret, the password only in MYSQL_PWD', () => {
    const pod = writerPod({ namespace: 'ns', db: 'm', engine: 'mariadb', secretName: 'creds' });
    const c = pod.spec!.containers[0]!;
    assert.deepEqual(
      c.env
        ?.filter((e) => !e.name.startsWith('WRITER_'))
        .map((e) => [e.name, e.valueFrom?.secretKeyRef?.name, e.valueFrom?.secretKeyRef?.key, e.value]),
      [
        ['DB_HOST', 'creds', 'host', undefined],
        ['DB_PORT', 'creds', 'port', undefined],
        ['DB_USER', 'creds', 'username', undefined],
        ['DB_NAME', 'creds', 'database', undefined],
        ['MYSQL_PWD', 'creds', 'password', undefined],
      ],
    );
    assert.equal(c.env?.find((e) => e.name === 'WRITER_ENGINE')?.value, 'mariadb');
    assert.equal(c.env?.find((e) => e.name === 'WRITER_PAUSE')?.value, '0');
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
