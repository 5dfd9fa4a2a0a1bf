// One run of the agent: the engine as its child, the primary Lease kept in
// step with the engine's role, and the order of a stop (engine first, Lease
// after) that keeps two writable instances from ever overlapping.
import { execFile } from 'node:child_process';
import { constants } from 'node:os';
import type { V1Pod } from '@kubernetes/client-node';
import { isNotFound, isUnauthorized, Kinds, type KubeClient } from '@regulon/client';
import { LeaderElector } from '@regulon/runtime';
import { realClock, sleep, type Logger } from '@regulon/util';
import type { AgentConfig } from './config.ts';
import { CustomQueries, shellQueryRunner } from './metrics/custom-queries.ts';
import { METRICS_ENGINES } from './metrics/engines.ts';
import { serveMetrics, type MetricsServer } from './metrics/server.ts';
import { ENGINE_STARTING_MARKER, FENCED_POD_ANNOTATION, METRICS_QUERY_ENV } from './pod.ts';
import { PrimaryGuard, QUESTION_TIMEOUT_MS, type Quorum } from './primary-guard.ts';
import { RequestedFence } from './requested-fence.ts';
import { EngineProcess, type EngineExit } from './supervisor.ts';

/** The agent's exit code after it fenced its engine: the kubelet restarts the container. */
export const FENCED_EXIT_CODE = 75;

/** A shell command's output, or undefined when it failed or took too long. */
function ask(
  command: string,
  signal: AbortSignal,
  env?: Record<string, string>,
): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(
      '/bin/sh',
      ['-c', command],
      {
        signal,
        timeout: QUESTION_TIMEOUT_MS,
        killSignal: 'SIGKILL',
        ...(env ? { env: { ...process.env, ...env } } : {}),
      },
      (err, stdout) => resolve(err ? undefined : String(stdout)),
    );
  });
}

/** `primary` is true, `replica` false, anything else (or no answer) undefined. */
export function parseRole(text: string | undefined): boolean | undefined {
  const answer = text?.trim();
  return answer === 'primary' ? true : answer === 'replica' ? false : undefined;
}

/** "IN_TOUCH MEMBERS" as two whole numbers with 1 <= IN_TOUCH <= MEMBERS; anything else is no answer. */
export function parseQuorum(text: string | undefined): Quorum | undefined {
  const m = /^\s*(\d+)\s+(\d+)\s*$/.exec(text ?? '');
  if (!m) return undefined;
  const inTouch = Number(m[1]);
  const members = Number(m[2]);
  return members >= 1 && inTouch >= 1 && inTouch <= members ? { inTouch, members } : undefined;
}

export interface AgentRun {
  /** Resolves with the agent's exit code: the engine's own, or FENCED_EXIT_CODE. */
  done: Promise<number>;
  /** A graceful stop (the kubelet's SIGTERM): the engine is stopped, then the Lease released. */
  stop(): void;
  /** The engine running now (a new one after a requested fence is lifted). */
  readonly engine: EngineProcess;
  /** Undefined for an engine without a primary (no --lease): the agent supervises it and publishes its metrics. */
  guard: PrimaryGuard | undefined;
}

/** `client` is needed only with a Lease (config.lease); an agent for metrics alone makes no API call. */
export function runAgent(config: AgentConfig, client: KubeClient | undefined, log: Logger): AgentRun {
  let engine = new EngineProcess(config.engine);
  let stopping = false;
  const guard = config.lease ? guardPrimary(config, () => engine, client, log) : undefined;
  if (!guard) log.info({ identity: config.identity, pid: engine.pid }, 'engine started; no primary Lease');
  const guarding = guard?.run();
  const requested = new RequestedFence({ log, livenessMarker: ENGINE_STARTING_MARKER });
  const watchingPod =
    guard && client && config.podUid
      ? watchOwnPod(config, config.podUid, client, guard, log, (fenced) => {
          if (!stopping) requested.set(fenced, engine);
        })
      : undefined;
  const metrics = config.metrics && publishMetrics(config.metrics, guard, log);

  const done = (async (): Promise<number> => {
    let exit: EngineExit;
    for (;;) {
      exit = await engine.exited;
      // Stopped on a person's order (the fence the manager wrote on the Pod): the container stays,
      // and the engine starts again once the fence is lifted. A Lease held meanwhile (a fenced
      // primary) is kept: nothing else is promoted while the primary is fenced.
      if (stopping || guard?.fencedBecause !== undefined || !requested.stopped(engine)) break;
      engine.killRemaining();
      log.warn({ exit }, 'engine stopped: this instance is fenced until its fence is lifted');
      if (!(await requested.untilUnfenced()) || stopping || guard?.fencedBecause !== undefined) break;
      engine = new EngineProcess(config.engine);
      log.info({ identity: config.identity, pid: engine.pid }, 'fence lifted: engine started again');
    }
    // Whatever the engine left running (a backend that outlived its
    // postmaster) goes too: only then is nothing left that accepts writes,
    // and only then may the Lease go.
    engine.killRemaining();
    await guard?.stop();
    await guarding;
    watchingPod?.abort();
    await metrics?.close();
    const reason = guard?.fencedBecause;
    if (reason !== undefined) {
      log.error({ reason, exit }, 'engine fenced; exiting so that the container restarts');
      return FENCED_EXIT_CODE;
    }
    log.info({ exit }, 'engine exited');
    return exit.code ?? 128 + signalNumber(exit.signal);
  })();

  return {
    done,
    stop: () => {
      stopping = true;
      requested.close();
      engine.signal('SIGTERM');
    },
    get engine() {
      return engine;
    },
    guard,
  };
}

