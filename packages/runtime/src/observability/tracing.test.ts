import assert from 'node:assert/strict';
import { test } from 'node:test';
import { trace } from '@opentelemetry/api';
import { setupTracing, tracingConfigured } from './tracing.ts';

test('tracing is configured only by the standard OTEL_* variables', () => {
  assert.equal(tracingConfigured({}), false);
  assert.equal(tracingConfigured({ OTEL_TRACES_EXPORTER: 'none' }), false);
  assert.equal(tracingConfigured({ OTEL_TRACES_EXPORTER: 'otlp' }), true);
  assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }), true);
  assert.equal(
    tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }),
    true,
  );
  assert.equal(
    tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_TRACES_EXPORTER: 'none' }),
    false,
  );
});

test('with nothing configured no SDK starts and spans are the no-op ones', async () => {
  const shutdown = await setupTracing('regulon-test', {});
  const span = trace.getTracer('t').startSpan('s');
  assert.equal(span.isRecording(), false);
  assert.equal(span.spanContext().traceId, '00000000000000000000000000000000');
  span.end();
  await shutdown();
});
