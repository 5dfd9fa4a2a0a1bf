// The priority queue in a controller against the real API server: after a
// (re)start over many objects, a real change waits behind none of the backlog
// that the informer's initial list queued.
import assert from 'node:assert/strict';
import { setTimeout as work } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { KubeClient, Kinds } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import { createLogger } from '../observability/logging.ts';
import type { Manager } from '../manager/manager.ts';
import { testManager } from '../manager/test-manager.ts';
import { forEachConcurrently, indices } from '../testing/concurrently.ts';
import { eventually } from '../testing/wait.ts';

/** Objects present before the controller starts. */
const OBJECTS = 10_000;
/** What one reconcile costs: the whole initial list takes OBJECTS × this (50 s) to drain. */
const RECONCILE_MS = 5;
/**
 * The bound: the change is reconciled before this share of the initial list is.
 * It leaves ~5 s (1,000 reconciles) for the patch to go out and its watch event to
 * come back on a loaded machine; in FIFO order the change would wait for all of it.
 */
const WITHIN_SHARE = 0.1;
const CREATE_CONCURRENCY = 50;

let env: TestEnv;
let client: KubeClient;
const managers: Manager[] = [];

before(async () => {
  env = await start();
  client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 1000, burst: 1000 });
});
after(async () => {
  for (const m of managers) m.stop();
  client.close();
  await env.stop();
});

const name = (i: number): string => `cm-${String(i).padStart(4, '0')}`;

test(
  `a change made right after a start over ${OBJECTS} objects is reconciled before ${WITHIN_SHARE * 100}% of the initial list`,
  { timeout: 180_000 },
  async (t) => {
    const ns = await env.newNamespace('rt-priority');
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    await forEachConcurrently(indices(OBJECTS), CREATE_CONCURRENCY, (i) =>
      cms.create({ metadata: { name: name(i), namespace: ns }, data: { v: 'old' } }),
    );
    // Listed by name, the last object is the one a FIFO queue would reconcile last.
    const changed = name(OBJECTS - 1);

    const mgr = testManager(env.kubeConfig, {
      logger: createLogger({ level: 'silent' }),
      clientOptions: { qps: 1000, burst: 1000 },
      namespace: ns,
      gracefulShutdownTimeoutMs: 5000,
    });
    managers.push(mgr);
    let reconciles = 0;
    let reconcilesBeforeChange: number | undefined;
    let queuedAtChange: number | undefined;
    const controller = mgr
      .controller('priority')
      .for(Kinds.ConfigMap)
      .withOptions({ maxConcurrentReconciles: 1 })
      .reconcile(async (cm) => {
        if (
          cm.metadata.name === changed &&
          cm.data?.['v'] === 'new' &&
          reconcilesBeforeChange === undefined
        ) {
          reconcilesBeforeChange = reconciles;
          queuedAtChange = controller.queue.len();
        }
        reconciles++;
        await work(RECONCILE_MS);
      });
    const running = mgr.start();

    await eventually('the first reconcile', () => reconciles > 0, 60_000, 5);
    await cms.patch(changed, { data: { v: 'new' } }, { type: 'merge', namespace: ns });
    const before = await eventually('the change reconciled', () => reconcilesBeforeChange, 60_000, 5);
    mgr.stop();
    await running;

    t.diagnostic(
      `reconciles before the change: ${before} of ${OBJECTS + 1} listed; still queued then: ${queuedAtChange}`,
    );
    assert.ok(
      before < OBJECTS * WITHIN_SHARE,
      `the change waited behind ${before} reconciles of the initial list (bound ${OBJECTS * WITHIN_SHARE})`,
    );
    assert.ok(
      (queuedAtChange ?? 0) > OBJECTS * (1 - WITHIN_SHARE) - 1,
      `only ${queuedAtChange} keys were still queued: the backlog was not there to jump`,
    );
  },
);
