import { trace, type Tracer } from '@opentelemetry/api';

/** Whether the standard OTEL_* variables ask for a trace exporter. */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  const exporter = env['OTEL_TRACES_EXPORTER'];
  if (exporter !== undefined) return exporter !== 'none' && exporter !== '';
  return Boolean(env['OTEL_EXPORTER_OTLP_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
}

/**
 * Starts the OpenTelemetry Node SDK when the OTEL_* variables configure an
 * exporter; otherwise does nothing, so spans stay the API's no-ops and cost
 * nothing. The SDK is imported lazily for the same reason.
 * Returns a shutdown function that flushes pending spans.
 */
export async function setupTracing(
  serviceName: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<() => Promise<void>> {
  if (!tracingConfigured(env)) return async () => {};
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  env['OTEL_SERVICE_NAME'] ??= serviceName;
  const sdk = new NodeSDK();
  sdk.start();
  return () => sdk.shutdown();
}

export function runtimeTracer(): Tracer {
  return trace.getTracer('@regulon/runtime');
}
