// The reconcile-time corpus (src/testing/reconcile-corpus.ts) against the real
// control plane, all three controllers in one manager per case, each case in a
// namespace of its own (its quota or admission policy must not touch the
// others). Every input is admitted; each must end reported — Degraded and
// Ready=False with its reason, Stalled when a person must act (kstatus:
// Failed), one Warning Event — leave others' objects untouched, not loop, and
// heal once the fix in its message is made.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Cache, setupCacheController } from '@regulon/cache-controller';
import { KubeClient, Kinds, isNotFound, type KubeObject, type ResourceType } from '@regulon/client';
import { Database, setupDatabaseController } from '@regulon/database-controller';
import { createLogger, type Condition, testManager } from '@regulon/runtime';
import { eventually, kstatus, start, type TestEnv } from '@regulon/testenv';
import { MyApp } from './api.ts';
import { setupMyAppController } from './index.ts';
import {
  allowStatefulSets,
  RECONCILE_CORPUS,
  type Arena,
  type CorpusKind,
  type ReconcileCase,
} from './testing/reconcile-corpus.ts';

type Subject = KubeObject & {
  status?: { conditions?: Condition[]; phase?: string; observedGeneration?: number };
};

const TYPES: Record<CorpusKind, ResourceType> = {
  Database: Database.type,
  Cache: Cache.type,
  MyApp: MyApp.type,
};
const CONTROLLERS: Record<CorpusKind, string> = { Database: 'database', Cache: 'cache', MyApp: 'myapp' };
const VALID: Record<CorpusKind, Record<string, unknown>> = {
  Database: {
    engine: 'postgres',
    version: '16.6',
    replicas: 1,
    storage: { size: '1Gi' },
    backup: { enabled: false },
  },
  Cache: { engine: 'redis', version: '7.4.10', replicas: 1, memory: '256Mi' },
  MyApp: { image: 'ghcr.io/example/shop:1.0', replicas: 1, port: 8080 },
};

/** The field managers of the three controllers: none may appear on an object it did not create. */
const CONTROLLER_FIELD_MANAGERS = ['regulon-database', 'regulon-cache', 'regulon-myapp'];

/** How long the no-hot-loop window is measured: a fixed span, as a rate is measured over one. */
const QUIET_MS = 4000;
/**
 * A retried problem goes through the per-item backoff: 5 ms doubling, so
 * retries land at 5·(2^n − 1) ms and a window of QUIET_MS holds at most
 * log2(QUIET_MS / 5 + 1) of them, wherever it starts. A loop that bypassed the
 * backoff would run hundreds (a reconcile takes milliseconds), and one held
 * only by the 10 qps bucket 40.
 */
const RETRIES_IN_WINDOW = Math.ceil(Math.log2(QUIET_MS / 5 + 1));
/** Reconciles the other children's events may cause in the window (a Pod turning ready). */
const SLACK = 5;

const cond = (o: Subject, type: string) => o.status?.conditions?.find((c) => c.type === type);
const caseName = (c: ReconcileCase) => `${c.kind}: ${c.field} ${c.input}`;

