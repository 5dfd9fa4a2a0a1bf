import type { V1Container } from '@kubernetes/client-node';
import { restrictedContainerSecurityContext } from '@regulon/conventions';
import { ENGINE_DEFAULTS } from '../versions.ts';

/** mysql runs the official image's entrypoint, which initialises from these variables (one instance: no replication). */
export function mysqlContainer(credentialsSecret: string, image: string): V1Container {
  const d = ENGINE_DEFAULTS.mysql;
  const probe = { exec: { command: ['mysqladmin', 'ping', '-h', '127.0.0.1'] } };
  return {
    name: 'mysql',
    image,
    ports: [{ name: 'mysql', containerPort: d.port }],
    env: [
      {
        name: 'MYSQL_ROOT_PASSWORD',
        valueFrom: { secretKeyRef: { name: credentialsSecret, key: 'password' } },
      },
      {
        name: 'MYSQL_DATABASE',
        valueFrom: { secretKeyRef: { name: credentialsSecret, key: 'database', optional: true } },
      },
    ],
    readinessProbe: { ...probe, periodSeconds: 10, timeoutSeconds: 5 },
    livenessProbe: { ...probe, initialDelaySeconds: 30, periodSeconds: 20, timeoutSeconds: 5 },
    securityContext: restrictedContainerSecurityContext({ readOnlyRootFilesystem: false }),
    volumeMounts: [
      { name: 'data', mountPath: d.dataDir },
      { name: 'config', mountPath: '/etc/mysql/conf.d' },
    ],
  };
}
