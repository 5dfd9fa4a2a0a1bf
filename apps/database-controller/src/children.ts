import { Kinds, type KubeObject, type ResourceType } from '@regulon/client';
import {
  contentHash,
  restrictedContainerSecurityContext,
  restrictedPodSecurityContext,
} from '@regulon/conventions';
import type {
  V1ConfigMap,
  V1CronJob,
  V1PodDisruptionBudget,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1Service,
  V1ServiceAccount,
  V1StatefulSet,
} from '@kubernetes/client-node';
import {
  agentGrant,
  agentRole,
  agentRoleBinding,
  underAgent,
  type AgentGrant,
} from '@regulon/instance-agent/pod';
import type { ImageCatalog } from '@regulon/image-catalog';
import type { DatabaseObject } from './api.ts';
import { renderConfig } from './config.ts';
import { engineOf } from './engines/index.ts';
import type { Topology } from './replication/plan.ts';
import { MEMBERS_KEY, topologyData, topologyFromData } from '@regulon/conventions';
import { metricsQueriesVolumes } from './metrics-queries.ts';
import { childNames, labels, MAX_REPLICAS, ROLE_LABEL, selector } from './names.ts';
import { ENGINE_DEFAULTS, OFFICIAL_IMAGES } from './versions.ts';

const CONFIG_HASH_ANNOTATION = 'regulon.dev/config-hash';

/** UID/GID the official images run their server as (postgres, mysql and mariadb: 999). */
const DB_USER = 999;

/** Quantities as the API types spell them (strings); the CRD also accepts integers. */
function quantities(r: {
  requests?: Record<string, string | number>;
  limits?: Record<string, string | number>;
}) {
  const str = (m?: Record<string, string | number>) =>
    m ? Object.fromEntries(Object.entries(m).map(([k, v]) => [k, String(v)])) : undefined;
  const requests = str(r.requests);
  const limits = str(r.limits);
  return { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) };
}

/**
 * The image of the Database's engine version in `catalog` (the manager's, or
 * the official images); undefined when the catalog lacks the version, which
 * the reconciler reports instead of running anything.
 */
export function image(db: DatabaseObject, catalog: ImageCatalog = OFFICIAL_IMAGES): string | undefined {
  return catalog.imageFor(db.spec.engine, db.spec.version);
}

/** The image the children run: the official one unless the reconciler passes its catalog's. */
function engineImage(db: DatabaseObject, given: string | undefined): string {
  const resolved = given ?? image(db);
  // Unreachable from the reconciler, which checks the catalog first; a bug otherwise.
  if (!resolved) throw new Error(`no image for ${db.spec.engine} ${db.spec.version}`);
  return resolved;
}

/** The engine's files: its configuration and whatever its Pods run beside it (a start script, pg_hba.conf). */
function configFiles(db: DatabaseObject): Record<string, string> {
  const { file, content } = renderConfig(db);
  return { [file]: content, ...engineOf(db).podFiles(db) };
}

export function desiredConfigMap(db: DatabaseObject): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: childNames(db).config, labels: labels(db) },
    data: configFiles(db),
  };
}

/** The topology ConfigMap (see replication/plan.ts): which instance may be writable. */
export function topologyConfigMap(db: DatabaseObject, t: Topology): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: childNames(db).topology, labels: labels(db) },
    // divergedData beside the topology: a returning former primary reads it when it finds itself
    // diverged, and a change reaches a Pod that waits on it without restarting the others.
    // The instance count, for an agent's quorum answer that cannot count the members from the
    // engine's own state (mariadb/pod.ts, MARIADB_QUORUM_COMMAND).
    data: {
      ...topologyData(t),
      [DIVERGED_DATA_KEY]: divergedDataOf(db),
      [MEMBERS_KEY]: String(db.spec.replicas),
    },
  };
}

/**
 * Whether a recorded topology ConfigMap's data carries what the spec says beside the topology
 * (divergedData, the instance count); the reconciler writes it again when it does not.
 */
export function topologyCarriesSpec(db: DatabaseObject, data: Record<string, string> | undefined): boolean {
  return data?.[DIVERGED_DATA_KEY] === divergedDataOf(db) && data[MEMBERS_KEY] === String(db.spec.replicas);
}

/** The topology ConfigMap's key for spec.replication.divergedData. */
export const DIVERGED_DATA_KEY = 'divergedData';

/** spec.replication.divergedData, or the engine's default (EngineBehaviour.divergedDataDefault). */
export function divergedDataOf(db: DatabaseObject): 'Discard' | 'Keep' {
  return db.spec.replication?.divergedData ?? engineOf(db).divergedDataDefault;
}

/** The topology a ConfigMap records; undefined when it records none (it is created with ordinal 0 named). */
export function topologyOf(cm: V1ConfigMap | undefined): Topology | undefined {
  return topologyFromData(cm?.data);
}

