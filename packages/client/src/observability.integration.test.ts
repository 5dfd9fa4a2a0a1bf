// Metrics and tracing of real requests. Tracing registers a global tracer
// provider, which is why this lives in its own file (its own process).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { Registry } from 'prom-client';
import { start, type TestEnv } from '@regulon/testenv';
import { KubeClient, Kinds, NotFoundError } from './index.ts';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
trace.setGlobalTracerProvider(provider);

describe('observability against a real API server', () => {
  let env: TestEnv;
  let host: string;

  before(async () => {
    env = await start();
    const url = new URL(env.server);
    host = `${url.hostname}:${url.port || '443'}`;
  });
  after(async () => {
    await provider.shutdown();
    await env?.stop();
  });
  beforeEach(() => exporter.reset());

  it('counts requests by code, method and host, and times them by verb and host', async () => {
    const ns = await env.newNamespace('metrics');
    const registry = new Registry();
    const client = KubeClient.fromKubeConfig(env.kubeConfig, { registry });
    const second = KubeClient.fromKubeConfig(env.kubeConfig, { registry });
    try {
      const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
      await cms.create({ metadata: { name: 'm', namespace: ns } }); // POST 201
      await cms.get('m', { namespace: ns }); // GET 200
      await second.resource(Kinds.ConfigMap).list({ namespace: ns }); // GET 200
      await assert.rejects(cms.get('missing', { namespace: ns }), NotFoundError); // GET 404
      await cms.patch('m', { data: { a: 'b' } }, { type: 'merge', namespace: ns }); // PATCH 200
      await cms.delete('m', { namespace: ns }); // DELETE 200
      for await (const _ of cms.watch({ namespace: ns, timeoutSeconds: 1 })) {
        // GET 200, counted on its initial response
      }

      const requests = await registry.getSingleMetric('rest_client_requests_total')!.get();
      const counts = Object.fromEntries(
        requests.values.map((v) => [`${v.labels.code} ${v.labels.method} ${v.labels.host}`, v.value]),
      );
      assert.deepEqual(counts, {
        [`201 POST ${host}`]: 1,
        [`200 GET ${host}`]: 3,
        [`404 GET ${host}`]: 1,
        [`200 PATCH ${host}`]: 1,
        [`200 DELETE ${host}`]: 1,
      });

      const duration = await registry.getSingleMetric('rest_client_request_duration_seconds')!.get();
      const observations = Object.fromEntries(
        duration.values
          .filter(
            (v) => (v as { metricName?: string }).metricName === 'rest_client_request_duration_seconds_count',
          )
          .map((v) => [`${v.labels.verb} ${v.labels.host}`, v.value]),
      );
      assert.deepEqual(observations, {
        [`POST ${host}`]: 1,
        [`GET ${host}`]: 4,
        [`PATCH ${host}`]: 1,
        [`DELETE ${host}`]: 1,
      });
    } finally {
      client.close();
      second.close();
    }
  });

  it('records one CLIENT span per request', async () => {
    const ns = await env.newNamespace('tracing');
    exporter.reset();
    const client = KubeClient.fromKubeConfig(env.kubeConfig);
    try {
      const cms = client.resource<V1ConfigMap>(Kinds.ConfigMap);
      await cms.create({ metadata: { name: 't', namespace: ns }, data: { secret: 'hunter2' } });
      await cms.get('t', { namespace: ns });
      await assert.rejects(cms.get('missing', { namespace: ns }), NotFoundError);

      const spans = exporter.getFinishedSpans();
      assert.equal(spans.length, 3);
      const [create, get, missing] = spans;
      for (const span of spans) {
        assert.equal(span.kind, SpanKind.CLIENT);
        assert.equal(span.instrumentationScope.name, '@regulon/client');
        const text = JSON.stringify({ attributes: span.attributes, events: span.events });
        assert.ok(!/hunter2|authorization|bearer/i.test(text), 'no secrets in spans');
      }
      assert.equal(create!.name, 'POST');
      assert.equal(create!.attributes['http.request.method'], 'POST');
      assert.equal(create!.attributes['url.path'], `/api/v1/namespaces/${ns}/configmaps`);
      assert.equal(create!.attributes['http.response.status_code'], 201);
      assert.equal(create!.status.code, SpanStatusCode.UNSET);
      assert.equal(get!.attributes['url.path'], `/api/v1/namespaces/${ns}/configmaps/t`);
      assert.equal(get!.attributes['http.response.status_code'], 200);
      assert.equal(missing!.attributes['http.response.status_code'], 404);
      assert.equal(missing!.status.code, SpanStatusCode.ERROR);
      assert.match(missing!.status.message ?? '', /not found/);
    } finally {
      client.close();
    }
  });

  it('records retries as events on the request span', async () => {
    // Nothing listens on port 1: every attempt is refused, so it is retried.
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
      users: [{ name: 'u', token: 'not-a-real-token' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const client = KubeClient.fromKubeConfig(kc, { maxRetries: 2 });
    try {
      await assert.rejects(client.resource(Kinds.Namespace).get('default'), { code: 'ECONNREFUSED' });
      const spans = exporter.getFinishedSpans();
      assert.equal(spans.length, 1);
      const [span] = spans;
      assert.deepEqual(
        span!.events
          .filter((e) => e.name === 'retry')
          .map((e) => [e.name, e.attributes?.['http.request.resend_count'], e.attributes?.['retry.reason']]),
        [
          ['retry', 1, 'ECONNREFUSED'],
          ['retry', 2, 'ECONNREFUSED'],
        ],
      );
      assert.equal(span!.status.code, SpanStatusCode.ERROR);
      assert.equal(span!.attributes['error.type'], 'ECONNREFUSED');
      assert.ok(!JSON.stringify(span!.attributes).includes('not-a-real-token'));
    } finally {
      client.close();
    }
  });
});
