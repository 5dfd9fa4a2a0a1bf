/**
 * Runs a command in a container through the API server (`pods/exec`), the
 * way `kubectl exec` does: a WebSocket (the `ws` library, which
 * @kubernetes/client-node's Exec also uses) speaking Kubernetes' channel
 * protocol (v4.channel.k8s.io: one byte of stream number, then the bytes;
 * stream 3 carries the outcome as a Status). No stdin, no TTY: the commands
 * are short and their output is read whole. The kubeconfig's TLS material
 * and credentials are applied per call, so rotated tokens are picked up.
 */
import type { RequestOptions } from 'node:https';
import { loadKubeConfig, type KubeConfigSource } from '@regulon/client';

const PROTOCOL = 'v4.channel.k8s.io';
/** Output beyond this is dropped (the commands here print a few KiB; a runaway one must not fill memory). */
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

export interface ExecRequest {
  namespace: string;
  pod: string;
  container: string;
  command: readonly string[];
  /** Default 60 s: the command's whole run, connection included. */
  timeoutMs?: number;
  signal?: AbortSignal | undefined;
}

export interface ExecResult {
  /** 0 on success; the command's exit code otherwise (-1: it did not run, `error` says why). */
  exitCode: number;
  stdout: string;
  stderr: string;
  /** Why it failed when the Status says so (not the output: that may hold anything). */
  error?: string | undefined;
}

/** Something that runs commands in containers: PodExec, or a test's double of it. */
export interface Executor {
  exec(req: ExecRequest): Promise<ExecResult>;
}

export class ExecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExecError';
  }
}

export class PodExec implements Executor {
  #kc: KubeConfigSource | undefined;

  /** `kc` left out: the manager's own configuration, found as KubeClient.load finds it (in-cluster in a Pod). */
  constructor(kc?: KubeConfigSource) {
    this.#kc = kc;
  }

  async exec(req: ExecRequest): Promise<ExecResult> {
    this.#kc ??= loadKubeConfig();
    const cluster = this.#kc.getCurrentCluster();
    if (!cluster) throw new ExecError('kubeconfig has no current cluster');
    const opts: RequestOptions = { headers: {} };
    await this.#kc.applyToHTTPSOptions(opts);
    const query = new URLSearchParams({ container: req.container, stdout: 'true', stderr: 'true' });
    for (const c of req.command) query.append('command', c);
    const url = new URL(cluster.server);
    url.protocol = url.protocol === 'http:' ? 'ws:' : 'wss:';
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/api/v1/namespaces/${encodeURIComponent(req.namespace)}/pods/${encodeURIComponent(req.pod)}/exec`;
    url.search = query.toString();
    // Loaded on first use: a manager without backups never needs it.
    const { WebSocket } = await import('ws');
    const socket = new WebSocket(url, [PROTOCOL], {
      headers: opts.headers as Record<string, string>,
      ...(opts.ca ? { ca: opts.ca } : {}),
      ...(opts.cert ? { cert: opts.cert } : {}),
      ...(opts.key ? { key: opts.key } : {}),
      ...(opts.rejectUnauthorized !== undefined ? { rejectUnauthorized: opts.rejectUnauthorized } : {}),
      ...(opts.servername ? { servername: opts.servername } : {}),
      ...(opts.auth ? { auth: opts.auth } : {}),
      ...(opts.agent ? { agent: opts.agent } : {}),
    });
    const timeoutMs = req.timeoutMs ?? 60_000;
    return new Promise<ExecResult>((resolve, reject) => {
      const streams: Buffer[][] = [[], [], [], []];
      let size = 0;
      const done = () => {
        clearTimeout(timer);
        req.signal?.removeEventListener('abort', onAbort);
      };
      const fail = (err: Error) => {
        done();
        socket.terminate();
        reject(err);
      };
      const timer = setTimeout(
        () => fail(new ExecError(`exec in ${req.pod} took longer than ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onAbort = () => fail(new ExecError('exec aborted'));
      req.signal?.addEventListener('abort', onAbort, { once: true });
      // No upgrade: the API server refused (403 without pods/exec, 404 for a missing Pod, 400 for a missing container).
      socket.on('unexpected-response', (_request, res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          fail(new ExecError(refusal(res.statusCode ?? 0, Buffer.concat(chunks).toString()))),
        );
      });
      socket.on('error', (err) => fail(new ExecError(`exec in ${req.pod}: ${err.message}`)));
      socket.on('message', (data: Buffer) => {
        const channel = data[0];
        if (channel !== undefined && channel < streams.length && size < MAX_OUTPUT_BYTES) {
          streams[channel]!.push(data.subarray(1));
          size += data.length - 1;
        }
      });
      socket.on('close', () => {
        done();
        const text = (i: number) => Buffer.concat(streams[i]!).toString('utf8');
        resolve({ ...outcome(text(3)), stdout: text(1), stderr: text(2) });
      });
    });
  }
}

/** The exit code and error the Status on stream 3 reports (an empty stream: the exec ended without one). */
export function outcome(statusText: string): { exitCode: number; error?: string } {
  if (!statusText.trim()) return { exitCode: -1, error: 'the exec ended without a status' };
  let status: {
    status?: string;
    message?: string;
    reason?: string;
    details?: { causes?: Array<{ reason?: string; message?: string }> };
  };
  try {
    status = JSON.parse(statusText) as typeof status;
  } catch {
    return { exitCode: -1, error: 'the exec ended with an unreadable status' };
  }
  if (status.status === 'Success') return { exitCode: 0 };
  const code = status.details?.causes?.find((c) => c.reason === 'ExitCode')?.message;
  if (status.reason === 'NonZeroExitCode' && code !== undefined) return { exitCode: Number(code) };
  return { exitCode: -1, error: status.message ?? status.reason ?? 'exec failed' };
}

/** A refused upgrade's message: the Status the API server answered with, or its HTTP code. */
function refusal(statusCode: number, body: string): string {
  try {
    const s = JSON.parse(body) as { message?: string };
    if (s.message) return `exec refused (HTTP ${statusCode}): ${s.message}`;
  } catch {
    // Not a Status: the code alone.
  }
  return `exec refused (HTTP ${statusCode})`;
}