/**
 * The replication account's password (an engine that replicates): created
 * once like the application's credentials, and never shown to the application.
 */
export function replicationCredentials(db: DatabaseObject, password: string): V1Secret {
  const replication = engineOf(db).replication;
  // Unreachable from the reconciler, which creates it only for an engine that replicates; a bug otherwise.
  if (!replication) throw new Error(`${db.spec.engine} does not replicate: it has no replication account`);
  return {
    metadata: { name: childNames(db).replicationCredentials, labels: labels(db) },
    type: 'kubernetes.io/basic-auth',
    stringData: { username: replication.user, password },
  };
}

/**
 * The instances' service account. It carries no token, except where the
 * instance agent runs: the agent renews the primary Lease with it, and its
 * Role (desiredAgentRole) allows that and nothing else.
 */
export function desiredServiceAccount(db: DatabaseObject, agentImage?: string): V1ServiceAccount {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: childNames(db).serviceAccount, labels: labels(db) },
    automountServiceAccountToken: runsAgent(db, agentImage),
  };
}

/** Whether the Database's Pods run under the instance agent: its engine has one, and the manager knows the image. */
export function runsAgent(db: DatabaseObject, agentImage: string | undefined): agentImage is string {
  return agentImage !== undefined && engineOf(db).agent !== undefined;
}

/** What the Database's agents are granted (see agentRole in @regulon/instance-agent). */
function grantOf(db: DatabaseObject): AgentGrant {
  const { name, namespace } = db.metadata;
  return agentGrant({ name: name!, namespace: namespace! }, childNames(db), MAX_REPLICAS, labels(db));
}

/** The Role that lets the instance agents read and renew the Database's primary Lease; undefined without them. */
export function desiredAgentRole(db: DatabaseObject, agentImage?: string): V1Role | undefined {
  return runsAgent(db, agentImage) ? agentRole(grantOf(db)) : undefined;
}

export function desiredAgentRoleBinding(db: DatabaseObject, agentImage?: string): V1RoleBinding | undefined {
  return runsAgent(db, agentImage) ? agentRoleBinding(grantOf(db)) : undefined;
}

export function desiredServices(db: DatabaseObject): {
  headless: V1Service;
  client: V1Service;
  readOnly: V1Service | undefined;
} {
  const n = childNames(db);
  const port = ENGINE_DEFAULTS[db.spec.engine].port;
  const svc = (
    name: string,
    sel: Record<string, string>,
    extra: Partial<NonNullable<V1Service['spec']>> = {},
  ): V1Service => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, labels: labels(db) },
    spec: {
      selector: sel,
      ports: [{ name: db.spec.engine, port, targetPort: port, protocol: 'TCP' }],
      ...extra,
    },
  });
  return {
    // Peer DNS for every Pod, ready or not, so replicas can find the primary while starting.
    headless: svc(n.headlessService, selector(db), { clusterIP: 'None', publishNotReadyAddresses: true }),
    client: svc(n.clientService, { ...selector(db), [ROLE_LABEL]: 'primary' }),
    readOnly:
      db.spec.replicas > 1 ? svc(n.readOnlyService, { ...selector(db), [ROLE_LABEL]: 'replica' }) : undefined,
  };
}

export function desiredDisruptionBudget(db: DatabaseObject): V1PodDisruptionBudget | undefined {
  if (db.spec.replicas <= 1) return undefined;
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: childNames(db).disruptionBudget, labels: labels(db) },
    spec: { maxUnavailable: 1, selector: { matchLabels: selector(db) } },
  };
}

