// The agent's metrics endpoint: GET /metrics on a port of the engine's Pod,
// what the engine says at that moment, each series labelled with the
// instance's role, beside `<engine>_up` and the agent's own figures. A scrape
// reads the engine once, however many scrapers ask at the same moment, and
// gives up after SCRAPE_TIMEOUT_MS: a slow or hung engine makes a scrape say
// `<engine>_up 0`, never a pile of questions waiting on it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@regulon/util';
import { renderExposition, type EngineReading, type Sample } from './exposition.ts';

/** How long one scrape waits for the engine's answer. */
export const SCRAPE_TIMEOUT_MS = 2_000;

export interface MetricsServerOptions {
  /** The port to listen on (0: any free one, for tests). */
  port: number;
  /** The engine's series prefix: `redis` publishes `redis_up`. */
  engine: string;
  /** Reads the engine once: undefined when it gave no answer. */
  read: (signal: AbortSignal) => Promise<EngineReading | undefined>;
  /** The agent's own figures, read at each scrape. */
  own: () => Sample[];
  log: Logger;
  timeoutMs?: number;
}

export interface MetricsServer {
  /** The port it listens on, once it does. */
  listening: Promise<number>;
  close(): Promise<void>;
}

/**
 * `read` shared by whoever asks while it runs, and given up on (its signal aborted, undefined
 * returned) after `timeoutMs`: one question to the engine at a time, however many scrapers.
 */
export function sharedRead(
  read: MetricsServerOptions['read'],
  timeoutMs: number,
  log: Logger,
): () => Promise<EngineReading | undefined> {
  let inFlight: Promise<EngineReading | undefined> | undefined;
  return () =>
    (inFlight ??= (async () => {
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        return await Promise.race([
          read(signal),
          new Promise<undefined>((resolve) => signal.addEventListener('abort', () => resolve(undefined))),
        ]);
      } catch (err) {
        log.debug({ err }, 'reading the engine for a scrape failed');
        return undefined;
      } finally {
        inFlight = undefined;
      }
    })());
}

export function serveMetrics(o: MetricsServerOptions): MetricsServer {
  const timeoutMs = o.timeoutMs ?? SCRAPE_TIMEOUT_MS;
  const readOnce = sharedRead(o.read, timeoutMs, o.log);

  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics\n');
      return;
    }
    const started = performance.now();
    void readOnce().then((reading) => {
      const samples: Sample[] = [
        ...(reading?.samples ?? []),
        {
          name: `${o.engine}_up`,
          help: `1 when the last read of ${o.engine} answered within ${timeoutMs} ms`,
          type: 'gauge',
          value: reading ? 1 : 0,
        },
      ];
      const body =
        renderExposition(samples, reading?.role ? { role: reading.role } : {}) +
        renderExposition([
          ...o.own(),
          {
            name: 'regulon_instance_scrape_duration_seconds',
            help: 'How long this scrape took to read the engine',
            type: 'gauge',
            value: (performance.now() - started) / 1000,
          },
        ]);
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(body);
    });
  });
  const listening = new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, () => resolve((server.address() as AddressInfo).port));
  });
  listening.catch((err: unknown) =>
    o.log.error({ err, port: o.port }, 'the metrics endpoint could not listen'),
  );
  return {
    listening,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
