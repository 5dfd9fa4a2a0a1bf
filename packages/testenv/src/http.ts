import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';

/** Credentials for talking to the API server as cluster-admin. */
export interface AdminCredentials {
  server: string;
  ca: string;
  cert: string;
  key: string;
}

export interface HttpResult {
  status: number;
  body: string;
}

/**
 * A minimal HTTPS call for the control plane's own bootstrapping (readiness,
 * nodes, namespaces, CRDs). testenv deliberately doesn't use @regulon/client:
 * that package is tested with testenv, so it can't also be its foundation.
 */
export function adminRequest(
  creds: AdminCredentials,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<HttpResult> {
  const url = new URL(path, creds.server);
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method,
        ca: readFileSync(creds.ca),
        cert: readFileSync(creds.cert),
        key: readFileSync(creds.key),
        headers: payload === undefined ? {} : { 'content-type': contentType },
        timeout: 10_000,
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (data += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** Plain-HTTP POST with a JSON body, for etcd's gRPC gateway on loopback. */
export function postJson(url: string, body: unknown): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json' }, timeout: 10_000 },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (data += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`POST ${url}: timed out`)));
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