export function desiredStatefulSet(
  db: DatabaseObject,
  credentialsSecret: string,
  imageRef?: string,
  instances: number = db.spec.replicas,
  agentImage?: string,
): V1StatefulSet {
  const n = childNames(db);
  const content = Object.entries(configFiles(db))
    .map(([k, v]) => `${k}\n${v}`)
    .join('\n');
  const pod = engineOf(db).pod(db, credentialsSecret, engineImage(db, imageRef));
  const engineAgent = engineOf(db).agent;
  // The user-defined metrics queries: only where an agent runs them (the CRD allows them on the
  // engines that have one).
  const queries = runsAgent(db, agentImage) && engineAgent?.metrics ? metricsQueriesVolumes(db) : undefined;
  const agent =
    runsAgent(db, agentImage) && engineAgent
      ? underAgent(
          {
            ...pod.container,
            volumeMounts: [...(pod.container.volumeMounts ?? []), ...(queries?.mounts ?? [])],
          },
          {
            lease: childNames(db).primaryLease,
            roleCommand: engineAgent.roleCommand,
            quorumCommand: engineAgent.quorumCommand,
            metrics:
              engineAgent.metrics && queries?.files.length
                ? { ...engineAgent.metrics, queriesFiles: queries.files }
                : engineAgent.metrics,
            image: agentImage,
            securityContext: restrictedContainerSecurityContext(),
          },
        )
      : undefined;
  const container = agent?.container ?? pod.container;
  const volumes = agent ? [...pod.volumes, agent.volume, ...(queries?.volumes ?? [])] : pod.volumes;
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: n.statefulSet, labels: labels(db) },
    spec: {
      serviceName: n.headlessService,
      // More than spec.replicas only while the primary still runs on an ordinal being scaled away.
      replicas: instances,
      selector: { matchLabels: selector(db) },
      // Every instance starts at once: the start script, not the ordinal order, decides who clones whom.
      podManagementPolicy: 'Parallel',
      // Several instances: the manager replaces the Pods itself, replicas first, then the primary
      // after one switchover (replication/plan.ts); the StatefulSet would take them by ordinal.
      updateStrategy: { type: instances > 1 ? 'OnDelete' : 'RollingUpdate' },
      persistentVolumeClaimRetentionPolicy: {
        whenDeleted: db.spec.pvcRetentionPolicy ?? 'Retain',
        whenScaled: 'Retain',
      },
      template: {
        metadata: { labels: labels(db), annotations: { [CONFIG_HASH_ANNOTATION]: contentHash(content) } },
        spec: {
          serviceAccountName: n.serviceAccount,
          automountServiceAccountToken: agent !== undefined,
          securityContext: restrictedPodSecurityContext(DB_USER),
          ...(agent ? { initContainers: [agent.initContainer] } : {}),
          containers: [
            { ...container, ...(db.spec.resources ? { resources: quantities(db.spec.resources) } : {}) },
          ],
          volumes,
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'data', labels: selector(db) },
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: String(db.spec.storage.size) } },
            ...(db.spec.storage.storageClassName
              ? { storageClassName: db.spec.storage.storageClassName }
              : {}),
          },
        },
      ],
    },
  };
}

/**
 * Generated credentials: written once at creation. The reconciler only ever
 * creates this Secret (never applies or replaces it), so a password is never
 * regenerated behind the application's back.
 */
export function generatedCredentials(db: DatabaseObject, password: string): V1Secret {
  const d = ENGINE_DEFAULTS[db.spec.engine];
  const host = `${childNames(db).clientService}.${db.metadata.namespace}.svc`;
  const database = 'app';
  return {
    metadata: { name: childNames(db).credentials, labels: labels(db) },
    type: `servicebinding.io/${db.spec.engine}`,
    stringData: {
      type: db.spec.engine,
      provider: 'regulon',
      host,
      port: String(d.port),
      username: d.user,
      password,
      database,
      uri: `${d.scheme}://${d.user}:${encodeURIComponent(password)}@${host}:${d.port}/${database}`,
    },
  };
}

/**
 * Whether the Database enables backups without naming where they go: the CRD
 * refuses that form (api.ts, NO_BACKUP_DESTINATION_MESSAGE), so only a Database
 * stored before the rule has it, kept by the API server's validation
 * ratcheting while its backup is left unchanged. Its backups are the
 * CronJob's dumps onto a scratch volume, which nothing can restore; the
 * status and a Warning Event say so (NoBackupDestination).
 */
export function throwawayBackups(db: DatabaseObject): boolean {
  const backup = db.spec.backup;
  return backup !== undefined && backup.enabled && !backup.objectStore;
}

/** The reason of BackupSucceeded and of the Warning Event for a Database whose backups are thrown away. */
export const NO_BACKUP_DESTINATION = 'NoBackupDestination';
/** What they say. */
export const NO_BACKUP_DESTINATION_REPORT =
  'spec.backup enables backups but names no objectStore: each scheduled dump reaches only a scratch volume deleted with its Pod, and can never be restored. Set spec.backup.objectStore (postgres, mariadb), or spec.backup.enabled: false (mysql). The API server refuses this form for new Databases; this one was stored before that';

/**
 * The dump CronJob, made only for a Database in the refused form above (an
 * object store's backups are DatabaseBackups, backup/controller.ts).
 *
 * It keeps running for such a Database, reported rather than deleted: its
 * spec explicitly asks for backups and has not changed, the dump still reads
 * every row on schedule (a failing Job is a sign of unreadable data someone
 * may be watching), and an operator upgrade that silently removed what the
 * spec asks for would be breaking it. Fixing the spec (an objectStore, or
 * enabled: false) removes it.
 *
 * No spec.backup at all means no backups, and no CronJob: the controller used
 * to make this throwaway dump for a Database that asked for nothing, and a
 * default that can never be restored is no backup. An older Database without
 * spec.backup loses that CronJob, which held nothing restorable.
 */
