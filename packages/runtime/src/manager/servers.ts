import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

// Not `import { createServer } from 'node:http'`: Node's ES module wrapper of
// node:http reads every export, and its WebSocket, CloseEvent and MessageEvent
// getters load Node's copy of undici, which the manager never uses (2.4 MiB of
// heap, 7.7 MiB RSS; tools/bench/results/memory-floor.md).
const { createServer } = process.getBuiltinModule('node:http');

export type Check = () => { ok: boolean; detail?: string };

/** Parses `:8080`, `8080`, `127.0.0.1:8080` or `0` (disabled) into a listen address. */
export function parseBindAddress(addr: string): { host: string | undefined; port: number } | undefined {
  if (addr === '0' || addr === '') return undefined;
  const i = addr.lastIndexOf(':');
  const host = i > 0 ? addr.slice(0, i) : undefined;
  const port = Number(i >= 0 ? addr.slice(i + 1) : addr);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`invalid bind address ${JSON.stringify(addr)}`);
  return { host, port };
}

/** Which of the manager's servers an address is for. */
export type ServerRole = 'metrics' | 'health';

// What each listen failure says about the address, for someone choosing another one.
const LISTEN_FAILURES: Record<string, string> = {
  EADDRINUSE: 'is in use',
  EACCES: 'needs privileges this process lacks (ports below 1024 usually do)',
  EADDRNOTAVAIL: 'is not an address of this machine',
  ENOTFOUND: 'names a host that does not resolve',
  EAI_AGAIN: 'names a host that does not resolve',
};

/**
 * A metrics or health server could not listen on its address. Its message is
 * one line for the person running the binary, not a stack (`metrics address
 * 127.0.0.1:8080 is in use`, `health probe address :8081 is in use`): the
 * binary adds the flag that changes the address and exits 2, as for any other
 * bad configuration.
 */
export class ListenError extends Error {
  override readonly name = 'ListenError';
  readonly role: ServerRole;
  readonly address: string;
  /** The system error code (`EADDRINUSE`), if there was one. */
  readonly code: string | undefined;

  constructor(role: ServerRole, address: string, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    const why =
      (code && LISTEN_FAILURES[code]) ??
      (code ? `cannot be listened on (${code})` : 'is not valid (host:port, :port, port, or 0 to disable)');
    super(`${role === 'health' ? 'health probe' : role} address ${address} ${why}`, { cause });
    this.role = role;
    this.address = address;
    this.code = code;
  }
}

async function listen(server: Server, addr: string, role: ServerRole): Promise<number | undefined> {
  let bind: ReturnType<typeof parseBindAddress>;
  try {
    bind = parseBindAddress(addr);
  } catch (err) {
    throw new ListenError(role, addr, err);
  }
  if (!bind) return undefined;
  const { host, port } = bind;
  await new Promise<void>((resolve, reject) => {
    const fail = (err: Error) => reject(new ListenError(role, addr, err));
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** Serves the registry on /metrics in the Prometheus text format. */
export class MetricsServer {
  readonly #server: Server;
  port: number | undefined;

  constructor(registry: Registry) {
    this.#server = createServer((req, res) => {
      if (req.url?.split('?')[0] !== '/metrics') {
        res.writeHead(404).end('not found\n');
        return;
      }
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500).end(`${String(err)}\n`),
      );
    });
  }

  async listen(addr: string): Promise<number | undefined> {
    this.port = await listen(this.#server, addr, 'metrics');
    return this.port;
  }

  close(): Promise<void> {
    return closeServer(this.#server);
  }
}

/**
 * /healthz answers while the process can serve HTTP at all; /readyz answers
 * 200 only when every readiness check passes (caches synced, leader election
 * running, informers not failing). `?verbose` lists the checks.
 */
export class HealthServer {
  readonly #server: Server;
  readonly #ready = new Map<string, Check>();
  readonly #live = new Map<string, Check>();
  port: number | undefined;

  constructor() {
    this.#server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const checks =
        url.pathname === '/readyz'
          ? this.#ready
          : url.pathname === '/healthz' || url.pathname === '/livez'
            ? this.#live
            : undefined;
      if (!checks) {
        res.writeHead(404).end('not found\n');
        return;
      }
      const results = [...checks].map(([name, check]) => {
        try {
          return { name, ...check() };
        } catch (err) {
          return { name, ok: false, detail: String(err) };
        }
      });
      const ok = results.every((r) => r.ok);
      const lines = results.map(
        (r) => `[${r.ok ? '+' : '-'}]${r.name} ${r.ok ? 'ok' : `failed${r.detail ? `: ${r.detail}` : ''}`}`,
      );
      const body =
        url.searchParams.has('verbose') || !ok ? `${lines.join('\n')}\n${ok ? 'ok' : 'not ok'}\n` : 'ok\n';
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
    });
  }

  addReadyCheck(name: string, check: Check): void {
    this.#ready.set(name, check);
  }

  addHealthCheck(name: string, check: Check): void {
    this.#live.set(name, check);
  }

  async listen(addr: string): Promise<number | undefined> {
    this.port = await listen(this.#server, addr, 'health');
    return this.port;
  }

  close(): Promise<void> {
    return closeServer(this.#server);
  }
}

function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
