// What the framework benchmark's subjects cache: Widgets (a small custom
// resource of its own) and ConfigMaps of 4 KiB, created before any subject
// starts, so that the API server's work is done before the measured phase.
import {
  AlreadyExistsError,
  Kinds,
  type KubeClient,
  type KubeObject,
  type ResourceType,
} from '@regulon/client';

export const WIDGET: ResourceType = Object.freeze({
  group: 'bench.regulon.dev',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  namespaced: true,
});

/** The Widget CRD: a spec of two fields and a status without a subresource, so a create sets both. */
export const WIDGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.bench.regulon.dev' },
  spec: {
    group: WIDGET.group,
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: { size: { type: 'integer' }, owner: { type: 'string' } },
              },
              status: { type: 'object', properties: { phase: { type: 'string' } } },
            },
          },
        },
      },
    ],
  },
};

export type PopulationKind = 'widgets' | 'configmaps';

export const KIND_TYPES: Record<PopulationKind, ResourceType> = {
  widgets: WIDGET,
  configmaps: Kinds.ConfigMap,
};

/** The name of object i: sorted the same as created. */
export const objectName = (i: number) => `obj-${String(i).padStart(6, '0')}`;

/** 4 KiB of data, as the ConfigMap cell asks: one key of 4,096 characters. */
export const CONFIGMAP_DATA_BYTES = 4096;

export function objectFor(kind: PopulationKind, namespace: string, i: number): KubeObject {
  const metadata = { name: objectName(i), namespace, labels: { 'bench.regulon.dev/set': kind } };
  if (kind === 'configmaps')
    return {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata,
      // "phase" is what the trivial reconcile checks; ConfigMaps have no status.
      data: { phase: 'Ready', payload: 'x'.repeat(CONFIGMAP_DATA_BYTES) },
    } as KubeObject;
  return {
    apiVersion: `${WIDGET.group}/${WIDGET.version}`,
    kind: WIDGET.kind,
    metadata,
    spec: { size: i, owner: 'bench' },
    status: { phase: 'Ready' },
  } as KubeObject;
}

/** Runs `task(i)` for i in [from, to) with `concurrency` in flight at once. */
export async function inParallel(
  from: number,
  to: number,
  concurrency: number,
  task: (i: number) => Promise<unknown>,
): Promise<void> {
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('concurrency: a positive integer');
  let next = from;
  const worker = async () => {
    for (let i = next++; i < to; i = next++) await task(i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(0, to - from)) }, worker));
}

/** Creates objects [from, to) of a kind; an object that already exists is left as it is. */
export async function populate(
  client: KubeClient,
  kind: PopulationKind,
  namespace: string,
  from: number,
  to: number,
  concurrency: number,
): Promise<void> {
  const resource = client.resource(KIND_TYPES[kind]);
  await inParallel(from, to, concurrency, async (i) => {
    try {
      await resource.create(objectFor(kind, namespace, i));
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
    }
  });
}

/**
 * spec.size of the next patch. Every patch in this process writes a value no
 * object had: a patch that changes nothing is not an event, and a subject
 * waiting for it would wait forever. Created objects have sizes below N.
 */
let nextSize = Date.now();

/**
 * The watch cell's writer: `updates` merge patches, spread round-robin over
 * objects [0, objects), `concurrency` at once, as fast as the API server takes
 * them. Each one changes spec.size, so each is one MODIFIED event.
 */
export async function writeUpdates(
  client: KubeClient,
  namespace: string,
  objects: number,
  updates: number,
  concurrency: number,
): Promise<void> {
  const resource = client.resource(WIDGET);
  await inParallel(0, updates, concurrency, (u) =>
    resource.patch(objectName(u % objects), { spec: { size: nextSize++ } }, { type: 'merge', namespace }),
  );
}
