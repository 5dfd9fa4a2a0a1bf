// The renderer is the last line of defence: whatever reaches it (an object
// stored before the CRD had rules), the file it writes holds the operator's
// settings and one line per parameter, nothing else. Each file is read back
// the way its engine reads it (postgres: guc-file.l; mysql: my_default.cc).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { InvalidParametersError, renderConfig } from './config.ts';
import { postgresOperatorSettings } from './postgres/config.ts';
import { canonicalName, isReservedName, PARAMETER_LIMITS } from './parameters.ts';
import { mariadbOperatorSettings } from './mariadb/start-script.ts';
import { CONTROL_CHARACTERS, PARAMETER_ROWS, databaseWith } from './testing/parameters-corpus.ts';
import { RESERVED_PARAMETERS, type Engine } from './versions.ts';

const db = databaseWith;

/** postgresql.conf as ParseConfigFp reads it: one `name [=] value` per line, `#` comments. */
function readPostgres(content: string): Array<[string, string]> {
  const id = '[A-Za-z_\\x80-\\uffff][A-Za-z0-9_\\x80-\\uffff]*';
  const line = new RegExp(
    `^[ \\t\\r]*(${id}(?:\\.${id})?)[ \\t\\r]*=?[ \\t\\r]*('(?:[^'\\\\\\n]|\\\\.|'')*'|[^\\s'#]+)[ \\t\\r]*(?:#.*)?$`,
  );
  const out: Array<[string, string]> = [];
  for (const l of content.split('\n')) {
    if (/^[ \t\r]*(#.*)?$/.test(l)) continue;
    const m = line.exec(l);
    assert.ok(m, `postgres: syntax error in ${JSON.stringify(l)}`);
    const [, name, raw] = m as unknown as [string, string, string];
    out.push([name, raw.startsWith("'") ? deescape(raw.slice(1, -1)) : raw]);
  }
  return out;
}

/** DeescapeQuotedString: `\b \f \n \r \t`, octal, any other `\x` is x, and `''` is `'`. */
function deescape(s: string): string {
  const named: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
  return s.replace(/\\([0-7]{1,3}|.)|''/gs, (all, e: string | undefined) => {
    if (all === "''") return "'";
    if (/^[0-7]/.test(e!)) return String.fromCharCode(parseInt(e!, 8));
    return named[e!] ?? e!;
  });
}

/** my.cnf as search_default_file_with_buffers reads it, to the `--name=value` options mysqld gets. */
function readMysql(content: string): {
  directives: string[];
  groups: string[];
  options: Array<[string, string]>;
} {
  const out = { directives: [] as string[], groups: [] as string[], options: [] as Array<[string, string]> };
  for (const raw of content.split('\n')) {
    const l = raw.replace(/^\s+/, '');
    if (l === '' || l.startsWith('#') || l.startsWith(';')) continue;
    if (l.startsWith('!')) out.directives.push(l);
    else if (l.startsWith('[')) out.groups.push(l);
    else {
      const line = removeEndComment(l);
      const eq = line.indexOf('=');
      const name = (eq < 0 ? line : line.slice(0, eq)).trimEnd();
      let value = eq < 0 ? '' : line.slice(eq + 1).trim();
      if (/^["']/.test(value) && value.length > 1 && value[0] === value.at(-1)) value = value.slice(1, -1);
      const esc: Record<string, string> = {
        n: '\n',
        t: '\t',
        r: '\r',
        b: '\b',
        s: ' ',
        '"': '"',
        "'": "'",
        '\\': '\\',
      };
      value = value.replace(/\\(.)/gs, (all, c: string) => esc[c] ?? all);
      out.options.push([name, value]);
    }
  }
  return out;
}

function removeEndComment(s: string): string {
  let quote = '';
  let escape = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if ((c === "'" || c === '"') && !escape) {
      if (!quote) quote = c;
      else if (quote === c) quote = '';
    }
    if (!quote && c === '#') return s.slice(0, i);
    escape = Boolean(quote) && c === '\\' && !escape;
  }
  return s;
}

/** Values that try to end their line or their quoting, without a control character. */
const TRICKY = {
  quote: "it's",
  doubled: "''",
  lone: "'",
  backslash: 'C:\\path\\',
  escapes: '\\n\\r\\t\\0\\101',
  comment: '200 # port = 6543',
  semicolon: '200; port = 6543',
  equals: 'a = b = c',
  dquote: '"x" "y',
  unicode: 'ünïcödé — ✓ \u2028 \u2029',
  empty: '',
  spaces: '  padded  ',
  long: 'x'.repeat(PARAMETER_LIMITS.maxValueLength),
};

/** The names a parameter reached mysqld under, as mysqld matches them. */
const mysqlOptions = (content: string) => readMysql(content).options.map(([n]) => canonicalName('mysql', n));

describe('renderConfig', () => {
  test('postgres: each parameter is one line and the engine reads back exactly the value given', () => {
    const { file, content } = renderConfig(db('postgres', { max_connections: '200', ...TRICKY }));
    assert.equal(file, 'postgresql.conf');
    const read = readPostgres(content);
    const operator = postgresOperatorSettings(db('postgres', {})).map(([n]) => n);
    assert.deepEqual(
      read.slice(0, operator.length).map(([n]) => n),
      operator,
      "the operator's settings come first",
    );
    assert.deepEqual(read.slice(0, 2), [
      ['listen_addresses', '*'],
      ['port', '5432'],
    ]);
    const user = read.slice(operator.length);
    assert.deepEqual(
      new Map(user),
      new Map(Object.entries({ max_connections: '200', ...TRICKY })),
      'every value reads back unchanged',
    );
    assert.equal(user.length, 1 + Object.keys(TRICKY).length, 'one line per parameter, nothing more');
    assert.equal(
      user.filter(([n]) => isReservedName('postgres', n)).length,
      0,
      'only the operator sets reserved names',
    );
    assert.ok(
      operator.every(
        (n) => isReservedName('postgres', n) || ['max_wal_senders', 'max_replication_slots'].includes(n),
      ),
      'what the operator sets, a user cannot (but may raise the sender and slot limits)',
    );
  });

  test('postgres: values render as postgresql.conf literals after the operator settings', () => {
    const operator = postgresOperatorSettings(db('postgres', {}))
      .map(([k, v]) => `${k} = ${v}\n`)
      .join('');
    assert.equal(
      renderConfig(
        db('postgres', { work_mem: '4MB', search_path: '"$user", public', log_line_prefix: "it's '%m'" }),
      ).content,
      `${operator}log_line_prefix = 'it''s ''%m'''\nsearch_path = '"$user", public'\nwork_mem = '4MB'\n`,
    );
  });

  test('postgres: synchronous replication waits for any one standby among the instances, by name', () => {
    const sync = db('postgres', {});
    sync.spec.replicas = 2;
    sync.spec.replication = { synchronous: true };
    const name = sync.metadata.name!;
    const all = [0, 1, 2, 3, 4].map((i) => `"${name}-${i}"`).join(', ');
    // Every name the Database can have: scaling to 5 changes nothing, and no stranger counts.
    assert.match(
      renderConfig(sync).content,
      new RegExp(`^synchronous_standby_names = 'ANY 1 \\(${all}\\)'$`, 'm'),
    );
    sync.spec.replicas = 5;
    assert.match(
      renderConfig(sync).content,
      new RegExp(`^synchronous_standby_names = 'ANY 1 \\(${all}\\)'$`, 'm'),
    );
    assert.doesNotMatch(renderConfig(db('postgres', {})).content, /synchronous_standby_names/);
  });

  test('mysql: each parameter is one line in [mysqld], with no directive and no reserved name', () => {
    const { file, content } = renderConfig(
      db('mysql', { max_connections: '200', 'innodb-buffer-pool-size': '1G', ...TRICKY }),
    );
    assert.equal(file, 'my.cnf');
    const read = readMysql(content);
    assert.deepEqual(read.directives, []);
    assert.deepEqual(read.groups, ['[mysqld]']);
    assert.deepEqual(
      read.options.map(([n]) => n),
      [
        'port',
        'bind-address',
        ...Object.keys({ max_connections: 1, 'innodb-buffer-pool-size': 1, ...TRICKY }).sort((a, b) =>
          a.localeCompare(b),
        ),
      ],
      'one option per parameter, under its own name',
    );
    assert.deepEqual(read.options.slice(0, 2), [
      ['port', '3306'],
      ['bind-address', '0.0.0.0'],
    ]);
    assert.equal(mysqlOptions(content).filter((n) => isReservedName('mysql', n)).length, 2);
  });

  test('mysql: plain values render as before (no rollout on upgrade), and keep my.cnf value syntax', () => {
    const { content } = renderConfig(
      db('mysql', { max_connections: '200', sql_mode: "'STRICT_ALL_TABLES'" }),
    );
    assert.equal(
      content,
      "[mysqld]\nport = 3306\nbind-address = 0.0.0.0\nmax_connections = 200\nsql_mode = 'STRICT_ALL_TABLES'\n",
    );
    assert.deepEqual(readMysql(content).options.at(-1), ['sql_mode', 'STRICT_ALL_TABLES']);
  });

  test("mariadb: the operator's replication settings in [mysqld], then one line per parameter; none of them a user's to set", () => {
    const { file, content } = renderConfig(db('mariadb', { max_connections: '200', ...TRICKY }));
    assert.equal(file, 'my.cnf');
    const read = readMysql(content);
    assert.deepEqual(read.directives, []);
    assert.deepEqual(read.groups, ['[mysqld]']);
    const operator = mariadbOperatorSettings().map(([n]) => n);
    assert.deepEqual(
      read.options.map(([n]) => n),
      [...operator, ...Object.keys({ max_connections: 1, ...TRICKY }).sort((a, b) => a.localeCompare(b))],
    );
    assert.deepEqual(
      new Map(read.options).get('gtid_strict_mode'),
      'ON',
      'GTIDs, so a replica follows any new primary from where it stands',
    );
    for (const durable of ['sync_binlog', 'innodb_flush_log_at_trx_commit', 'log_slave_updates', 'server_id'])
      assert.ok(isReservedName('mariadb', durable), `${durable} is the operator's`);
    assert.deepEqual(
      operator.filter((n) => !isReservedName('mariadb', n)),
      [
        'skip_name_resolve',
        'binlog_expire_logs_seconds',
        'slave_net_timeout',
        'character_set_server',
        'collation_server',
      ],
      'what the operator sets, a user cannot, but for tunables it only gives a default',
    );
  });

  test('mariadb: semi-synchronous replication on the replicas; the primary turns its side on when it starts or is promoted', () => {
    const sync = db('mariadb', {});
    sync.spec.replicas = 2;
    sync.spec.replication = { synchronous: true };
    const options = new Map(readMysql(renderConfig(sync).content).options);
    assert.equal(options.get('rpl_semi_sync_slave_enabled'), 'ON');
    assert.equal(options.get('rpl_semi_sync_master_enabled'), 'OFF');
    assert.equal(
      new Map(readMysql(renderConfig(db('mariadb', {})).content).options).has('rpl_semi_sync_slave_enabled'),
      false,
    );
  });

  test('every input the CRD rejects, the renderer refuses too; every input it accepts renders', () => {
    for (const row of PARAMETER_ROWS) {
      const render = () => renderConfig(db(row.engine, row.parameters));
      if (!row.rejected) {
        assert.doesNotThrow(render, row.what);
        continue;
      }
      assert.throws(
        render,
        (err: unknown) => err instanceof InvalidParametersError && err.reason === 'InvalidParameters',
        row.what,
      );
    }
  });

  test('no row of the bad-input corpus repeats another', () => {
    const keys = PARAMETER_ROWS.map((r) => `${r.engine} ${JSON.stringify(r.parameters)}`);
    assert.deepEqual(
      keys.filter((k, i) => keys.indexOf(k) !== i),
      [],
    );
  });

  test('a value with any control character is refused, on every engine', () => {
    const controls = [...Array(0x20).keys(), 0x7f, ...Array.from({ length: 0x20 }, (_, i) => 0x80 + i)];
    assert.ok(CONTROL_CHARACTERS.every(([, c]) => controls.includes(c.charCodeAt(0))));
    for (const engine of ['postgres', 'mysql', 'mariadb'] as const)
      for (const code of controls) {
        const value = `4MB${String.fromCharCode(code)}port = 1`;
        assert.throws(
          () => renderConfig(db(engine, { work_mem: value })),
          /spec\.parameters: the value of "work_mem" contains a line break or another control character/,
          `${engine} U+${code.toString(16)}`,
        );
      }
  });

  test('a reserved name is refused in every spelling the engine takes for it', () => {
    const spellings = (engine: Engine, name: string) => {
      const forms = [name, name.toUpperCase(), name.replace(/^./, (c) => c.toUpperCase())];
      if (engine === 'postgres') return forms;
      // mysqld: `-` and `_` are one character, and option prefixes come off, as often as they repeat.
      const bare = canonicalName('mysql', name);
      return [
        ...forms,
        name.replaceAll('-', '_'),
        name.replaceAll('_', '-'),
        ...['loose', 'skip', 'enable', 'disable', 'maximum'].flatMap((p) => [`${p}-${bare}`, `${p}_${bare}`]),
        `loose-skip-${bare}`,
        `LOOSE_ENABLE_${bare.toUpperCase().replaceAll('-', '_')}`,
      ];
    };
    for (const engine of ['postgres', 'mysql', 'mariadb'] as const)
      for (const name of RESERVED_PARAMETERS[engine])
        for (const spelling of spellings(engine, name))
          assert.throws(
            () => renderConfig(db(engine, { [spelling]: '1' })),
            (err: unknown) =>
              err instanceof InvalidParametersError &&
              err.message.includes(`${JSON.stringify(spelling)} is a setting the operator manages`),
            `${engine} ${spelling}`,
          );
  });

  test('names only resembling a reserved one are not refused', () => {
    const fine = {
      postgres: ['port_x', 'x.port', 'ports', 'sslmode_x', 'include_x', 'x.include', 'listen_addresses_x'],
      mysql: [
        'report-port',
        'report_port',
        'portx',
        'skip-name-resolve',
        'loose-x',
        'ssl',
        'x.port',
        'datadirx',
      ],
      mariadb: ['report-port', 'server-id-x', 'sync-binlog-x', 'slave_parallel_threads', 'read-buffer-size'],
    };
    for (const engine of ['postgres', 'mysql', 'mariadb'] as const)
      for (const name of fine[engine])
        assert.doesNotThrow(() => renderConfig(db(engine, { [name]: '1' })), name);
  });

  test('names outside the engine grammar are refused: directives, sections, comments, separators, quotes', () => {
    const names = {
      postgres: [
        'include\nport',
        'port=1',
        'port 1',
        "a'b",
        '"port"',
        '#x',
        ';x',
        'a-b',
        'a.b.c',
        '.a',
        'a.',
        '1a',
        'pört',
        '',
        'a\tb',
      ],
      mysql: [
        '!include',
        '!includedir',
        '[client]',
        '#port',
        ';port',
        'port=1',
        ' port',
        'port ',
        '"port"',
        "'port'",
        '-port',
        '_port',
        'a.b.c',
        'pört',
        '',
        'a\\b',
      ],
    };
    for (const engine of ['postgres', 'mysql'] as const)
      for (const name of names[engine])
        assert.throws(
          () => renderConfig(db(engine, { [name]: '1' })),
          (err: unknown) =>
            err instanceof InvalidParametersError &&
            err.message.includes(`${JSON.stringify(name)} is not a ${engine} setting name`),
          `${engine} ${JSON.stringify(name)}`,
        );
  });

  test('bounds: entries, name length and value length', () => {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, '1']));
    assert.doesNotThrow(() => renderConfig(db('postgres', many(PARAMETER_LIMITS.maxEntries))));
    assert.throws(
      () => renderConfig(db('postgres', many(PARAMETER_LIMITS.maxEntries + 1))),
      /65 entries, at most 64/,
    );
    assert.throws(
      () => renderConfig(db('mysql', { [`a${'b'.repeat(PARAMETER_LIMITS.maxNameLength)}`]: '1' })),
      /is longer than 64 characters/,
    );
    assert.throws(
      () => renderConfig(db('mysql', { x: '✓'.repeat(PARAMETER_LIMITS.maxValueLength + 1) })),
      /the value of "x" is longer than 256 characters/,
    );
    // mysqld reads an option file in lines of about 4 KiB: the longest line allowed stays far below.
    const longest = renderConfig(
      db('mysql', {
        [`a${'b'.repeat(PARAMETER_LIMITS.maxNameLength - 1)}`]: '\u{1F600}'.repeat(
          PARAMETER_LIMITS.maxValueLength,
        ),
      }),
    ).content.split('\n')[3]!;
    assert.ok(Buffer.byteLength(longest) < 4000, `${Buffer.byteLength(longest)} bytes`);
  });

  test('the error names the field and every problem, so the condition says what to fix', () => {
    try {
      renderConfig(db('mysql', { max_connections: '100\nport = 3307', bind_address: '10.1.2.3' }));
      assert.fail('rendered');
    } catch (err) {
      assert.ok(err instanceof InvalidParametersError);
      assert.equal(err.reason, 'InvalidParameters');
      assert.deepEqual(err.problems, [
        `"bind_address" is a setting the operator manages (mysql reserves port, bind-address, socket, datadir, user, pid-file, skip-grant-tables, skip-networking, include, includedir; compared ignoring case, with '-' and '_' the same and the prefixes loose-, skip-, enable-, disable-, maximum- ignored)`,
        'the value of "max_connections" contains a line break or another control character',
      ]);
      assert.match(err.message, /^spec\.parameters: "bind_address" is a setting/);
      assert.doesNotMatch(err.message, /\n/, 'a condition message on one line');
    }
  });
});
