// The reconcile loop, metrics, health, tracing and logging of a Manager,
// with a small test controller over ConfigMaps, against the real API server.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { KubeClient, Kinds, type ResourceType } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import { Registry } from 'prom-client';
import { createLogger } from '../observability/logging.ts';
import { Manager, type ManagerOptions } from '../manager/manager.ts';
import { TerminalError, type ReconcileContext, type Request } from './reconcile.ts';
import { parsePrometheusText, sampleValue } from '../testing/prometheus.ts';
import { eventually } from '../testing/wait.ts';

const spans = new InMemorySpanExporter();
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));

/** Captures pino's JSON lines. */
class LogCapture extends Writable {
  lines: Array<Record<string, unknown>> = [];
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    for (const l of chunk.toString().split('\n'))
      if (l.trim()) this.lines.push(JSON.parse(l) as Record<string, unknown>);
    cb();
  }
}

interface Harness {
  mgr: Manager;
  registry: Registry;
  logs: LogCapture;
  running: Promise<void>;
  metrics(): Promise<ReturnType<typeof parsePrometheusText>>;
  get(path: string): Promise<{ status: number; body: string }>;
}

describe('Manager and controller', () => {
  let env: TestEnv;
  let client: KubeClient;

  before(async () => {
    env = await start();
    client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 500, burst: 500 });
  });
  // Managers a failed test left running stop at the end instead of holding the run open.
  const managers: Manager[] = [];
  after(async () => {
    for (const m of managers) m.stop();
    client.close();
    await env.stop();
  });

  async function harness(
    namespace: string,
    reconcile: (
      req: Request,
      ctx: ReconcileContext,
      mgr: Manager,
    ) => Promise<{ requeueAfter?: number } | void>,
    opts: {
      maxConcurrentReconciles?: number;
      forType?: ResourceType;
      manager?: ManagerOptions;
      /** The control plane, when not the run's shared one. */
      env?: TestEnv;
    } = {},
  ): Promise<Harness> {
    const registry = new Registry();
    const logs = new LogCapture();
    const mgr = new Manager({
      client: KubeClient.fromKubeConfig((opts.env ?? env).kubeConfig, { registry, qps: 500, burst: 500 }),
      registry,
      logger: createLogger({ level: 'debug', destination: logs }),
      metricsBindAddress: '127.0.0.1:0',
      healthBindAddress: '127.0.0.1:0',
      namespace,
      gracefulShutdownTimeoutMs: 5000,
      ...opts.manager,
    });
    mgr
      .controller('test-configmaps')
      .for(opts.forType ?? Kinds.ConfigMap)
      .withOptions({ maxConcurrentReconciles: opts.maxConcurrentReconciles ?? 2 })
      .complete({ reconcile: (req, ctx) => reconcile(req, ctx, mgr) });
    managers.push(mgr);
    const running = mgr.start();
    await eventually(
      'servers listening',
      () => mgr.metricsServer.port !== undefined && mgr.health.port !== undefined,
    );
    const get = async (path: string) => {
      const port = path.startsWith('/metrics') ? mgr.metricsServer.port : mgr.health.port;
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: res.status, body: await res.text() };
    };
    return {
      mgr,
      registry,
      logs,
      running,
      get,
      metrics: async () => parsePrometheusText((await get('/metrics')).body),
    };
  }

  const cm = (namespace: string, name: string, data: Record<string, string> = {}): V1ConfigMap => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace },
    data,
  });

  test('a reconciler that throws is retried with growing delays; a TerminalError is not retried', async () => {
    const ns = await env.newNamespace('rt-errors');
    const attempts = new Map<string, number[]>();
    const h = await harness(ns, (req) => {
      const list = attempts.get(req.name) ?? [];
      list.push(performance.now());
      attempts.set(req.name, list);
      if (req.name === 'flaky') throw new Error('transient failure');
      if (req.name === 'bad') throw new TerminalError('spec is invalid');
      return Promise.resolve();
    });
    await eventually('synced', async () => (await h.get('/readyz')).status === 200);
    await client.resource(Kinds.ConfigMap).create(cm(ns, 'flaky'));
    await client.resource(Kinds.ConfigMap).create(cm(ns, 'bad'));
    await eventually('6 attempts of flaky', () => (attempts.get('flaky')?.length ?? 0) >= 6);
    const t = attempts.get('flaky')!;
    const gaps = t.slice(1).map((x, i) => x - t[i]!);
    // 5 ms base doubling: 5, 10, 20, 40, 80 ms. Each gap is at least its own backoff, so the
    // delays grow (a fixed delay fails the later bounds). Gaps are not compared with each other:
    // a busy machine stretches any one of them (a first gap of 49 ms was seen under CI load).
    gaps.forEach((gap, i) =>
      assert.ok(
        gap >= 5 * 2 ** i * 0.9,
        `gap ${i} = ${gap.toFixed(1)} ms, want >= ${5 * 2 ** i} (all: ${gaps.map((g) => g.toFixed(1)).join(', ')})`,
      ),
    );
    // The terminal error: one attempt, and it stays one while flaky keeps retrying.
    const flakyBefore = attempts.get('flaky')!.length;
    await eventually('flaky retried further', () => attempts.get('flaky')!.length >= flakyBefore + 2);
    assert.equal(attempts.get('bad')?.length, 1);
    const m = await h.metrics();
    assert.ok(
      sampleValue(m, 'controller_runtime_terminal_reconcile_errors_total', {
        controller: 'test-configmaps',
      }) === 1,
    );
    assert.ok(
      sampleValue(m, 'controller_runtime_reconcile_errors_total', { controller: 'test-configmaps' }) >= 7,
    );
    assert.ok(sampleValue(m, 'workqueue_retries_total', { name: 'test-configmaps' }) >= 6);
    h.mgr.stop();
    await h.running;
  });

  test('a slow reconcile never runs twice at once for one key', async () => {
    const ns = await env.newNamespace('rt-slow');
    let active = 0;
    let maxActiveSameKey = 0;
    let runs = 0;
    const activeByKey = new Map<string, number>();
    const h = await harness(
      ns,
      async (req) => {
        const n = (activeByKey.get(req.name) ?? 0) + 1;
        activeByKey.set(req.name, n);
        maxActiveSameKey = Math.max(maxActiveSameKey, n);
        active++;
        await new Promise((r) => setTimeout(r, 200));
        active--;
        activeByKey.set(req.name, n - 1);
        runs++;
      },
      { maxConcurrentReconciles: 4 },
    );
    await eventually('synced', async () => (await h.get('/readyz')).status === 200);
    await client.resource(Kinds.ConfigMap).create(cm(ns, 'slow', { v: '0' }));
    // Many updates while the first reconcile is running: they collapse, and never overlap.
    for (let i = 1; i <= 10; i++)
      await client
        .resource(Kinds.ConfigMap)
        .patch('slow', { data: { v: String(i) } }, { type: 'merge', namespace: ns });
    await eventually('settled', () => runs >= 2 && active === 0);
    assert.equal(maxActiveSameKey, 1);
    assert.ok(runs < 11, `updates collapsed into fewer reconciles (${runs})`);
    h.mgr.stop();
    await h.running;
  });

  test('/readyz is not ready before the caches sync, and ready after', async () => {
    const ns = await env.newNamespace('rt-ready');
    // A group of its own per run: the kind must not be served before the test installs it.
    const group = `ready-${Date.now().toString(36)}.regulon.dev`;
    const Widget: ResourceType = {
      group,
      version: 'v1',
      kind: 'Widget',
      plural: 'widgets',
      namespaced: true,
    };
    const h = await harness(ns, async () => {}, { forType: Widget });
    // The kind isn't served yet, so its informer can't list.
    const before = await h.get('/readyz?verbose');
    assert.equal(before.status, 503);
    assert.match(before.body, /\[-\]cache-sync/);
    assert.equal((await h.get('/healthz')).status, 200);
    await env.installCRDs([
      {
        metadata: { name: `widgets.${group}` },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            },
          ],
        },
      },
    ]);
    await eventually('ready after sync', async () => (await h.get('/readyz')).status === 200, 60_000);
    h.mgr.stop();
    await h.running;
  });

  test('/readyz fails once an API server outage outlasts the threshold, and is ready again as soon as the watch is back', async (t) => {
    // A control plane of its own: the run's shared one serves other projects' tests at the same
    // time, whose managers and instance agents must not lose their API server to this test.
    const own = await start({ own: true });
    t.after(() => own.stop());
    const ns = await own.newNamespace('rt-outage');
    const thresholdMs = 3000;
    const h = await harness(ns, async () => {}, {
      manager: { informerUnhealthyAfterMs: thresholdMs },
      env: own,
    });
    await eventually('ready after sync', async () => (await h.get('/readyz')).status === 200);
    const failures = () => h.mgr.informers.status().reduce((n, s) => n + s.health.consecutiveFailures, 0);
    const stoppedAt = Date.now();
    await own.controlPlane.stopAPIServer();
    try {
      await eventually('the informer is failing', () => failures() > 0, 30_000);
      const unreadyAt = await eventually(
        'unready during the outage',
        async () => (await h.get('/readyz')).status === 503 && Date.now(),
        thresholdMs + 30_000,
      );
      assert.ok(
        unreadyAt - stoppedAt > thresholdMs,
        `unready ${unreadyAt - stoppedAt} ms after the API server stopped, before the ${thresholdMs} ms threshold`,
      );
      const unready = await h.get('/readyz?verbose');
      assert.match(unready.body, /\[-\]informers failed: .*ConfigMap/);
      assert.match(unready.body, /\[\+\]cache-sync ok/);
    } finally {
      await own.controlPlane.startAPIServer();
    }
    // The namespace is quiet: nothing but the re-opened watch can show the recovery.
    await eventually(
      'ready soon after the API server is back',
      async () => (await h.get('/readyz')).status === 200,
      30_000,
    );
    assert.equal(failures(), 0);
    h.mgr.stop();
    await h.running;
  });

  test('one update event runs one reconcile, though the old and the new object both map to its key', async () => {
    const ns = await env.newNamespace('rt-one-event');
    const reconciles = new Map<string, number>();
    const h = await harness(
      ns,
      (req) => {
        reconciles.set(req.name, (reconciles.get(req.name) ?? 0) + 1);
        return Promise.resolve();
      },
      // One idle worker: it takes the first add of a key at once, so a second add runs again.
      { maxConcurrentReconciles: 1 },
    );
    await eventually('synced', async () => (await h.get('/readyz')).status === 200);
    const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
    // The worker is FIFO: once a marker created later has been reconciled, every
    // reconcile queued before it has run.
    const quiet = async (marker: string) => {
      await cms.create(cm(ns, marker));
      await eventually(`${marker} reconciled`, () => reconciles.has(marker));
    };
    await cms.create(cm(ns, 'annotated'));
    await quiet('marker-created');
    assert.equal(reconciles.get('annotated'), 1, 'the create reconciled once');
    await cms.patch(
      'annotated',
      { metadata: { annotations: { 'regulon.dev/touched': 'once' } } },
      { type: 'merge', namespace: ns },
    );
    await eventually('the update reconciled', () => reconciles.get('annotated')! >= 2);
    await quiet('marker-updated');
    assert.equal(reconciles.get('annotated'), 2, 'one more reconcile for the one update event');
    h.mgr.stop();
    await h.running;
  });

  test('/metrics has every series with the right labels and values; one span per reconcile; log lines carry reconcile fields', async () => {
    const ns = await env.newNamespace('rt-metrics');
    spans.reset();
    const h = await harness(ns, async (req, ctx, mgr) => {
      ctx.log.info({ step: 'inside' }, 'reconciling');
      // An API call inside the reconcile: its span is a child of the reconcile span.
      await mgr.client.resource(Kinds.ConfigMap).get(req.name, { namespace: ns, signal: ctx.signal });
      if (req.name === 'later') return { requeueAfter: 60_000 };
    });
    await eventually('synced', async () => (await h.get('/readyz')).status === 200);
    for (const name of ['a', 'b', 'later']) await client.resource(Kinds.ConfigMap).create(cm(ns, name));
    // kube-root-ca.crt is in every namespace; the test counts its reconcile too.
    const expected = 4;
    const labels = { controller: 'test-configmaps' };
    await eventually('4 reconciles counted', async () => {
      const m = await h.metrics();
      return (
        sampleValue(m, 'controller_runtime_reconcile_total', { ...labels, result: 'success' }) ===
          expected - 1 &&
        sampleValue(m, 'controller_runtime_reconcile_total', { ...labels, result: 'requeue_after' }) === 1
      );
    });
    const m = await h.metrics();
    assert.equal(sampleValue(m, 'controller_runtime_reconcile_total', { ...labels, result: 'error' }), 0);
    assert.equal(sampleValue(m, 'controller_runtime_reconcile_total', { ...labels, result: 'requeue' }), 0);
    assert.equal(sampleValue(m, 'controller_runtime_reconcile_errors_total', labels), 0);
    assert.equal(sampleValue(m, 'controller_runtime_terminal_reconcile_errors_total', labels), 0);
    assert.equal(sampleValue(m, 'controller_runtime_reconcile_panics_total', labels), 0);
    assert.equal(sampleValue(m, 'controller_runtime_reconcile_time_seconds_count', labels), expected);
    assert.equal(sampleValue(m, 'controller_runtime_max_concurrent_reconciles', labels), 2);
    assert.equal(sampleValue(m, 'controller_runtime_active_workers', labels), 0);
    const q = { name: 'test-configmaps', controller: 'test-configmaps' };
    assert.equal(sampleValue(m, 'workqueue_adds_total', q), expected);
    assert.equal(sampleValue(m, 'workqueue_depth', q), 0);
    assert.equal(sampleValue(m, 'workqueue_queue_duration_seconds_count', q), expected);
    assert.equal(sampleValue(m, 'workqueue_work_duration_seconds_count', q), expected);
    assert.equal(sampleValue(m, 'workqueue_unfinished_work_seconds', q), 0);
    assert.equal(sampleValue(m, 'workqueue_longest_running_processor_seconds', q), 0);
    // client-go counts every delayed add as a retry: here the one requeueAfter.
    assert.equal(sampleValue(m, 'workqueue_retries_total', q), 1);
    const host = new URL(env.server).host;
    assert.ok(sampleValue(m, 'rest_client_requests_total', { code: '200', method: 'GET', host }) >= expected);
    assert.ok(m.some((s) => s.name === 'rest_client_request_duration_seconds_count'));
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_seconds',
    ]) {
      assert.ok(
        m.some((s) => s.name === name),
        `${name} exported`,
      );
    }

    const reconcileSpans = spans
      .getFinishedSpans()
      .filter((s) => s.name === 'reconcile' && s.attributes['k8s.namespace.name'] === ns);
    assert.equal(reconcileSpans.length, expected);
    const later = reconcileSpans.find((s) => s.attributes['regulon.object.name'] === 'later')!;
    assert.equal(later.attributes['regulon.controller'], 'test-configmaps');
    assert.equal(later.attributes['regulon.result'], 'requeue_after');
    const child = spans
      .getFinishedSpans()
      .find((s) => s.parentSpanContext?.spanId === later.spanContext().spanId);
    assert.ok(child, 'the API call inside the reconcile is a child span');

    const inside = h.logs.lines.filter((l) => l['step'] === 'inside');
    assert.equal(inside.length, expected);
    for (const line of inside) {
      assert.equal(line['controller'], 'test-configmaps');
      assert.equal(line['namespace'], ns);
      assert.equal(typeof line['name'], 'string');
      assert.match(String(line['reconcileID']), /^[0-9a-f-]{36}$/);
    }
    h.mgr.stop();
    await h.running;
  });

  test('two controllers that watch one kind share one informer, and both reconcile', async () => {
    const ns = await env.newNamespace('rt-shared');
    const registry = new Registry();
    const mgr = new Manager({
      client: KubeClient.fromKubeConfig(env.kubeConfig, { registry }),
      registry,
      logger: createLogger({ level: 'silent' }),
      metricsBindAddress: '0',
      healthBindAddress: '0',
      namespace: ns,
    });
    managers.push(mgr);
    const seen = { first: new Set<string>(), second: new Set<string>() };
    mgr
      .controller('first')
      .for(Kinds.ConfigMap)
      .complete({ reconcile: (req) => Promise.resolve(void seen.first.add(req.name)) });
    mgr
      .controller('second')
      .for(Kinds.Secret)
      .watches(Kinds.ConfigMap, (cm) => [
        { namespace: cm.metadata!.namespace!, name: `from-${cm.metadata!.name}` },
      ])
      .complete({ reconcile: (req) => Promise.resolve(void seen.second.add(req.name)) });
    const running = mgr.start();
    await client.resource(Kinds.ConfigMap).create(cm(ns, 'shared'));
    await eventually(
      'both controllers reconciled',
      () => seen.first.has('shared') && seen.second.has('from-shared'),
    );
    const informers = mgr.informers.status().map((s) => s.name);
    assert.equal(
      informers.filter((n) => n.includes('ConfigMap')).length,
      1,
      `one ConfigMap watch: ${informers.join(', ')}`,
    );
    mgr.stop();
    await running;
  });

  test('a reconcile that outlives its timeout has its signal aborted, and is retried', async () => {
    const ns = await env.newNamespace('rt-timeout');
    const aborted: string[] = [];
    let calls = 0;
    const registry = new Registry();
    const mgr = new Manager({
      client: KubeClient.fromKubeConfig(env.kubeConfig, { registry }),
      registry,
      logger: createLogger({ level: 'silent' }),
      metricsBindAddress: '0',
      healthBindAddress: '0',
      namespace: ns,
    });
    managers.push(mgr);
    mgr
      .controller('slowpoke')
      .for(Kinds.ConfigMap)
      .withOptions({ reconcileTimeoutMs: 200 })
      .complete({
        reconcile: (req, ctx) => {
          if (req.name !== 'stuck') return Promise.resolve();
          calls++;
          // Honours the signal, as the contract asks: rejects once it aborts.
          return new Promise((_, reject) =>
            ctx.signal.addEventListener('abort', () => {
              aborted.push(String((ctx.signal.reason as Error).name));
              reject(new Error('aborted'));
            }),
          );
        },
      });
    const running = mgr.start();
    await client.resource(Kinds.ConfigMap).create(cm(ns, 'stuck'));
    await eventually('aborted twice (retried)', () => aborted.length >= 2 && calls >= 2);
    assert.deepEqual(aborted.slice(0, 2), ['TimeoutError', 'TimeoutError']);
    mgr.stop();
    await running;
  });

  test('a throwing reconciler that is a programming error counts as a panic and never crashes the process', async () => {
    const ns = await env.newNamespace('rt-panic');
    let calls = 0;
    const h = await harness(ns, (req) => {
      if (req.name !== 'boom') return Promise.resolve();
      calls++;
      const o = undefined as unknown as { x: number };
      return Promise.resolve({ requeueAfter: o.x });
    });
    await eventually('synced', async () => (await h.get('/readyz')).status === 200);
    await client.resource(Kinds.ConfigMap).create(cm(ns, 'boom'));
    await eventually(
      'panics counted',
      async () =>
        sampleValue(await h.metrics(), 'controller_runtime_reconcile_panics_total', {
          controller: 'test-configmaps',
        }) >= 2,
    );
    assert.ok(calls >= 2);
    h.mgr.stop();
    await h.running;
  });

  test('a manager stopped while its caches sync resolves: a graceful stop, not a failure', async () => {
    const namespace = await env.newNamespace('stop-in-sync');
    const logs = new LogCapture();
    const mgr = new Manager({
      client: KubeClient.fromKubeConfig(env.kubeConfig, { registry: new Registry() }),
      registry: new Registry(),
      logger: createLogger({ level: 'debug', destination: logs }),
      metricsBindAddress: '127.0.0.1:0',
      healthBindAddress: '127.0.0.1:0',
      namespace,
    });
    mgr
      .controller('stop-in-sync')
      .for(Kinds.ConfigMap)
      .complete({ reconcile: async () => {} });
    managers.push(mgr);
    const running = mgr.start();
    // In the same tick: start() has not even opened its listeners, let alone synced.
    mgr.stop();
    await running;
    await assert.rejects(fetch(`http://127.0.0.1:${mgr.metricsServer.port}/metrics`), 'its servers closed');
    assert.equal(
      logs.lines.some((l) => l['msg'] === 'caches synced'),
      false,
      'it stopped before the caches synced',
    );
  });
});
