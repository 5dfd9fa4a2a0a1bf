// The replication statements of both MySQL-family engines. MariaDB's also run
// on the real node (scratch validation, see the session note); no MySQL server
// is available to this project's tests, so for MySQL 8.4 these pins are all there is.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  changeSource,
  demote,
  gtidOf,
  parseGtidPosition,
  parseReplicaStatus,
  replicationErrorOf,
  promote,
  quoteAccount,
  quoteIdentifier,
  quoteString,
  readOnlyQuery,
  replicaStatus,
  replicationAccount,
  setReadOnly,
  startReplica,
  stopReceiving,
  stopReplica,
  waitApplied,
  type Source,
} from './replication-sql.ts';

const source: Source = { host: 'db.ns.svc', port: 3306, user: 'regulon_replication', password: 's3cret' };

describe('quoting', () => {
  test('a string literal escapes quotes, backslashes and control characters', () => {
    assert.equal(quoteString(`it's`), `'it\\'s'`);
    assert.equal(quoteString('a\\b'), `'a\\\\b'`);
    assert.equal(quoteString('say "hi"'), `'say \\"hi\\"'`);
    assert.equal(quoteString('line\nbreak\r\0\x1a'), `'line\\nbreak\\r\\0\\Z'`);
    // An injection attempt stays inside the literal.
    assert.equal(quoteString(`x', MASTER_HOST='evil`), `'x\\', MASTER_HOST=\\'evil'`);
  });
  test('an identifier doubles backticks; an account quotes user and host', () => {
    assert.equal(quoteIdentifier('app'), '`app`');
    assert.equal(quoteIdentifier('we`ird'), '`we``ird`');
    assert.throws(() => quoteIdentifier('a\0b'));
    assert.equal(quoteAccount(`o'brien`), `'o\\'brien'@'%'`);
    assert.equal(quoteAccount('u', 'localhost'), `'u'@'localhost'`);
  });
});

