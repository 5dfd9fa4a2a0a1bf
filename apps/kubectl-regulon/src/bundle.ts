// `report KIND NAME`: a support bundle, one archive a person attaches to an
// issue: the object, its status screen, its children, the Events about any of
// them and every instance's logs (the previous container's too). What the
// API server refuses or lacks (no permission, a kind not served) is written
// into the bundle's errors.txt, and the rest is still collected.
//
// Secrets: their data is never read. The bundle lists the object's Secrets by
// name from a metadata-only list (the API server sends no data at all), and
// every object goes through redact() before it is written, so a Secret that
// reached it another way, or a password written inline into a Pod's
// environment, is replaced by REDACTED.
import { writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
import { Cache } from '@regulon/cache-controller';
import { Kinds, retyped, type KubeObject, type ResourceType } from '@regulon/client';
import { Database } from '@regulon/database-controller';
import { stringify } from 'yaml';
import { tarGz, zip, type ArchiveEntry } from './archive.ts';
import type { BundleFormat } from './args.ts';
import { defaultBackupName } from './backup.ts';
import type { CommandEnv } from './env.ts';
import type { AnyObject, KindInfo } from './kinds.ts';
import { getObject } from './objects.ts';
import { renderStatus } from './render.ts';
import { statusReport } from './report.ts';
import { backupsOf, eventsAbout } from './status.ts';

export const REDACTED = 'REDACTED';

/** Each container log's newest lines, at most: hours of a busy instance, not its whole history. */
export const LOG_TAIL_LINES = 20_000;
/** And at most this many bytes of them (the API server cuts at the limit). */
export const LOG_LIMIT_BYTES = 16 * 1024 * 1024;

export interface ReportRequest {
  kind: KindInfo;
  object: string;
  file?: string | undefined;
  format: BundleFormat;
}

/** An environment variable whose inline value is likely a credential, by its name. */
const SECRET_NAME = /pass(word|wd)?|secret|token|auth|credential|private|access_?key|api_?key/i;

/**
 * The object as the bundle holds it: no managedFields (noise), and nothing
 * secret. A Secret keeps its keys with every value REDACTED (and the
 * last-applied annotation, a copy of its data, goes); an environment
 * variable with an inline value whose name says it is a credential gets
 * REDACTED (a secretKeyRef names a key, never a value, and stays). Pure: a
 * copy, the input untouched.
 */
export function redact<T extends KubeObject>(obj: T): T {
  const copy = structuredClone(obj) as T & {
    data?: Record<string, string>;
    stringData?: Record<string, string>;
  };
  if (copy.metadata) delete copy.metadata.managedFields;
  if (copy.kind === 'Secret') {
    for (const field of ['data', 'stringData'] as const) {
      const values = copy[field];
      if (values) copy[field] = Object.fromEntries(Object.keys(values).map((k) => [k, REDACTED]));
    }
    const annotations = copy.metadata?.annotations;
    if (annotations?.['kubectl.kubernetes.io/last-applied-configuration'] !== undefined)
      annotations['kubectl.kubernetes.io/last-applied-configuration'] = REDACTED;
  }
  redactEnv(copy);
  return copy;
}

/** Every `env` list in the object (Pod, workload templates, a MyApp's spec), inline credentials redacted. */
function redactEnv(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) redactEnv(item);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const record = node as Record<string, unknown>;
  if (Array.isArray(record.env))
    for (const v of record.env as { name?: string; value?: string }[])
      if (typeof v?.value === 'string' && v.value !== '' && SECRET_NAME.test(v.name ?? ''))
        v.value = REDACTED;
  for (const value of Object.values(record)) redactEnv(value);
}

/** The kinds of children collected in full, each under children/<plural>/. */
const FULL_CHILDREN: readonly ResourceType[] = [
  Kinds.StatefulSet,
  Kinds.Deployment,
  Kinds.Pod,
  Kinds.Service,
  Kinds.PersistentVolumeClaim,
  Kinds.Job,
  Kinds.CronJob,
  Kinds.PodDisruptionBudget,
  Kinds.Lease,
];

