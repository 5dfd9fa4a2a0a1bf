import type { DatabaseObject } from '../api.ts';
import { MAX_REPLICAS, podName, SYNCHRONOUS_CONFIRMATIONS } from '../names.ts';
import { ENGINE_DEFAULTS } from '../versions.ts';
import { archiveSettings } from '../backup/pgbackrest.ts';

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
 * Synchronous replication waits for any one standby (see synchronousStandbyNames):
 * whichever replica is promoted later, the most advanced one has every
 * acknowledged commit.
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
    // A connection to a peer that vanished without a word (its node lost, a partition) ends after
    // 5 s, not the default minute: until a standby's receiver gives up on the old primary it does not
    // follow the new one, and a synchronous primary acknowledges nothing without a standby.
    ['wal_receiver_timeout', `'5s'`],
    ['wal_sender_timeout', `'5s'`],
  ];
  if (db.spec.replication?.synchronous)
    settings.push(['synchronous_standby_names', postgresValue(synchronousStandbyNames(db))]);
  // With spec.backup.objectStore: every WAL segment is archived by pgBackRest (backup/pgbackrest.ts).
  settings.push(...archiveSettings(db));
  return settings;
}

/**
 * SYNCHRONOUS_CONFIRMATIONS of the Database's own instances confirm a commit, named: each standby connects with its
 * Pod's name as application_name. Never `*`, which counts any replication connection: a new
 * standby's pg_basebackup stream, or a stranger's, would confirm commits that no instance that
 * can be promoted holds. Every name the Database can have is listed (ordinals up to
 * MAX_REPLICAS), so scaling changes nothing here and restarts nothing; the primary's own name
 * never matches a standby.
 */
export function synchronousStandbyNames(db: DatabaseObject): string {
  const names = Array.from({ length: MAX_REPLICAS }, (_, i) => `"${podName(db, i)}"`);
  return `ANY ${SYNCHRONOUS_CONFIRMATIONS} (${names.join(', ')})`;
}

/** postgresql.conf: the operator's settings, then the (validated) parameters as quoted strings. */
export function renderPostgresConf(db: DatabaseObject, parameters: [string, string][]): string {
  const lines = [
    ...postgresOperatorSettings(db).map(([k, v]) => `${k} = ${v}`),
    ...parameters.map(([k, v]) => `${k} = ${postgresValue(v)}`),
  ];
  return `${lines.join('\n')}\n`;
}