describe('MariaDB 10.11', () => {
  test('follows a primary by GTID from its own applied position', () => {
    assert.equal(
      changeSource('mariadb', source),
      "CHANGE MASTER TO MASTER_HOST='db.ns.svc', MASTER_PORT=3306, MASTER_USER='regulon_replication', " +
        "MASTER_PASSWORD='s3cret', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=2",
    );
  });
  test('a host, user or password with a quote is escaped', () => {
    const sql = changeSource('mariadb', { ...source, host: `h'x`, user: `u'x`, password: `p'\\` });
    assert.match(sql, /MASTER_HOST='h\\'x'/);
    assert.match(sql, /MASTER_USER='u\\'x'/);
    assert.match(sql, /MASTER_PASSWORD='p\\'\\\\'/);
  });
  test('start, stop, status, read-only, wait', () => {
    assert.equal(startReplica('mariadb'), 'START SLAVE');
    assert.equal(stopReplica('mariadb'), 'STOP SLAVE');
    assert.equal(stopReceiving('mariadb'), 'STOP SLAVE IO_THREAD');
    assert.equal(replicaStatus('mariadb'), 'SHOW SLAVE STATUS');
    assert.deepEqual(setReadOnly('mariadb', true), ['SET GLOBAL read_only = ON']);
    assert.deepEqual(setReadOnly('mariadb', false), ['SET GLOBAL read_only = OFF']);
    assert.equal(readOnlyQuery('mariadb'), 'SELECT @@global.read_only AS read_only');
    assert.equal(waitApplied('mariadb', '0-101-42', 60), "SELECT MASTER_GTID_WAIT('0-101-42', 60) AS waited");
  });
  test('promotion forgets the primary, then accepts writes', () => {
    assert.deepEqual(promote('mariadb'), ['STOP SLAVE', 'RESET SLAVE ALL', 'SET GLOBAL read_only = OFF']);
  });
  test('demotion refuses writes first and starts from its own binlog position', () => {
    assert.deepEqual(demote('mariadb', source), [
      'SET GLOBAL read_only = ON',
      'SET GLOBAL rpl_semi_sync_master_enabled = OFF',
      'STOP SLAVE',
      'SET GLOBAL gtid_slave_pos = @@gtid_current_pos',
      changeSource('mariadb', source),
      'START SLAVE',
    ]);
  });
  test('a synchronous promotion takes the primary side of semi-sync before it accepts writes', () => {
    assert.deepEqual(promote('mariadb', { synchronous: true }), [
      'STOP SLAVE',
      'RESET SLAVE ALL',
      'SET GLOBAL rpl_semi_sync_master_enabled = ON',
      'SET GLOBAL read_only = OFF',
    ]);
  });
  test('the replication account gets the split SUPER privileges it needs, never SUPER or ALL', () => {
    const [create, grant] = replicationAccount('mariadb', 'regulon_replication', `pw'`);
    assert.equal(create, `CREATE USER 'regulon_replication'@'%' IDENTIFIED BY 'pw\\''`);
    for (const p of [
      'REPLICATION SLAVE',
      'SLAVE MONITOR',
      'BINLOG MONITOR',
      'REPLICATION SLAVE ADMIN',
      'READ_ONLY ADMIN',
      'REPLICATION MASTER ADMIN',
    ])
      assert.ok(grant!.includes(p), p);
    assert.doesNotMatch(grant!, /SUPER|ALL/);
  });
  test('SHOW SLAVE STATUS parses by its Slave_/Master_ column names', () => {
    const s = parseReplicaStatus('mariadb', {
      Master_Host: 'db.ns.svc',
      Slave_IO_Running: 'Yes',
      Slave_SQL_Running: 'No',
      Gtid_IO_Pos: '0-100-7',
      Seconds_Behind_Master: null,
      Last_IO_Errno: 0,
      Last_IO_Error: '',
      Last_SQL_Errno: 1062,
      Last_SQL_Error: 'Duplicate entry',
    });
    assert.deepEqual(s, {
      sourceHost: 'db.ns.svc',
      ioRunning: true,
      sqlRunning: false,
      received: '0-100-7',
      secondsBehind: undefined,
      ioState: 'Yes',
      lastIoErrno: 0,
      lastIoError: '',
      lastSqlErrno: 1062,
      lastSqlError: 'Duplicate entry',
    });
    assert.equal(parseReplicaStatus('mariadb', undefined), undefined);
  });
  test('a replication error is fatal when a thread stopped on it, not while the IO thread reconnects or was stopped on purpose', () => {
    const status = (fields: Record<string, unknown>) =>
      parseReplicaStatus('mariadb', {
        Slave_IO_Running: 'Yes',
        Slave_SQL_Running: 'Yes',
        Last_IO_Errno: 0,
        Last_IO_Error: '',
        Last_SQL_Errno: 0,
        Last_SQL_Error: '',
        ...fields,
      });
    assert.equal(replicationErrorOf(status({})), undefined);
    assert.equal(replicationErrorOf(undefined), undefined);
    const diverged =
      "Got fatal error 1236 from master when reading data from binary log: 'Error: connecting slave requested to start from GTID 0-101-90, which is not in the master's binlog'";
    assert.deepEqual(
      replicationErrorOf(status({ Slave_IO_Running: 'No', Last_IO_Errno: 1236, Last_IO_Error: diverged })),
      { message: `IO thread stopped (error 1236): ${diverged}`, fatal: true },
    );
    // Reconnecting to a primary that is not there yet: it mends itself.
    assert.deepEqual(
      replicationErrorOf(
        status({ Slave_IO_Running: 'Connecting', Last_IO_Errno: 2003, Last_IO_Error: "Can't connect" }),
      ),
      { message: "IO thread connecting (error 2003): Can't connect", fatal: false },
    );
    // STOP SLAVE IO_THREAD after an earlier reconnection error: stopped on purpose.
    assert.equal(
      replicationErrorOf(
        status({ Slave_IO_Running: 'No', Last_IO_Errno: 2003, Last_IO_Error: "Can't connect" }),
      )?.fatal,
      false,
    );
    assert.deepEqual(replicationErrorOf(status({ Slave_IO_Running: 'No' })), {
      message: 'IO thread stopped, SQL thread running, no error',
      fatal: false,
    });
    assert.deepEqual(replicationErrorOf(status({ Slave_IO_Running: 'No', Slave_SQL_Running: 'No' })), {
      message: 'IO thread stopped, SQL thread stopped, no error',
      fatal: false,
    });
    assert.deepEqual(
      replicationErrorOf(
        status({ Slave_SQL_Running: 'No', Last_SQL_Errno: 1062, Last_SQL_Error: 'Duplicate entry' }),
      ),
      { message: 'SQL thread stopped (error 1062): Duplicate entry', fatal: true },
    );
  });
  test('GTID positions: one per domain, 64-bit sequence numbers', () => {
    assert.deepEqual(parseGtidPosition('0-100-42,1-101-18446744073709551615'), [
      { domain: 0, server: 100, seq: 42n },
      { domain: 1, server: 101, seq: 18446744073709551615n },
    ]);
    assert.deepEqual(parseGtidPosition(''), []);
    assert.deepEqual(parseGtidPosition('garbage'), []);
    assert.deepEqual(gtidOf('1-5-3,0-101-9'), { domain: 0, server: 101, seq: 9n });
    assert.equal(gtidOf('1-5-3'), undefined);
  });
});

describe('MySQL 8.4', () => {
  test('follows a source by auto-positioning, with the RSA key caching_sha2_password needs', () => {
    assert.equal(
      changeSource('mysql', source),
      "CHANGE REPLICATION SOURCE TO SOURCE_HOST='db.ns.svc', SOURCE_PORT=3306, SOURCE_USER='regulon_replication', " +
        "SOURCE_PASSWORD='s3cret', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=2, GET_SOURCE_PUBLIC_KEY=1",
    );
  });
  test('a host, user or password with a quote is escaped', () => {
    const sql = changeSource('mysql', { ...source, host: `h'x`, user: `u"x`, password: `p'` });
    assert.match(sql, /SOURCE_HOST='h\\'x'/);
    assert.match(sql, /SOURCE_USER='u\\"x'/);
    assert.match(sql, /SOURCE_PASSWORD='p\\''/);
  });
  test('the REPLICA words, never SLAVE or MASTER (removed in 8.4)', () => {
    assert.equal(startReplica('mysql'), 'START REPLICA');
    assert.equal(stopReplica('mysql'), 'STOP REPLICA');
    assert.equal(stopReceiving('mysql'), 'STOP REPLICA IO_THREAD');
    assert.equal(replicaStatus('mysql'), 'SHOW REPLICA STATUS');
    const all = [...promote('mysql'), ...demote('mysql', source), changeSource('mysql', source)].join('\n');
    assert.doesNotMatch(all, /SLAVE|MASTER/);
  });
  test('super_read_only binds every account; turning it off needs read_only off too', () => {
    assert.deepEqual(setReadOnly('mysql', true), ['SET GLOBAL super_read_only = ON']);
    assert.deepEqual(setReadOnly('mysql', false), [
      'SET GLOBAL super_read_only = OFF',
      'SET GLOBAL read_only = OFF',
    ]);
    assert.equal(readOnlyQuery('mysql'), 'SELECT @@global.super_read_only AS read_only');
    assert.equal(promote('mysql', { synchronous: true })[2], 'SET GLOBAL rpl_semi_sync_source_enabled = ON');
    assert.deepEqual(promote('mysql'), [
      'STOP REPLICA',
      'RESET REPLICA ALL',
      'SET GLOBAL super_read_only = OFF',
      'SET GLOBAL read_only = OFF',
    ]);
  });
  test('demotion: read-only, then auto-positioned replication (no gtid_slave_pos in MySQL)', () => {
    assert.deepEqual(demote('mysql', source), [
      'SET GLOBAL super_read_only = ON',
      'SET GLOBAL rpl_semi_sync_source_enabled = OFF',
      'STOP REPLICA',
      changeSource('mysql', source),
      'START REPLICA',
    ]);
    assert.equal(
      waitApplied('mysql', 'uuid:1-42', 30),
      "SELECT WAIT_FOR_EXECUTED_GTID_SET('uuid:1-42', 30) AS waited",
    );
  });
  test("the replication account: MySQL's dynamic privileges, never SUPER or ALL", () => {
    const [, grant] = replicationAccount('mysql', 'regulon_replication', 'pw');
    for (const p of [
      'REPLICATION SLAVE',
      'REPLICATION CLIENT',
      'REPLICATION_SLAVE_ADMIN',
      'SYSTEM_VARIABLES_ADMIN',
    ])
      assert.ok(grant!.includes(p), p);
    assert.doesNotMatch(grant!, /SUPER|ALL|SLAVE MONITOR|READ_ONLY ADMIN/);
  });
  test('SHOW REPLICA STATUS parses by its Replica_/Source_ column names', () => {
    const s = parseReplicaStatus('mysql', {
      Source_Host: 'db',
      Replica_IO_Running: 'Yes',
      Replica_SQL_Running: 'Yes',
      Retrieved_Gtid_Set: 'uuid:1-5',
      Seconds_Behind_Source: '0',
      Last_IO_Error: '',
      Last_SQL_Error: '',
    });
    assert.equal(s?.ioRunning && s.sqlRunning, true);
    assert.equal(s?.received, 'uuid:1-5');
    assert.equal(s?.secondsBehind, 0);
  });
});

test('ports and timeouts are positive integers (nothing else reaches the statement)', () => {
  assert.throws(() => changeSource('mariadb', { ...source, port: 0 }));
  assert.throws(() => changeSource('mysql', { ...source, port: Number.NaN }));
  assert.throws(() => waitApplied('mariadb', '0-1-1', 1.5));
});
