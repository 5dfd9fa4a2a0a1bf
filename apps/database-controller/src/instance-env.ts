import type { V1EnvVar, V1Volume } from '@kubernetes/client-node';
import type { DatabaseObject } from './api.ts';
import { childNames } from './names.ts';

const fromSecret = (name: string, secret: string, key: string, optional = false): V1EnvVar => ({
  name,
  valueFrom: { secretKeyRef: { name: secret, key, ...(optional ? { optional } : {}) } },
});

/**
 * What every engine's start script reads (postgres/start-script.ts,
 * mariadb/start-script.ts): its Pod name, where the primary and the peers
 * are, and the credentials, from their Secrets (never rendered into a file
 * the ConfigMap holds).
 */
export function instanceEnv(db: DatabaseObject, credentialsSecret: string): V1EnvVar[] {
  const n = childNames(db);
  const ns = db.metadata.namespace!;
  return [
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'PRIMARY_HOST', value: `${n.clientService}.${ns}.svc` },
    { name: 'PEERS_HOST', value: `${n.headlessService}.${ns}.svc` },
    fromSecret('SUPERUSER', credentialsSecret, 'username'),
    fromSecret('SUPERUSER_PASSWORD', credentialsSecret, 'password'),
    fromSecret('DATABASE', credentialsSecret, 'database', true),
    fromSecret('REPLICATION_PASSWORD', n.replicationCredentials, 'password'),
  ];
}

/** The config ConfigMap (the engine's files and start script) and the topology the script reads. */
export function instanceVolumes(db: DatabaseObject): V1Volume[] {
  const n = childNames(db);
  return [
    { name: 'config', configMap: { name: n.config } },
    { name: 'topology', configMap: { name: n.topology } },
  ];
}
