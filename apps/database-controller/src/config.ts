import type { DatabaseObject } from './api.ts';
import { PARAMETER_LIMITS, parameterProblem } from './parameters.ts';
import { renderMycnf } from './mariadb/start-script.ts';
import { ENGINE_DEFAULTS } from './versions.ts';
import { archiveSettings } from './backup/pgbackrest.ts';

/**
 * spec.parameters that can't be written to the engine's configuration file.
 * The CRD rejects them at admission; this catches objects stored before it
 * did. The reconciler reports it as Degraded (reason `InvalidParameters`) and
 * applies nothing, so the running configuration stays the last good one.
 */
export class InvalidParametersError extends Error {
  readonly reason = 'InvalidParameters';
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`spec.parameters: ${problems.join('; ')}. Fix spec.parameters; nothing was applied.`);
    this.name = 'InvalidParametersError';
    this.problems = problems;
  }
}

/**
 * postgresql.conf string syntax: a backslash starts an escape (`\n`, `\'`, octal)
 * and `''` is a quote, so both are doubled and the engine reads back exactly
 * the value given. Line breaks never get here.
 */
const postgresValue = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

/**
 * What the operator sets in postgresql.conf, before the user's parameters:
 * where it listens, the pg_hba.conf it mounts, and what streaming
 * replication and pg_rewind need (WAL for standbys, slots, hint bits logged).
 * Synchronous replication waits for any one standby (`ANY 1 (*)`): whichever
 * replica is promoted later, the most advanced one has every acknowledged commit.
 * With an object store, archive_mode and archive_command hand each WAL segment
 * to pgBackRest.
 */
export function postgresOperatorSettings(db: DatabaseObject): Array<[string, string]> {
  const settings: Array<[string, string]> = [
    ['listen_addresses', `'*'`],
    ['port', String(ENGINE_DEFAULTS.postgres.port)],
    ['hba_file', `'/etc/postgresql/pg_hba.conf'`],
    ['wal_level', `'replica'`],
    ['hot_standby', 'on'],
    ['wal_log_hints', 'on'],
    ['max_wal_senders', '10'],
    ['max_replication_slots', '10'],
  ];
  if (db.spec.replication?.synchronous) settings.push(['synchronous_standby_names', `'ANY 1 (*)'`]);
  // With spec.backup.objectStore: every WAL segment is archived by pgBackRest (backup/pgbackrest.ts).
  settings.push(...archiveSettings(db));
  return settings;
}

/**
 * The engine's configuration file from spec.parameters, one setting per line;
 * reserved settings are the operator's. Throws {@link InvalidParametersError}
 * rather than write a line that could end early or set something reserved.
 *
 * mysql values are written as my.cnf value syntax, as they always were
 * (surrounding quotes, `\` escapes and a `#` comment keep their meaning), so
 * existing Databases render unchanged. That stays inside its own line: mysqld
 * splits the file at line breaks only (refused here), the name ends at the
 * first `=` (names have none), and a directive (`!include`, `[group]`) is only
 * one at the start of a line, where the name is.
 */
export function renderConfig(db: DatabaseObject): { file: string; content: string } {
  const engine = db.spec.engine;
  const d = ENGINE_DEFAULTS[engine];
  const params = Object.entries(db.spec.parameters ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const problems = params.flatMap(([k, v]) => parameterProblem(engine, k, v) ?? []);
  if (params.length > PARAMETER_LIMITS.maxEntries)
    problems.unshift(`${params.length} entries, at most ${PARAMETER_LIMITS.maxEntries} are allowed`);
  if (problems.length) throw new InvalidParametersError(problems);
  if (engine === 'postgres') {
    const lines = [
      ...postgresOperatorSettings(db).map(([k, v]) => `${k} = ${v}`),
      ...params.map(([k, v]) => `${k} = ${postgresValue(v)}`),
    ];
    return { file: 'postgresql.conf', content: `${lines.join('\n')}\n` };
  }
  if (engine === 'mariadb')
    return {
      file: 'my.cnf',
      content: renderMycnf({ synchronous: !!db.spec.replication?.synchronous }, params),
    };
  const lines = [
    '[mysqld]',
    `port = ${d.port}`,
    'bind-address = 0.0.0.0',
    ...params.map(([k, v]) => `${k} = ${v}`),
  ];
  return { file: 'my.cnf', content: `${lines.join('\n')}\n` };
}