export function desiredBackupCronJob(
  db: DatabaseObject,
  credentialsSecret: string,
  imageRef?: string,
): V1CronJob | undefined {
  if (!throwawayBackups(db)) return undefined;
  const backup = db.spec.backup!;
  const n = childNames(db);
  const host = `${n.clientService}.${db.metadata.namespace}.svc`;
  const dump = engineOf(db).dump(host);
  const command = ['sh', '-c', `${dump.command} > /backup/dump-$(date +%Y%m%d%H%M%S).sql`];
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name: n.backup, labels: labels(db) },
    spec: {
      schedule: backup.schedule,
      concurrencyPolicy: 'Forbid',
      successfulJobsHistoryLimit: backup.historyLimit,
      failedJobsHistoryLimit: backup.historyLimit,
      jobTemplate: {
        metadata: { labels: labels(db) },
        spec: {
          backoffLimit: 2,
          template: {
            metadata: { labels: { ...labels(db), 'app.kubernetes.io/component': 'backup' } },
            spec: {
              restartPolicy: 'OnFailure',
              serviceAccountName: n.serviceAccount,
              automountServiceAccountToken: false,
              securityContext: {
                runAsNonRoot: true,
                runAsUser: DB_USER,
                seccompProfile: { type: 'RuntimeDefault' },
              },
              containers: [
                {
                  name: 'backup',
                  image: engineImage(db, imageRef),
                  command,
                  env: [
                    {
                      name: 'USER',
                      valueFrom: { secretKeyRef: { name: credentialsSecret, key: 'username' } },
                    },
                    {
                      name: dump.passwordEnv,
                      valueFrom: { secretKeyRef: { name: credentialsSecret, key: 'password' } },
                    },
                  ],
                  securityContext: restrictedContainerSecurityContext({ readOnlyRootFilesystem: false }),
                  volumeMounts: [{ name: 'backup', mountPath: '/backup' }],
                },
              ],
              // The dump stays on a scratch volume and goes with the Pod: no backup to restore from.
              // What lasts is spec.backup.objectStore (postgres: pgBackRest, DatabaseBackup).
              volumes: [{ name: 'backup', emptyDir: {} }],
            },
          },
        },
      },
    },
  };
}

/** One child the Database should have (`object`), or should not have (`object` undefined: deleted if it controls it). */
export interface DesiredChild {
  type: ResourceType;
  name: string;
  object: KubeObject | undefined;
}

/** The claim size a StatefulSet was created with (its volumeClaimTemplates can't change). */
export function createdClaimSize(sts: V1StatefulSet | undefined): string | undefined {
  return sts?.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.['storage'];
}

/**
 * Every child but the credentials Secret (created once, never applied), in
 * the order they are applied: what the StatefulSet's Pods need comes first.
 * `createdStorageSize` is the live StatefulSet's claim size: volumeClaimTemplates
 * are immutable, so the template keeps the size it was created with and
 * growing is done on the PVCs themselves.
 */
export function desiredChildren(
  db: DatabaseObject,
  createdStorageSize?: string,
  imageRef?: string,
  instances: number = db.spec.replicas,
  agentImage?: string,
): DesiredChild[] {
  const n = childNames(db);
  const services = desiredServices(db);
  const sts = desiredStatefulSet(db, n.credentials, imageRef, instances, agentImage);
  const claim = sts.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests;
  if (createdStorageSize && claim) claim['storage'] = createdStorageSize;
  return [
    { type: Kinds.ServiceAccount, name: n.serviceAccount, object: desiredServiceAccount(db, agentImage) },
    // Only with the agent image: the controller owns (watches) these kinds only then (see
    // INSTANCE_AGENT_RBAC). For an engine without an agent, they are deleted if present.
    ...(agentImage
      ? [
          { type: Kinds.Role, name: n.agentRole, object: desiredAgentRole(db, agentImage) },
          { type: Kinds.RoleBinding, name: n.agentRole, object: desiredAgentRoleBinding(db, agentImage) },
        ]
      : []),
    { type: Kinds.ConfigMap, name: n.config, object: desiredConfigMap(db) },
    { type: Kinds.Service, name: n.headlessService, object: services.headless },
    { type: Kinds.Service, name: n.clientService, object: services.client },
    { type: Kinds.Service, name: n.readOnlyService, object: services.readOnly },
    { type: Kinds.StatefulSet, name: n.statefulSet, object: sts },
    { type: Kinds.PodDisruptionBudget, name: n.disruptionBudget, object: desiredDisruptionBudget(db) },
    { type: Kinds.CronJob, name: n.backup, object: desiredBackupCronJob(db, n.credentials, imageRef) },
  ];
}
