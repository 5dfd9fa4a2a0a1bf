// What each manager replica says about itself over time, and the checks on
// that record: never two replicas leading at once, and reconciles only from a
// replica that leads. The record is scrapes of each Pod's own /metrics
// (leader_election_master_status, controller_runtime_reconcile_total), taken
// every few hundred milliseconds, each with the window it was read in.

/** One scrape of one replica. The value was read at some moment in [sentAt, receivedAt]. */
export interface Scrape {
  pod: string;
  sentAt: number;
  receivedAt: number;
  /** leader_election_master_status: 1 while this replica leads. */
  leading: number;
  /** controller_runtime_reconcile_total, every controller and result summed. */
  reconciles: number;
}

/**
 * Two replicas led at the same moment if one of them reported leading after
 * the other had begun, while it had also reported leading before that: a
 * replica leads once, in one stretch (losing the Lease ends the process), so
 * it led in between too. Only certain overlaps count: the windows must not
 * touch. Returns one line per overlap found.
 */
export function overlappingLeaders(scrapes: readonly Scrape[]): string[] {
  const leading = new Map<string, Scrape[]>();
  for (const s of scrapes) if (s.leading === 1) leading.set(s.pod, [...(leading.get(s.pod) ?? []), s]);
  const stretches = [...leading.entries()]
    .map(([pod, list]) => ({ pod, first: list[0]!, last: list[list.length - 1]! }))
    .sort((a, b) => a.first.receivedAt - b.first.receivedAt);
  const found: string[] = [];
  for (let i = 0; i < stretches.length; i++)
    for (let j = i + 1; j < stretches.length; j++) {
      const [a, b] = [stretches[i]!, stretches[j]!];
      // a began first (its first window ended before b's did); a still led after b began?
      if (a.first.receivedAt < b.first.sentAt && a.last.sentAt > b.first.receivedAt)
        found.push(
          `${a.pod} still led at ${a.last.sentAt} after ${b.pod} led at ${b.first.receivedAt} (both leading)`,
        );
    }
  return found;
}

/**
 * A replica's reconcile count may rise between two of its scrapes only if it
 * led at one end: a standby reconciles nothing, and a leader stops its
 * controllers before it gives up the Lease. A first scrape already above 0
 * without leading counts too (it reconciled before it was ever seen leading).
 */
export function reconcilesWithoutLeading(scrapes: readonly Scrape[]): string[] {
  const byPod = new Map<string, Scrape[]>();
  for (const s of scrapes) byPod.set(s.pod, [...(byPod.get(s.pod) ?? []), s]);
  const found: string[] = [];
  for (const [pod, list] of byPod) {
    const sorted = [...list].sort((a, b) => a.sentAt - b.sentAt);
    const first = sorted[0]!;
    if (first.reconciles > 0 && first.leading !== 1)
      found.push(`${pod}: ${first.reconciles} reconciles at ${first.sentAt}, not leading`);
    for (let i = 1; i < sorted.length; i++) {
      const [prev, cur] = [sorted[i - 1]!, sorted[i]!];
      if (cur.reconciles > prev.reconciles && prev.leading !== 1 && cur.leading !== 1)
        found.push(
          `${pod}: reconciles ${prev.reconciles} -> ${cur.reconciles} between ${prev.sentAt} and ${cur.sentAt}, not leading at either`,
        );
    }
  }
  return found;
}

/** The order in which replicas first reported leading. */
export function leaders(scrapes: readonly Scrape[]): string[] {
  const order: string[] = [];
  for (const s of [...scrapes].sort((a, b) => a.receivedAt - b.receivedAt))
    if (s.leading === 1 && !order.includes(s.pod)) order.push(s.pod);
  return order;
}
