import type { V1Container, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { restrictedContainerSecurityContext } from '@regulon/conventions';
import { METRICS_QUERY_ENV } from '@regulon/instance-agent/pod';
import type { DatabaseObject } from '../api.ts';
import { instanceEnv } from '../instance-env.ts';
import { childNames } from '../names.ts';
import {
  BACKUP_CA_MOUNT,
  CA_FILE,
  storeRepository,
  pgbackrestEnv,
  RECOVERY_MOUNT,
  renderArchiveWalScript,
} from '../backup/pgbackrest.ts';
import {
  CONFIG_MOUNT,
  DATA_MOUNT,
  PGDATA,
  renderHba,
  renderRestoreWalScript,
  renderStartScript,
  STARTING_MARKER,
  TOPOLOGY_MOUNT,
} from './start-script.ts';

/** The files of the config ConfigMap beside postgresql.conf (all in its content hash: a change rolls the Pods). */
export function postgresFiles(db: DatabaseObject): Record<string, string> {
  // The pgBackRest wrappers only where used: a Database without them renders (and hashes) as before.
  return {
    'pg_hba.conf': renderHba(),
    'start.sh': renderStartScript(),
    ...(db.spec.bootstrap?.recovery ? { 'restore-wal.sh': renderRestoreWalScript() } : {}),
    ...(storeRepository(db) ? { 'pgbackrest-archive-push.sh': renderArchiveWalScript() } : {}),
  };
}

/**
 * The volumes pgBackRest reads beside the data: the object store's CA bundle
 * (spec.backup.objectStore.caSecret) and the recovery Secret
 * (spec.bootstrap.recovery, resolved once by the reconciler). Secret volumes:
 * neither is ever in a ConfigMap.
 */
export function pgbackrestVolumes(db: DatabaseObject): { volumes: V1Volume[]; mounts: V1VolumeMount[] } {
  const volumes: V1Volume[] = [];
  const mounts: V1VolumeMount[] = [];
  const ca = storeRepository(db)?.caSecret;
  if (ca) {
    volumes.push({
      name: 'backup-ca',
      secret: { secretName: ca.name, items: [{ key: ca.key, path: CA_FILE }] },
    });
    mounts.push({ name: 'backup-ca', mountPath: BACKUP_CA_MOUNT, readOnly: true });
  }
  if (db.spec.bootstrap?.recovery) {
    volumes.push({ name: 'recovery', secret: { secretName: childNames(db).recovery, defaultMode: 0o400 } });
    mounts.push({ name: 'recovery', mountPath: RECOVERY_MOUNT, readOnly: true });
  }
  return { volumes, mounts };
}

/**
 * The instance agent's question (see EngineBehaviour.agent): whether the
 * server accepts writes, asked with the credentials it was given. No answer
 * (a server starting, stopped or hung) tells the agent nothing new.
 */
export const POSTGRES_ROLE_COMMAND =
  'PGPASSWORD="$SUPERUSER_PASSWORD" psql -h 127.0.0.1 -U "$SUPERUSER" -d postgres -tAXc ' +
  `"select case when pg_is_in_recovery() then 'replica' else 'primary' end"`;

/**
 * The agent's quorum question (see @regulon/instance-agent): "IN_TOUCH MEMBERS". In touch: this
 * instance and each standby whose replication connection streams now, which ends within
 * wal_sender_timeout (5 s) of the standby's last reply; no clocks are compared. Members: this
 * instance and one per replication slot the primary keeps, one for each other instance.
 */
export const POSTGRES_QUORUM_COMMAND =
  'PGPASSWORD="$SUPERUSER_PASSWORD" psql -h 127.0.0.1 -U "$SUPERUSER" -d postgres -tAXc ' +
  `"select (1 + (select count(*) from pg_stat_replication where state = 'streaming')) || ' ' || ` +
  `(1 + (select count(*) from pg_replication_slots where starts_with(slot_name::text, 'regulon_')))"`;

/** Where the agent publishes postgres's metrics: postgres_exporter's port. */
export const POSTGRES_METRICS_PORT = 9187;

/**
 * What the agent runs for a scrape: its postgres engine's one query (which it puts in
 * METRICS_QUERY_ENV), as the superuser, whose statistics views show every session.
 */
export const POSTGRES_METRICS_COMMAND =
  'PGPASSWORD="$SUPERUSER_PASSWORD" psql -h 127.0.0.1 -U "$SUPERUSER" -d postgres -tAXq ' +
  `-c "$${METRICS_QUERY_ENV}"`;

/**
 * The postgres container: the start script decides, from the topology and
 * its peers, whether to initialise, clone, rewind, and run as primary or
 * standby. Ready means it answers a query with the credentials it was given;
 * alive means it is preparing its data or its postmaster responds.
 */
export function postgresContainer(db: DatabaseObject, credentialsSecret: string, image: string): V1Container {
  return {
    name: 'postgres',
    image,
    command: ['bash', `${CONFIG_MOUNT}/start.sh`],
    ports: [{ name: 'postgres', containerPort: 5432 }],
    // A start that fails leaves its last log lines in the Pod's status, which the Database's reports.
    terminationMessagePolicy: 'FallbackToLogsOnError',
    // pgBackRest's settings after the instance's: pg1-user refers to $(SUPERUSER).
    env: [...instanceEnv(db, credentialsSecret), ...pgbackrestEnv(db, PGDATA)],
    readinessProbe: {
      // The probe bounds itself: containerd reports an exec probe's timeout only once its output
      // closes, and a psql waiting on a hung server (SIGSTOP) holds it open, so the Pod stayed
      // Ready. The kubelet's readiness is what starts a failover (plan.ts): a hang must fail it.
      exec: {
        command: [
          'sh',
          '-c',
          'PGPASSWORD="$SUPERUSER_PASSWORD" timeout 3 psql -h 127.0.0.1 -U "$SUPERUSER" -d postgres -tAXc "select 1" >/dev/null',
        ],
      },
      periodSeconds: 5,
      timeoutSeconds: 4,
      failureThreshold: 2,
    },
    livenessProbe: {
      // pg_isready: 0 accepting, 1 starting or recovering (alive), 2 no answer, 3 not attempted.
      exec: {
        command: [
          'sh',
          '-c',
          `test -e ${STARTING_MARKER} && exit 0; pg_isready -q -h 127.0.0.1; [ $? -lt 2 ]`,
        ],
      },
      initialDelaySeconds: 30,
      periodSeconds: 20,
      timeoutSeconds: 5,
    },
    lifecycle: {
      // Fast shutdown: sessions end, and the standbys get the last WAL before the Pod goes.
      preStop: { exec: { command: ['sh', '-c', `pg_ctl -D ${PGDATA} -m fast -w -t 25 stop || true`] } },
    },
    securityContext: restrictedContainerSecurityContext({ readOnlyRootFilesystem: false }),
    volumeMounts: [
      { name: 'data', mountPath: DATA_MOUNT },
      { name: 'config', mountPath: CONFIG_MOUNT },
      { name: 'topology', mountPath: TOPOLOGY_MOUNT },
      ...pgbackrestVolumes(db).mounts,
    ],
  };
}
