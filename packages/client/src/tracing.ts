import { SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';

// With no SDK registered the API hands out a no-op tracer, so all of this
// costs a few property reads per request.
const TRACER_NAME = '@regulon/client';

export function startRequestSpan(method: string, path: string, server: URL): Span {
  return trace.getTracer(TRACER_NAME).startSpan(method, {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': method,
      // The path only: query strings are left out, and no header is recorded.
      'url.path': path,
      'server.address': server.hostname,
      'server.port': Number(server.port || (server.protocol === 'https:' ? 443 : 80)),
    },
  });
}

export function recordRetry(span: Span, attributes: Attributes): void {
  span.addEvent('retry', attributes);
}

export function endSpanOk(span: Span, statusCode: number): void {
  span.setAttribute('http.response.status_code', statusCode);
  span.end();
}

export function endSpanError(span: Span, err: unknown, statusCode?: number): void {
  if (statusCode !== undefined && statusCode > 0) span.setAttribute('http.response.status_code', statusCode);
  const error = err instanceof Error ? err : new Error(String(err));
  span.setAttribute('error.type', statusCode ? String(statusCode) : errorType(error));
  span.recordException(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  span.end();
}

function errorType(err: Error): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : err.name;
}
