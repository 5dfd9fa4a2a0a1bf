// The role sampler of the fault tests: from the test process (the host
// reaches Pod IPs directly), every instance of a replicated set is asked every
// 200 ms whether it accepts writes, all at once, so that a test can count the
// rounds in which two did. It asks the set's current Pods, and every other
// address on the host within the real nodes' Pod subnets: a container whose Pod
// object is gone (a zombie) may still serve. What "writable" means is the
// engine's: each app gives the sessions (see RoleSamplerOptions.open).
import type { V1Pod } from '@kubernetes/client-node';
import { hostAddressesIn, REAL_NODE_POD_SUBNETS, type HostAddress } from './faults.ts';
import { eventually } from './wait.ts';

/** Sampler cadence the fault tests use. */
export const SAMPLE_INTERVAL_MS = 200;

/** An instance Pod as the sampler asks it. */
export interface SampledPod {
  name: string;
  /** Undefined until the Pod has an address (or after it lost it). */
  ip: string | undefined;
  phase: string | undefined;
  deleting: boolean;
}

/**
 * The instance Pods of set `name` among `pods`: `<name>-<ordinal>` (a StatefulSet's), which
 * leaves out other Pods that carry the set's labels (backup Jobs' Pods), in ordinal order.
 */
export function instancePodsOf(pods: readonly V1Pod[], name: string): SampledPod[] {
  const instance = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-\\d+$`);
  return pods
    .filter((p) => instance.test(p.metadata?.name ?? ''))
    .map((p) => ({
      name: p.metadata!.name!,
      ip: p.status?.podIP || undefined,
      phase: p.status?.phase,
      deleting: p.metadata?.deletionTimestamp !== undefined,
    }))
    .sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }));
}

export type InstanceRole = 'writable' | 'read-only' | 'unreachable';

export interface InstanceSample {
  name: string;
  ip: string | undefined;
  role: InstanceRole;
  /**
   * Why it was unreachable: no IP yet, still connecting, timed out, or the
   * error's message; for a reachable one, anything odd about its role (a
   * MariaDB instance writable while a replication thread runs).
   */
  reason?: string;
}

export interface SampleRound {
  /** Epoch ms when the round started. */
  atMs: number;
  /** How long the round took; never more than the interval. */
  tookMs: number;
  instances: InstanceSample[];
  /** Names of the writable instances this round. */
  writable: string[];
}

export interface SamplerSummary {
  rounds: number;
  firstAtMs: number | undefined;
  lastAtMs: number | undefined;
  maxWritableAtOnce: number;
  /** Every round that saw more than one writable instance. */
  splitBrainRounds: Array<{ atMs: number; writable: string[] }>;
  /**
   * The split-brain rounds as stretches of consecutive rounds with the same writable instances,
   * each named with its Pod IP (a recreated Pod keeps its name but not its address).
   */
  splitBrainSpans: Array<{ fromMs: number; toMs: number; rounds: number; writable: string[] }>;
  /** Writable instance names in the order they took the role, consecutive repeats collapsed: ['db-0', 'db-1']. */
  writableSequence: string[];
  /** Stretches of consecutive rounds with no writable instance (from the first such round to the next with one). */
  noWritableSpans: Array<{ fromMs: number; toMs: number | undefined }>;
  /** The slowest round; the cadence held if this is under the interval. */
  maxRoundMs: number;
}

export interface RoleSamplerOptions {
  /** The set's current instance Pods (instancePodsOf); called on a loop of its own. */
  listInstances: (signal: AbortSignal) => Promise<SampledPod[]>;
  /** Opens a probe session to one instance: the engine's part. */
  open: OpenSession;
  /**
   * What an instance at an address beyond the current Pods answers when it is not one of this
   * set's (wrong credentials, no server there): it is left out and not asked again.
   */
  notThisSet: RegExp;
  /** Default 200 ms. */
  intervalMs?: number;
  /**
   * Where else to look for instances: every address a network namespace on this host holds within
   * these subnets is asked too, once a second, beside the current Pods (default the real nodes'
   * Pod subnets; [] for none). A container whose Pod object is gone, or that has a new one, may
   * still serve: it counts if it answers to this set's credentials.
   */
  hostSubnets?: readonly string[];
}

export interface RoleSampler {
  /** Every round so far. */
  rounds(): readonly SampleRound[];
  /** Waits until a round satisfies `check` (e.g. exactly one writable); returns that round. */
  waitForRound(what: string, check: (round: SampleRound) => boolean, timeoutMs: number): Promise<SampleRound>;
  /** Stops sampling, closes every connection, and summarises. Idempotent. */
  stop(): Promise<SamplerSummary>;
  /** `stop()`: a sampler left running keeps the test process alive. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * What one probe learns: the instance's role, and anything odd about it ('unreachable' when the
 * address answered as another Pod).
 */
export type Answer = { role: InstanceRole; reason?: string };

/** An open probe connection to one instance. */
export interface RoleSession {
  /** Asks the instance whether it is writable now. */
  ask(): Promise<Answer>;
  /** Drops the connection at once (the server may be gone: nothing waits for it). */
  destroy(): void;
}
/**
 * Opens a session to `ip`, the address of the Pod `name`; `broken` is called when the connection
 * fails while idle.
 */
export type OpenSession = (ip: string, name: string, broken: () => void) => Promise<RoleSession>;

/** One instance's probe connection, kept across rounds and replaced after any error or timeout. */
class InstanceProbe {
  #session: RoleSession | undefined;
  #connecting: Promise<RoleSession> | undefined;
  #disposed = false;
  readonly ip: string;
  readonly name: string;
  readonly #open: OpenSession;

  constructor(ip: string, name: string, open: OpenSession) {
    this.ip = ip;
    this.name = name;
    this.#open = open;
  }

  /** Asks whether the instance is writable, answering by `deadlineMs` whatever the network does. */
  async sample(deadlineMs: number): Promise<{ role: InstanceRole; reason?: string }> {
    if (this.#connecting) return { role: 'unreachable', reason: 'connecting' };
    try {
      const session = this.#session ?? (await this.#within(this.#connect(), deadlineMs, 'connect'));
      return await this.#within(session.ask(), deadlineMs, 'query');
    } catch (err) {
      if (!(err instanceof Late) || err.step === 'query') this.close();
      return { role: 'unreachable', reason: (err as Error).message };
    }
  }

  close(): void {
    const session = this.#session;
    this.#session = undefined;
    session?.destroy();
  }

  /**
   * Closes for good: a connection still being opened is dropped once it opens (to an instance
   * on a lost node it opens only when the node is back), or it would keep the process alive.
   */
  dispose(): void {
    this.#disposed = true;
    this.close();
  }

  #connect(): Promise<RoleSession> {
    let session: RoleSession | undefined;
    const connecting = this.#open(this.ip, this.name, () => {
      if (session && this.#session === session) this.close();
    });
    this.#connecting = connecting.then(
      (s) => {
        this.#connecting = undefined;
        this.#session = session = s;
        if (this.#disposed) this.close();
        return s;
      },
      (err: unknown) => {
        this.#connecting = undefined;
        throw err;
      },
    );
    return this.#connecting;
  }

  async #within<T>(work: Promise<T>, deadlineMs: number, step: 'connect' | 'query'): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Late(step)), Math.max(0, deadlineMs - Date.now()));
    });
    try {
      return await Promise.race([work, late]);
    } finally {
      clearTimeout(timer);
      // The loser must not surface as an unhandled rejection.
      work.catch(() => {});
    }
  }
}

class Late extends Error {
  readonly step: string;
  constructor(step: string) {
    super(`${step} timed out`);
    this.step = step;
  }
}

/** How often the sampler looks for instances beyond the current Pods (RoleSamplerOptions.hostSubnets). */
const HOST_SCAN_INTERVAL_MS = 1_000;
/**
 * Samples every instance's role every `intervalMs` from the test process (the
 * host reaches Pod IPs directly). Each round answers within the interval: a slow
 * instance is recorded `unreachable` for that round rather than delaying it.
 */
export async function startRoleSampler(opts: RoleSamplerOptions): Promise<RoleSampler> {
  const { listInstances, open, notThisSet } = opts;
  const interval = opts.intervalMs ?? SAMPLE_INTERVAL_MS;
  const history: SampleRound[] = [];
  // By address: a Pod's, while it has it, and any other this set's credentials open.
  const probes = new Map<string, InstanceProbe>();
  let pods: SampledPod[] = await listInstances(AbortSignal.timeout(5_000));
  const subnets = opts.hostSubnets ?? REAL_NODE_POD_SUBNETS;
  /** Which instance each address belonged to, for naming one that answers after its Pod moved on. */
  const formerly = new Map<string, string>();
  /** Addresses held on this host beyond the current Pods' (see RoleSamplerOptions.hostSubnets). */
  let elsewhere: HostAddress[] = [];
  /** Addresses (in their namespace) that turned out to be another server's, or none: not asked again. */
  const foreign = new Set<string>();
  let stopped = false;

  // The Pod list refreshes on its own loop so a slow API call never delays a round.
  const listing = (async () => {
    let scannedAt = 0;
    while (!stopped) {
      const started = Date.now();
      try {
        pods = await listInstances(AbortSignal.timeout(5_000));
        for (const p of pods) if (p.ip) formerly.set(p.ip, p.name);
      } catch {
        // Keep the last list; the next pass tries again.
      }
      if (subnets.length && started - scannedAt >= HOST_SCAN_INTERVAL_MS) {
        scannedAt = started;
        elsewhere = hostAddressesIn(subnets).filter((a) => !foreign.has(`${a.netns} ${a.ip}`));
      }
      await pause(Math.max(0, started + interval - Date.now()));
    }
  })();

  const round = async (): Promise<SampleRound> => {
    const atMs = Date.now();
    const deadline = atMs + interval - 20;
    const current = pods;
    const podAt = new Map(current.flatMap((p) => (p.ip ? [[p.ip, p.name] as const] : [])));
    const others = elsewhere.filter((a) => !podAt.has(a.ip) && !foreign.has(`${a.netns} ${a.ip}`));
    const wanted = new Set([...podAt.keys(), ...others.map((a) => a.ip)]);
    for (const [ip, probe] of probes) {
      // An address no longer held, or now another instance's: the old connection is to nothing.
      if (!wanted.has(ip) || (podAt.has(ip) && podAt.get(ip) !== probe.name)) {
        probe.dispose();
        probes.delete(ip);
      }
    }
    const ask = (ip: string, name: string) => {
      let probe = probes.get(ip);
      if (!probe) probes.set(ip, (probe = new InstanceProbe(ip, name, open)));
      return probe.sample(deadline);
    };
    const instances = await Promise.all(
      current.map(async (pod): Promise<InstanceSample> => {
        if (!pod.ip) return { name: pod.name, ip: undefined, role: 'unreachable', reason: 'no Pod IP' };
        return { name: pod.name, ip: pod.ip, ...(await ask(pod.ip, pod.name)) };
      }),
    );
    // What answers at an address no current Pod has is an instance all the same: a container
    // that outlived its Pod object. One that refuses this set's credentials is another's.
    const outliving = await Promise.all(
      others.map(async (a): Promise<InstanceSample | undefined> => {
        const name = `${formerly.get(a.ip) ?? 'unknown'} (no current Pod at ${a.ip})`;
        const answer = await ask(a.ip, name);
        if (answer.role === 'unreachable' && notThisSet.test(answer.reason ?? '')) {
          foreign.add(`${a.netns} ${a.ip}`);
          probes.get(a.ip)?.dispose();
          probes.delete(a.ip);
          return undefined;
        }
        return answer.role === 'unreachable' ? undefined : { name, ip: a.ip, ...answer };
      }),
    );
    instances.push(...outliving.filter((i) => i !== undefined));
    return {
      atMs,
      tookMs: Date.now() - atMs,
      instances,
      writable: instances.filter((i) => i.role === 'writable').map((i) => i.name),
    };
  };

  const sampling = (async () => {
    while (!stopped) {
      const r = await round();
      history.push(r);
      await pause(Math.max(0, r.atMs + interval - Date.now()));
    }
  })();

  const sampler: RoleSampler = {
    rounds: () => history,
    waitForRound: (what, check, timeoutMs) => {
      const from = history.length;
      return eventually(what, () => history.slice(from).find(check), timeoutMs, interval / 2);
    },
    stop: async () => {
      stopped = true;
      await Promise.all([sampling, listing]);
      for (const probe of probes.values()) probe.dispose();
      probes.clear();
      return summarise(history);
    },
    [Symbol.asyncDispose]: async () => {
      await sampler.stop();
    },
  };
  return sampler;
}

export function summarise(history: readonly SampleRound[]): SamplerSummary {
  const writableSequence: string[] = [];
  const noWritableSpans: SamplerSummary['noWritableSpans'] = [];
  let open: { fromMs: number; toMs: number | undefined } | undefined;
  const splitBrainSpans: SamplerSummary['splitBrainSpans'] = [];
  let previousAt: number | undefined;
  for (const r of history) {
    if (r.writable.length > 1) {
      const who = r.instances
        .filter((i) => i.role === 'writable')
        .map((i) => `${i.name}@${i.ip}`)
        .sort();
      const last = splitBrainSpans.at(-1);
      if (last && last.toMs === previousAt && last.writable.join() === who.join()) {
        last.toMs = r.atMs;
        last.rounds++;
      } else splitBrainSpans.push({ fromMs: r.atMs, toMs: r.atMs, rounds: 1, writable: who });
    }
    previousAt = r.atMs;
    for (const name of r.writable) if (writableSequence.at(-1) !== name) writableSequence.push(name);
    if (r.writable.length === 0 && !open) noWritableSpans.push((open = { fromMs: r.atMs, toMs: undefined }));
    if (r.writable.length > 0 && open) {
      open.toMs = r.atMs;
      open = undefined;
    }
  }
  return {
    rounds: history.length,
    firstAtMs: history[0]?.atMs,
    lastAtMs: history.at(-1)?.atMs,
    maxWritableAtOnce: largest(history.map((r) => r.writable.length)),
    splitBrainRounds: history
      .filter((r) => r.writable.length > 1)
      .map((r) => ({ atMs: r.atMs, writable: r.writable })),
    splitBrainSpans,
    writableSequence,
    noWritableSpans,
    maxRoundMs: largest(history.map((r) => r.tookMs)),
  };
}

/**
 * The split-brain stretches in a line, times from `fromMs`: "mdb-0@10.0.0.5 and mdb-2@10.0.0.7
 * from +3.2 s to +4.0 s (5 rounds)". CI keeps a failure's first lines: this goes first.
 */
export function describeSplitBrain(summary: SamplerSummary, fromMs: number): string {
  const at = (ms: number) => `+${((ms - fromMs) / 1000).toFixed(1)} s`;
  return summary.splitBrainSpans
    .map((s) => `${s.writable.join(' and ')} from ${at(s.fromMs)} to ${at(s.toMs)} (${s.rounds} rounds)`)
    .join('; ');
}

/** Math.max without spreading (a long run's arrays exceed the argument limit); 0 when empty. */
function largest(values: Iterable<number>): number {
  let max = 0;
  for (const v of values) if (v > max) max = v;
  return max;
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
