// A record of a rolling update of the manager, taken every 250 ms until
// stopped: each replica's own /metrics (leading, reconciles), the Lease
// holder, the containers' restart counts, and whether each sample is Ready.
import { leaders, overlappingLeaders, reconcilesWithoutLeading, type Scrape } from './leadership.ts';
import { LEASE, SELECTOR, scrape, sum, type Installation, type Lease, type Pod } from './installation.ts';

const INTERVAL_MS = 250;

export interface RollOptions {
  /** Objects that must be Ready at every look. */
  samples: Array<{ what: string; ready: () => Promise<boolean> }>;
  /** Called (and awaited) with a running count each time the set of Pods, or which of them are terminating, changes. */
  onPodsChanged: (n: number) => Promise<void>;
}

export interface RollRecord {
  scrapes: number;
  overlaps: string[];
  reconcilesWithoutLeading: string[];
  /** Pods in the order they first reported leading. */
  leaders: string[];
  /** For each handover, ms from the last "leading" of one replica to the first of the next (an upper bound). */
  handoverMs: number[];
  holders: Array<{ at: number; holder: string }>;
  notReady: string[];
  /** Containers whose restart count went up. */
  restarts: string[];
  changes: number;
}

export function recordRoll(inst: Installation, options: RollOptions): { stop(): Promise<RollRecord> } {
  const scrapes: Scrape[] = [];
  const holders: Array<{ at: number; holder: string }> = [];
  const notReady: string[] = [];
  const restarts = new Map<string, number>();
  const restarted = new Set<string>();
  let podSet: string | undefined;
  let changes = 0;
  const stopping = new AbortController();

  const tick = async () => {
    const pods = (
      await inst.get<{ items: Pod[] }>(
        `/api/v1/namespaces/${inst.namespace}/pods?labelSelector=${encodeURIComponent(SELECTOR)}`,
      )
    ).items;
    for (const p of pods) {
      const n = p.status.containerStatuses?.[0]?.restartCount ?? 0;
      const seen = restarts.get(p.metadata.name);
      if (seen !== undefined && n > seen) restarted.add(`${p.metadata.name}: ${seen} -> ${n}`);
      restarts.set(p.metadata.name, n);
    }
    const set = pods
      .map((p) => `${p.metadata.name}${p.metadata.deletionTimestamp ? ' (terminating)' : ''}`)
      .sort()
      .join(', ');
    if (podSet !== undefined && set !== podSet) await options.onPodsChanged(++changes);
    podSet = set;
    await Promise.all([
      ...pods
        .filter((p) => p.status.podIP && p.status.phase === 'Running')
        .map(async (p) => {
          const sentAt = Date.now();
          try {
            const samples = await scrape(p, AbortSignal.timeout(1000));
            scrapes.push({
              pod: p.metadata.name,
              sentAt,
              receivedAt: Date.now(),
              leading: sum(samples, 'leader_election_master_status'),
              reconciles: sum(samples, 'controller_runtime_reconcile_total'),
            });
          } catch {
            // Starting or stopping: no answer is no claim either way.
          }
        }),
      (async () => {
        const at = Date.now();
        const holder = (
          await inst.get<Lease>(`/apis/coordination.k8s.io/v1/namespaces/${inst.namespace}/leases/${LEASE}`)
        ).spec.holderIdentity;
        if (holder && holders.at(-1)?.holder !== holder) holders.push({ at, holder });
      })(),
      ...options.samples.map(async (s) => {
        if (!(await s.ready())) notReady.push(`${s.what} at ${new Date().toISOString()}`);
      }),
    ]);
  };

  const loop = (async () => {
    while (!stopping.signal.aborted) {
      const next = Date.now() + INTERVAL_MS;
      await tick();
      await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
    }
  })();

  return {
    async stop() {
      stopping.abort();
      await loop;
      const order = leaders(scrapes);
      const lastLeading = (pod: string) =>
        Math.max(...scrapes.filter((s) => s.pod === pod && s.leading === 1).map((s) => s.sentAt));
      const firstLeading = (pod: string) =>
        Math.min(...scrapes.filter((s) => s.pod === pod && s.leading === 1).map((s) => s.receivedAt));
      return {
        scrapes: scrapes.length,
        overlaps: overlappingLeaders(scrapes),
        reconcilesWithoutLeading: reconcilesWithoutLeading(scrapes),
        leaders: order,
        handoverMs: order.slice(1).map((pod, i) => firstLeading(pod) - lastLeading(order[i]!)),
        holders,
        notReady,
        restarts: [...restarted],
        changes,
      };
    },
  };
}