/** The labels every controller puts on an object's children: the workload's selector (app.kubernetes.io/name, instance). */
function childSelector(kind: KindInfo, object: AnyObject): string {
  // podSelector less its Job-Pod exclusion: here the backup Jobs and their Pods belong in the bundle too.
  return kind.podSelector(object).replace(/,!batch\.kubernetes\.io\/job-name$/, '');
}

interface Collected {
  entries: ArchiveEntry[];
  errors: string[];
}

export async function report(env: CommandEnv, req: ReportRequest): Promise<void> {
  const now = env.date();
  const object = await getObject<AnyObject>(env, req.kind, req.object);
  const stamp = defaultBackupName(req.object, now).slice(req.object.length + 1);
  const top = `${req.kind.type.plural}-${req.object}-report-${stamp}`;
  const c: Collected = { entries: [], errors: [] };
  const add = (path: string, content: string) => c.entries.push({ path: `${top}/${path}`, content });
  const attempt = async (what: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      c.errors.push(`${what}: ${(err as Error).message.split('\n')[0]}`);
    }
  };

  add('object.yaml', stringify(redact(object)));
  const names = new Set([req.object]);
  const pods: V1Pod[] = [];
  const selector = childSelector(req.kind, object);

  for (const type of FULL_CHILDREN)
    await attempt(`list ${type.plural}`, async () => {
      const { items } = await env.client.resource(type).listAll({
        namespace: env.namespace,
        // Leases: the controllers label the primary Lease; one another writer made is named after the object.
        ...(type === Kinds.Lease ? {} : { labelSelector: selector }),
        signal: env.signal,
      });
      const mine =
        type === Kinds.Lease
          ? items.filter(
              (l) => l.metadata?.name === req.object || l.metadata?.name?.startsWith(`${req.object}-`),
            )
          : items;
      for (const item of mine) {
        const name = item.metadata!.name!;
        names.add(name);
        add(
          `children/${type.plural}/${name}.yaml`,
          stringify(redact({ ...item, apiVersion: apiVersionOf(type), kind: type.kind })),
        );
      }
      if (type === Kinds.Pod) pods.push(...(mine as V1Pod[]));
    });

  // A MyApp's own Database and Cache, whole: they are its children too.
  if (req.kind.kind === 'MyApp')
    for (const type of [retyped<KubeObject>(Database.type), retyped<KubeObject>(Cache.type)])
      await attempt(`list ${type.plural}`, async () => {
        const { items } = await env.client
          .resource(type)
          .listAll({ namespace: env.namespace, signal: env.signal });
        for (const item of items.filter((i) =>
          i.metadata?.ownerReferences?.some((o) => o.uid === object.metadata.uid),
        )) {
          names.add(item.metadata!.name!);
          add(`children/${type.plural}/${item.metadata!.name}.yaml`, stringify(redact(item)));
        }
      });

  await attempt('list configmaps', async () => {
    const { items } = await env.client
      .resource<V1ConfigMap>(Kinds.ConfigMap)
      .listAll({ namespace: env.namespace, labelSelector: selector, signal: env.signal });
    const listing = items.map((cm) => ({
      name: cm.metadata!.name!,
      keys: [...Object.keys(cm.data ?? {}), ...Object.keys(cm.binaryData ?? {})].sort(),
    }));
    add('configmaps.yaml', stringify({ note: 'names and keys only', configMaps: listing }));
  });

  await attempt('list secrets (metadata only)', async () => {
    const { items } = await env.client.resource(Kinds.Secret).listAll({
      namespace: env.namespace,
      labelSelector: selector,
      metadataOnly: true,
      signal: env.signal,
    });
    add(
      'secrets.yaml',
      stringify({
        note: 'names only: the plugin reads no Secret data (a metadata-only list)',
        secrets: items.map((s) => s.metadata.name!).sort(),
      }),
    );
  });

  await attempt('status', async () => {
    const [events, backups] = await Promise.all([
      eventsAbout(env, req.kind, object),
      req.kind.kind === 'Database' ? backupsOf(env) : undefined,
    ]);
    const status = statusReport({ kind: req.kind.kind, object, events, backups });
    add('status.txt', renderStatus(status, now));
    add('status.yaml', stringify(status));
  });

  await attempt('list events', async () => {
    type Ev = KubeObject & { regarding?: { name?: string; kind?: string } };
    const { items } = await env.client
      .resource(retyped<Ev>(Kinds.Event))
      .listAll({ namespace: env.namespace, signal: env.signal });
    const about = items.filter((e) => e.regarding?.name !== undefined && names.has(e.regarding.name));
    add(
      'events.yaml',
      stringify(about.map((e) => redact({ ...e, apiVersion: 'events.k8s.io/v1', kind: 'Event' }))),
    );
  });

  for (const pod of pods.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!)))
    for (const container of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
      const name = pod.metadata!.name!;
      const statuses = [
        ...(pod.status?.initContainerStatuses ?? []),
        ...(pod.status?.containerStatuses ?? []),
      ];
      const restarted = statuses.find((s) => s.name === container.name)?.lastState?.terminated !== undefined;
      for (const previous of restarted ? [false, true] : [false])
        await attempt(`logs of ${name}/${container.name}${previous ? ' (previous)' : ''}`, async () => {
          const text = await readLog(env, name, container.name, previous);
          add(`logs/${name}/${container.name}${previous ? '.previous' : ''}.log`, text);
        });
    }

  add(
    'README.txt',
    [
      `kubectl regulon report ${req.kind.kind} ${env.namespace}/${req.object}, collected ${now.toISOString()}`,
      '',
      'object.yaml       the object as the API server holds it (managedFields left out)',
      'status.txt|yaml   what `kubectl regulon status` shows',
      'children/         the workloads, Pods, Services, claims, Jobs, PodDisruptionBudgets and Leases it owns',
      'configmaps.yaml   its ConfigMaps, names and keys only',
      'secrets.yaml      its Secrets, names only: no Secret data is ever read',
      'events.yaml       the Events about the object and each of its children',
      'logs/             each container of each Pod (.previous.log: the container before its last restart),',
      `                  the last ${LOG_TAIL_LINES} lines of each`,
      'errors.txt        what could not be collected, and why',
      '',
    ].join('\n'),
  );
  add('errors.txt', c.errors.length ? `${c.errors.join('\n')}\n` : '');

  const file = req.file ?? `${top}.${req.format}`;
  const path = isAbsolute(file) ? file : join(env.cwd, file);
  const archive = req.format === 'zip' ? zip(c.entries, now) : tarGz(c.entries, now);
  writeFileSync(path, archive);
  env.out(`${file}\n`);
  env.err(
    `${c.entries.length} files, ${(archive.length / 1024).toFixed(0)} KiB${c.errors.length ? `; ${c.errors.length} could not be collected (errors.txt)` : ''}\n`,
  );
}

const apiVersionOf = (t: ResourceType) => (t.group ? `${t.group}/${t.version}` : t.version);

async function readLog(env: CommandEnv, pod: string, container: string, previous: boolean): Promise<string> {
  const text = await env.client.request<string | undefined>({
    method: 'GET',
    path: `/api/v1/namespaces/${encodeURIComponent(env.namespace)}/pods/${encodeURIComponent(pod)}/log`,
    query: {
      container,
      previous: previous || undefined,
      tailLines: LOG_TAIL_LINES,
      limitBytes: LOG_LIMIT_BYTES,
      timestamps: true,
    },
    accept: 'text/plain, */*',
    signal: env.signal,
  });
  return text ?? '';
}
