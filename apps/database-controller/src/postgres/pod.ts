import type { V1Container, V1EnvVar, V1Volume } from '@kubernetes/client-node';
import { restrictedContainerSecurityContext } from '@regulon/conventions';
import type { DatabaseObject } from '../api.ts';
import { childNames } from '../names.ts';
import {
  CONFIG_MOUNT,
  DATA_MOUNT,
  PGDATA,
  renderHba,
  renderStartScript,
  STARTING_MARKER,
  TOPOLOGY_MOUNT,
} from './start-script.ts';

/** The files of the config ConfigMap beside postgresql.conf (all in its content hash: a change rolls the Pods). */
export function postgresFiles(): Record<string, string> {
  return { 'pg_hba.conf': renderHba(), 'start.sh': renderStartScript() };
}

const fromSecret = (name: string, secret: string, key: string, optional = false): V1EnvVar => ({
  name,
  valueFrom: { secretKeyRef: { name: secret, key, ...(optional ? { optional } : {}) } },
});

/**
 * The postgres container: the start script decides, from the topology and
 * its peers, whether to initialise, clone, rewind, and run as primary or
 * standby. Ready means it answers a query with the credentials it was given;
 * alive means it is preparing its data or its postmaster responds.
 */
export function postgresContainer(db: DatabaseObject, credentialsSecret: string, image: string): V1Container {
  const n = childNames(db);
  const ns = db.metadata.namespace!;
  return {
    name: 'postgres',
    image,
    command: ['bash', `${CONFIG_MOUNT}/start.sh`],
    ports: [{ name: 'postgres', containerPort: 5432 }],
    env: [
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'PRIMARY_HOST', value: `${n.clientService}.${ns}.svc` },
      { name: 'PEERS_HOST', value: `${n.headlessService}.${ns}.svc` },
      fromSecret('SUPERUSER', credentialsSecret, 'username'),
      fromSecret('SUPERUSER_PASSWORD', credentialsSecret, 'password'),
      fromSecret('DATABASE', credentialsSecret, 'database', true),
      fromSecret('REPLICATION_PASSWORD', n.replicationCredentials, 'password'),
    ],
    readinessProbe: {
      exec: {
        command: [
          'sh',
          '-c',
          'PGPASSWORD="$SUPERUSER_PASSWORD" psql -h 127.0.0.1 -U "$SUPERUSER" -d postgres -tAXc "select 1" >/dev/null',
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
    ],
  };
}

export function postgresVolumes(db: DatabaseObject): V1Volume[] {
  const n = childNames(db);
  return [
    { name: 'config', configMap: { name: n.config } },
    { name: 'topology', configMap: { name: n.topology } },
  ];
}