/** The primary Lease kept in step with the engine's role (primary-guard.ts). */
function guardPrimary(
  config: AgentConfig,
  engine: () => EngineProcess,
  client: KubeClient | undefined,
  log: Logger,
): PrimaryGuard {
  const { quorumCommand, roleCommand } = config;
  if (!client || !roleCommand)
    throw new Error('instance agent: a primary Lease needs a client and a role command');
  log.info(
    { identity: config.identity, lease: `${config.namespace}/${config.lease}`, pid: engine().pid },
    'engine started',
  );
  return new PrimaryGuard({
    identity: config.identity,
    clock: realClock,
    log,
    roleIntervalMs: config.roleIntervalMs,
    acquireGraceMs: config.acquireGraceMs,
    acceptsWrites: async (signal) => parseRole(await ask(roleCommand, signal)),
    quorum: quorumCommand ? async (signal) => parseQuorum(await ask(quorumCommand, signal)) : undefined,
    fence: () => engine().fence(),
    campaign: (callbacks) =>
      new LeaderElector({
        client,
        namespace: config.namespace,
        name: config.lease!,
        identity: config.identity,
        leaseDurationMs: config.leaseDurationMs,
        renewDeadlineMs: config.renewDeadlineMs,
        retryPeriodMs: config.retryPeriodMs,
        logger: log,
        onStartedLeading: () => callbacks.onStartedLeading(),
        onStoppedLeading: () => callbacks.onStoppedLeading(),
        onNewLeader: (identity) => callbacks.onNewLeader(identity),
      }),
  });
}

/**
 * Reads this instance's Pod by name every half renew deadline (a read from etcd, not a cache that
 * could lag its creation), and fences the engine once the object is
 * gone (404) or is another Pod (another uid): the containers of a deleted Pod are stopped before
 * its object goes, so a running agent sees that only when it outlived its Pod, a forced delete on
 * a node whose kubelet did not stop it. Its name, and the manager's trust in it, belong to the
 * Pod made in its place. A 401 says the same: the agent's token is bound to its Pod, and the API
 * server refuses such a token once that Pod is gone. It answers 404 only for as long as it still
 * holds the token's last check (10 s), so a read a little later sees 401 instead, and a deleted
 * Pod's agent can renew nothing anyway. Any other answer (an outage, a 403) proves nothing and
 * changes nothing. Each read also says whether a person fenced this instance
 * (FENCED_POD_ANNOTATION), passed to `fenced`.
 */
function watchOwnPod(
  config: AgentConfig,
  uid: string,
  client: KubeClient,
  guard: PrimaryGuard,
  log: Logger,
  fenced: (on: boolean) => void,
): AbortController {
  const stop = new AbortController();
  const pods = client.resource<V1Pod>(Kinds.Pod);
  void (async () => {
    while (!stop.signal.aborted) {
      try {
        const pod = await pods.get(config.identity, { namespace: config.namespace, signal: stop.signal });
        if (pod.metadata?.uid && pod.metadata.uid !== uid)
          guard.fenceFor(
            `its Pod ${config.identity} is another one now (uid ${pod.metadata.uid}, not ${uid}): this container outlived its Pod`,
          );
        else fenced(pod.metadata?.annotations?.[FENCED_POD_ANNOTATION] === 'true');
      } catch (err) {
        if (isNotFound(err))
          guard.fenceFor(`its Pod ${config.identity} (uid ${uid}) is gone: this container outlived its Pod`);
        else if (isUnauthorized(err))
          guard.fenceFor(
            `the API server refuses the token bound to its Pod ${config.identity} (uid ${uid}): the Pod is gone, and this container outlived it`,
          );
        else if (!stop.signal.aborted) log.debug({ err }, 'reading its own Pod failed; trying again');
      }
      // Liveness only: while its agent renews the Lease, nothing else is promoted. Once fenced, it
      // renews no more and the Lease expires, so a slower read costs failover time, not safety.
      await sleep(realClock, config.renewDeadlineMs / 2, stop.signal).catch(() => undefined);
    }
  })();
  return stop;
}

/** The engine's metrics on their port, read by its metrics command, beside whether this agent holds the Lease (when there is one). */
function publishMetrics(
  m: NonNullable<AgentConfig['metrics']>,
  guard: PrimaryGuard | undefined,
  log: Logger,
): MetricsServer {
  const engine = METRICS_ENGINES[m.engine]!;
  const env = engine.query ? { [METRICS_QUERY_ENV]: engine.query } : undefined;
  // The user's queries run beside the engine's own read, each its own client process, within a
  // budget that ends before the scrape's (custom-queries.ts).
  const custom = m.queriesFiles?.length
    ? new CustomQueries({
        engine: m.engine,
        prefix: engine.prefix,
        files: m.queriesFiles,
        run: shellQueryRunner(m.command, METRICS_QUERY_ENV),
        log,
      })
    : undefined;
  return serveMetrics({
    port: m.port,
    engine: engine.prefix,
    log,
    read: async (signal) => {
      const [reading, answers] = await Promise.all([
        ask(m.command, signal, env).then((out) => engine.reading(out ?? '')),
        custom?.read(signal),
      ]);
      return custom && answers ? custom.publish(reading, answers) : reading;
    },
    own: () =>
      guard
        ? [
            {
              name: 'regulon_instance_primary_lease_held',
              help: "1 while this instance's agent holds the primary Lease",
              type: 'gauge',
              value: guard.holdsLease ? 1 : 0,
            },
          ]
        : [],
  });
}

function signalNumber(signal: NodeJS.Signals | null): number {
  return (signal && constants.signals[signal]) || 1;
}
