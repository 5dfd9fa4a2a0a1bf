import type { V1Container, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import type { DatabaseObject } from '../api.ts';
import { MEMBERS_KEY, restrictedContainerSecurityContext } from '@regulon/conventions';
import { METRICS_QUERY_ENV } from '@regulon/instance-agent/pod';
import { instanceEnv } from '../instance-env.ts';
import { childNames } from '../names.ts';
import { mariabackupEnv } from '../backup/mariabackup.ts';
import { BACKUP_CA_MOUNT, CA_FILE, storeRepository, RECOVERY_MOUNT } from '../backup/pgbackrest.ts';
import {
  CONFIG_MOUNT,
  DATA_MOUNT,
  PORT,
  renderStartScript,
  STARTING_MARKER,
  TOPOLOGY_MOUNT,
} from './start-script.ts';

/** The files of the config ConfigMap beside my.cnf (all in its content hash: a change rolls the Pods). */
export function mariadbFiles(db: DatabaseObject): Record<string, string> {
  return {
    'start.sh': renderStartScript({
      synchronous: !!db.spec.replication?.synchronous,
      restore: !!db.spec.bootstrap?.recovery,
    }),
  };
}

/**
 * The volumes the backups read beside the data: the object store's CA
 * bundle (spec.backup.objectStore.caSecret) and the recovery Secret
 * (spec.bootstrap.recovery, resolved once by the reconciler). Secret volumes:
 * neither is ever in a ConfigMap. None for a Database with neither.
 */
export function mariadbBackupVolumes(db: DatabaseObject): { volumes: V1Volume[]; mounts: V1VolumeMount[] } {
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
 * How a Pod's server stops (a switchover's fence, a Pod deleted, a rolling update): it sends the
 * connected replicas every transaction before it ends. On SIGTERM alone, mariadbd ends its binlog
 * dump threads like any other connection while clients may still commit, and those commits reach
 * no replica: the promoted one lacks them (acknowledged writes lost), and a replica that got a few
 * more than it diverged (GTID strict mode stops it for good). Community MariaDB has no server
 * setting for this (shutdown_wait_for_slaves is Enterprise's); SHUTDOWN WAIT FOR ALL SLAVES, here
 * through mariadb-admin, which waits until the server is gone. Within the default 30 s grace; if it
 * fails (a hung server) the kubelet's SIGTERM follows.
 */
export const SHUTDOWN_COMMAND = `MYSQL_PWD="$SUPERUSER_PASSWORD" mariadb-admin --no-defaults -h 127.0.0.1 -P ${PORT} -u "$SUPERUSER" --connect-timeout=3 --shutdown-timeout=25 --wait-for-all-slaves shutdown || true`;

/** How the agent's questions log in: the credentials the server was given, nothing from a file. */
const ASK = `mariadb --no-defaults -u "$SUPERUSER" -P ${PORT} --connect-timeout=1`;
const PASSWORD = 'export MYSQL_PWD="$SUPERUSER_PASSWORD"';

/**
 * The instance agent's question (see EngineBehaviour.agent): whether mariadbd accepts writes.
 * A replica runs with read_only on (the start script, and the manager's demotion), a primary
 * with it off. No answer (a server starting on its socket only, stopped or hung) tells the
 * agent nothing new.
 */
export const MARIADB_ROLE_COMMAND = `${PASSWORD}; ${ASK} -h 127.0.0.1 -N -B -e "select if(@@global.read_only, 'replica', 'primary')"`;

/** Where the agent publishes MariaDB's metrics: mysqld_exporter's port. */
export const MARIADB_METRICS_PORT = 9104;

/**
 * What the agent runs for a scrape: its mariadb engine's statements (which it puts in
 * METRICS_QUERY_ENV), in the vertical format they are parsed from, going on past one that
 * fails (a replica's SHOW BINARY LOGS when it writes none).
 */
export const MARIADB_METRICS_COMMAND = `${PASSWORD}; ${ASK} -h 127.0.0.1 --force -E -e "$${METRICS_QUERY_ENV}"`;

/**
 * The agent's quorum question: "IN_TOUCH MEMBERS" (see @regulon/instance-agent).
 *
 * A MariaDB primary cannot tell from its own state alone whether a replica is in touch: a
 * replica sends nothing back but semi-synchronous acks, and the dump thread of a replica that
 * vanished lingers until TCP gives up, minutes later. So the question has two halves. In
 * touch: this instance, and each replica that has a dump thread on it (the processlist names
 * its address) and, asked directly at that address now, says its IO thread is connected
 * (`Slave_IO_Running: Yes`; a replica that lost its primary says `Connecting` within
 * slave_net_timeout). The manager counts a replica out of touch from the same answer, its own
 * IO thread's, so both sides read one source and no clocks are compared. Members: the
 * instance count the topology ConfigMap records (MEMBERS_KEY), or more when the headless
 * Service's DNS names more Pods (a scale-up the mounted ConfigMap has not caught up with).
 * The replicas are asked at once, each for at most 2 s, within the agent's 3 s for one question.
 */
export const MARIADB_QUORUM_COMMAND = [
  PASSWORD,
  `members=$(cat ${TOPOLOGY_MOUNT}/${MEMBERS_KEY} 2>/dev/null || echo 0)`,
  `pods=$(getent ahostsv4 "$PEERS_HOST" | awk '{print $1}' | sort -u | wc -l)`,
  `[ "$pods" -gt "$members" ] && members=$pods`,
  `replicas=$(${ASK} -h 127.0.0.1 -N -B -e "select distinct substring_index(host, ':', 1) from information_schema.processlist where command like 'Binlog Dump%'") || exit 1`,
  // `timeout`: a hung replica's answer must not hold up the others' past the agent's 3 s.
  `connected=$(for ip in $replicas; do (timeout 2 ${ASK} -h "$ip" -E -e 'show slave status' 2>/dev/null | grep -q '^ *Slave_IO_Running: Yes$' && echo "$ip") & done; wait)`,
  `echo "$((1 + $(printf '%s' "$connected" | grep -c .))) $members"`,
].join('; ');

/**
 * The mariadb container: the start script decides, from the topology and its
 * peers, whether to initialise, clone or rejoin, and execs mariadbd as the
 * primary or a read-only replica. mariadbd is then PID 1. Its preStop hook
 * shuts it down waiting for the replicas (see SHUTDOWN_COMMAND). Ready means it
 * answers a query with the credentials it was given; alive means it is
 * preparing its data or mariadbd answers at all (`ping` succeeds even when
 * the login is refused).
 */
export function mariadbContainer(db: DatabaseObject, credentialsSecret: string, image: string): V1Container {
  return {
    name: 'mariadb',
    image,
    command: ['bash', `${CONFIG_MOUNT}/start.sh`],
    ports: [{ name: 'mariadb', containerPort: PORT }],
    // A start that fails leaves its last log lines in the Pod's status, which the Database's reports.
    terminationMessagePolicy: 'FallbackToLogsOnError',
    // rclone's settings for spec.backup.objectStore, the keys by secretKeyRef (backup/mariabackup.ts).
    env: [...instanceEnv(db, credentialsSecret), ...mariabackupEnv(db)],
    readinessProbe: {
      exec: {
        command: [
          'sh',
          '-c',
          // The password from the environment (MYSQL_PWD), never on a command line. Bounded by
          // `timeout` as postgres's is (see postgres/pod.ts): a hung server must fail the probe.
          `MYSQL_PWD="$SUPERUSER_PASSWORD" timeout 3 mariadb --no-defaults -h 127.0.0.1 -P ${PORT} -u "$SUPERUSER" --connect-timeout=3 -N -B -e "select 1" >/dev/null`,
        ],
      },
      periodSeconds: 5,
      timeoutSeconds: 4,
      failureThreshold: 2,
    },
    livenessProbe: {
      exec: {
        command: [
          'sh',
          '-c',
          // With the credentials it was given: a login without them is refused, which `ping` takes
          // for alive all the same, but which the server logs as a warning every 20 s.
          `test -e ${STARTING_MARKER} && exit 0; MYSQL_PWD="$SUPERUSER_PASSWORD" mariadb-admin --no-defaults -h 127.0.0.1 -P ${PORT} -u "$SUPERUSER" --connect-timeout=4 ping >/dev/null 2>&1`,
        ],
      },
      initialDelaySeconds: 30,
      periodSeconds: 20,
      timeoutSeconds: 5,
    },
    lifecycle: { preStop: { exec: { command: ['sh', '-c', SHUTDOWN_COMMAND] } } },
    securityContext: restrictedContainerSecurityContext({ readOnlyRootFilesystem: false }),
    volumeMounts: [
      { name: 'data', mountPath: DATA_MOUNT },
      { name: 'config', mountPath: CONFIG_MOUNT },
      { name: 'topology', mountPath: TOPOLOGY_MOUNT },
      ...mariadbBackupVolumes(db).mounts,
    ],
  };
}