describe('reconcile-time corpus: accepted, reported, no loop, healed by the fix', { concurrency: 4 }, () => {
  let env: TestEnv;
  let client: KubeClient;

  before(async () => {
    env = await start();
    await env.installCRDs([Database.crd(), Cache.crd(), MyApp.crd()]);
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 200, burst: 200 });
  });
  after(async () => {
    client.close();
    await env.stop();
  });

  // A case takes 10-40 s (the heal of a ReplicaFailure waits for the ReplicaSet controller's own backoff);
  // a bound turns a hang into a failure that names its case.
  for (const c of RECONCILE_CORPUS) test(caseName(c), { timeout: 300_000 }, () => runCase(c));

  async function runCase(c: ReconcileCase): Promise<void> {
    const namespace = await env.newNamespace(`rc-${c.kind}`);
    const mgr = testManager(env.kubeConfig, {
      namespace,
      logger: createLogger({ level: process.env['LOG_LEVEL'] ?? 'silent' }),
    });
    setupDatabaseController(mgr);
    setupCacheController(mgr);
    setupMyAppController(mgr);
    const running = mgr.start();
    const a: Arena = { client, namespace, name: 'subject' };
    const type = TYPES[c.kind];
    const objects = () => client.resource<Subject>(type);
    const get = () => objects().get(a.name, { namespace });
    const reconciles = async (results?: string[]) =>
      (await mgr.registry.getSingleMetric('controller_runtime_reconcile_total')!.get()).values
        .filter(
          (v) =>
            v.labels['controller'] === CONTROLLERS[c.kind] &&
            (results === undefined || results.includes(String(v.labels['result']))),
        )
        .reduce((n, v) => n + v.value, 0);
    try {
      await c.arrange(a);
      const theirs = c.untouched?.(a);
      const theirsBefore = theirs && (await client.resource(theirs.type).get(theirs.name, { namespace }));

      await objects().create({
        apiVersion: `${type.group}/${type.version}`,
        kind: c.kind,
        metadata: { name: a.name, namespace },
        spec: { ...VALID[c.kind], ...c.spec },
      } as Subject);

      // Reported, and never Ready on the way there.
      const phases = new Set<string>();
      const reported = await eventually(`${c.reason} reported`, async () => {
        const o = await get();
        phases.add(o.status?.phase ?? '');
        const degraded = cond(o, 'Degraded');
        return o.status?.observedGeneration === o.metadata?.generation &&
          degraded?.status === 'True' &&
          degraded.reason === c.reason
          ? o
          : undefined;
      });
      assert.ok(!phases.has('Ready'), `never Ready before the fix: saw ${[...phases].join(', ')}`);
      const degraded = cond(reported, 'Degraded')!;
      assert.match(degraded.message, c.message);
      assert.equal(reported.status?.phase, 'Degraded');
      assert.equal(cond(reported, 'Ready')?.status, 'False');
      assert.equal(cond(reported, 'Ready')?.reason, c.reason, 'Ready names the blocking cause');
      assert.equal(cond(reported, 'Stalled')?.status, c.stalled ? 'True' : 'False');
      assert.equal((await kstatus(reported)).status, c.stalled ? 'Failed' : 'InProgress');
      const warnings = async () =>
        (
          await client
            .resource<
              KubeObject & { type?: string; reason?: string; regarding?: { name?: string; kind?: string } }
            >(Kinds.Event)
            .list({ namespace })
        ).items.filter(
          (e) =>
            e.type === 'Warning' &&
            e.reason === c.reason &&
            e.regarding?.kind === c.kind &&
            e.regarding.name === a.name,
        );
      const events = await eventually(`a Warning Event ${c.reason}`, async () => {
        const list = await warnings();
        return list.length > 0 ? list : undefined;
      });

      if (theirs && theirsBefore) {
        const now = await client.resource(theirs.type).get(theirs.name, { namespace });
        // Annotations are left out: a Deployment's own controller adds its revision to them.
        const view = (o: KubeObject & { data?: unknown }) => ({
          ownerReferences: o.metadata?.ownerReferences,
          labels: o.metadata?.labels,
          generation: o.metadata?.generation,
          data: o.data,
        });
        assert.deepEqual(view(now), view(theirsBefore), `${theirs.type.kind} ${theirs.name} left untouched`);
        // A custom resource's own controller writes its status; nobody but the user writes the rest.
        const writers = (now.metadata?.managedFields ?? [])
          .filter((f) => f.subresource !== 'status')
          .map((f) => f.manager ?? '');
        assert.ok(
          !writers.some((m) => CONTROLLER_FIELD_MANAGERS.includes(m)),
          `never written by a controller: ${writers.join(', ')}`,
        );
      }

      // No loop: once the object's status has settled, a quiet window changes nothing.
      let rv = reported.metadata?.resourceVersion;
      await eventually('status settled', async () => {
        const before = rv;
        await new Promise((r) => setTimeout(r, 1000));
        rv = (await get()).metadata?.resourceVersion;
        return rv === before;
      });
      // What the problem says may not change in the window. The rest of the status may: a child
      // created before the refused one (a StatefulSet before its PodDisruptionBudget) still gets its
      // Pods ready on the fake nodes, at the scheduler's and volume binder's pace.
      const problemConditions = async () =>
        ((await get()).status?.conditions ?? []).filter((x) =>
          ['Degraded', 'Stalled', 'Ready'].includes(x.type),
        );
      const settled = await problemConditions();
      const total = await reconciles();
      const retries = await reconciles(['requeue', 'error']);
      await new Promise((r) => setTimeout(r, QUIET_MS)); // a measured quiet window, not a wait for a condition
      const during = (await reconciles()) - total;
      const retriedDuring = (await reconciles(['requeue', 'error'])) - retries;
      const quiet = await get();
      assert.deepEqual(
        await problemConditions(),
        settled,
        'Degraded, Stalled and Ready were rewritten in a quiet window',
      );
      assert.equal(cond(quiet, 'Degraded')?.reason, c.reason);
      if (c.retried)
        assert.ok(
          during <= RETRIES_IN_WINDOW + SLACK,
          `retried within the backoff: ${during} reconciles in ${QUIET_MS} ms`,
        );
      else {
        assert.equal(retriedDuring, 0, 'a problem a watch clears is not retried');
        assert.ok(during <= SLACK, `no hot loop: ${during} reconciles in ${QUIET_MS} ms`);
      }
      assert.equal((await warnings()).length, events.length, 'the Event is emitted on the change only');

      // A person does what the message says: the object proceeds, without any other nudge.
      await c.fix(a);
      const healed = await eventually(
        'healed',
        async () => {
          const o = await get();
          return cond(o, 'Degraded')?.status === 'False' &&
            cond(o, 'Stalled')?.status === 'False' &&
            cond(o, 'Ready')?.status === 'True'
            ? o
            : undefined;
        },
        180_000,
      );
      assert.equal((await kstatus(healed)).status, 'Current');
    } finally {
      mgr.stop();
      await running;
      if (c.form === 'a child the API server refuses')
        await allowStatefulSets(a).catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
    }
  }
});

test('the corpus covers the three kinds with at least 15 cases, each kind with each family it can meet', () => {
  assert.ok(RECONCILE_CORPUS.length >= 15, `${RECONCILE_CORPUS.length} cases`);
  for (const kind of ['Database', 'Cache', 'MyApp'] as const) {
    const forms = new Set(RECONCILE_CORPUS.filter((c) => c.kind === kind).map((c) => c.form));
    for (const form of [
      'a referenced Secret that does not exist',
      'a name already taken by an object the controller did not create',
      'a child the API server refuses',
    ])
      assert.ok(forms.has(form), `${kind}: ${form}`);
  }
  assert.equal(
    new Set(RECONCILE_CORPUS.map(caseName)).size,
    RECONCILE_CORPUS.length,
    'one test name per case',
  );
});
