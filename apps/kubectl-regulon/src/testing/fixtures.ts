// Objects shaped as the controllers write them: the status fields and values
// of apps/database-controller/src/status.ts (instancesOf, backupCondition,
// switchoverStatus) and its tests' FULL_STATUS, for a 3-instance postgres
// Database after one failover.
import {
  Database,
  DatabaseBackup,
  type DatabaseBackupObject,
  type DatabaseObject,
} from '@regulon/database-controller';
import type { EventObject } from '../report.ts';

export const NOW = new Date('2026-12-01T14:00:00Z');

export function replicatedDatabase(): DatabaseObject {
  return Database.object({
    metadata: {
      name: 'orders',
      namespace: 'shop',
      uid: 'u-orders',
      creationTimestamp: '2026-11-30T09:00:00Z' as never,
    },
    spec: {
      engine: 'postgres',
      version: '16.8',
      replicas: 3,
      storage: { size: '10Gi' },
      backup: {
        enabled: true,
        schedule: '0 3 * * *',
        objectStore: {
          endpoint: 'https://minio.storage.svc:9000',
          bucket: 'backups',
          credentials: { secretName: 'store-keys' },
        },
      } as NonNullable<DatabaseObject['spec']['backup']>,
    },
    status: {
      observedGeneration: 4,
      phase: 'Ready',
      replicas: 3,
      readyReplicas: 3,
      currentVersion: '16.8',
      currentPrimary: 'orders-1',
      lastBackup: '2026-12-01T03:00:41Z',
      binding: { name: 'orders-credentials' },
      systemIdentifier: '7441234567890123456',
      endpoint: 'orders.shop.svc:5432',
      switchover: {
        target: 'orders-1',
        state: 'Started',
        message: 'Switching over from orders-0 to orders-1',
        since: '2026-12-01T13:40:00Z',
      },
      instances: [
        { name: 'orders-0', role: 'replica', state: 'Streaming', timeline: 2, lsn: '0/5000148', lagBytes: 0 },
        { name: 'orders-1', role: 'primary', state: 'Primary', timeline: 2, lsn: '0/5000148' },
        {
          name: 'orders-2',
          // standby, not replica: the controller's word for an instance that does not serve reads
          // (status.ts instancesOf: no role in the plan, here streaming beyond maxLag: Lagging).
          role: 'standby',
          state: 'Lagging',
          timeline: 2,
          lsn: '0/4000000',
          lagBytes: 16_777_544,
        },
      ],
      conditions: [
        cond('Ready', 'True', 'AllReplicasReady', '3/3 replicas ready, running 16.8', '2026-12-01T13:40:05Z'),
        cond(
          'Progressing',
          'False',
          'Settled',
          'Every Pod runs the current template',
          '2026-12-01T13:40:05Z',
        ),
        cond('Degraded', 'False', 'AsExpected', 'No problem', '2026-11-30T09:02:00Z'),
        cond('Stalled', 'False', 'AsExpected', 'No problem', '2026-11-30T09:02:00Z'),
        cond(
          'BackupSucceeded',
          'True',
          'BackupCompleted',
          'DatabaseBackup orders-20261201t030000z completed (20261201-030012F)',
          '2026-12-01T03:00:41Z',
        ),
        cond(
          'ReplicationHealthy',
          'False',
          'ReplicasLagging',
          'orders-2 trails the primary by 16777544 bytes (maxLag 16777216)',
          '2026-12-01T13:55:00Z',
        ),
      ],
    },
  });
}

function cond(
  type: string,
  status: 'True' | 'False' | 'Unknown',
  reason: string,
  message: string,
  at: string,
) {
  return { type, status, reason, message, lastTransitionTime: at, observedGeneration: 4 };
}

export function backupOf(
  name: string,
  phase: 'Succeeded' | 'Failed' | 'Running',
  createdAt: string,
): DatabaseBackupObject {
  return DatabaseBackup.object({
    metadata: { name, namespace: 'shop', creationTimestamp: createdAt as never },
    spec: { database: 'orders' },
    status: { phase, startedAt: createdAt, label: '20261201-030012F' },
  });
}

/** An events.k8s.io/v1 Event as the API server returns it (strings, not Dates). */
export function event(
  reason: string,
  note: string,
  at: string,
  extra: Partial<EventObject> = {},
): EventObject {
  return { type: 'Normal', reason, note, eventTime: at, metadata: { creationTimestamp: at }, ...extra };
}
