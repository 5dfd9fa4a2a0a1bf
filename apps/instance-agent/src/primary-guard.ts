// The primary Lease, from the instance's side: while its engine accepts
// writes, the agent holds the Lease; the moment it cannot show that it still
// does, it fences the engine. The manager promotes another instance only once
// the Lease has expired or been released, judged by its own observation (as
// every elector judges; see @regulon/runtime's leader-election.ts). The agent
// fences when no renewal has succeeded within the renew deadline, which is
// shorter than the lease duration, so the old primary has stopped before any
// observer can see the Lease expire.
//
// An API-server outage alone must not stop a healthy primary: when the Lease
// is lost to the deadline (not taken) and a quorum answer says a majority of
// the instances, this one included, are in touch with it, the engine keeps
// serving ("failsafe") while the agent tries to win the Lease back, and is
// fenced the moment the majority is gone. That is safe only beside the
// manager's rule (see README): it promotes only when a majority of the
// instances report no contact with the old primary, and two majorities
// always share an instance.
import type { Clock, Logger, TimerHandle } from '@regulon/util';

/** One campaign for the Lease: @regulon/runtime's LeaderElector satisfies it. */
export interface Campaign {
  run(signal?: AbortSignal): Promise<void>;
  /** Stops the campaign and, if held, hands the Lease over (holder cleared). */
  release(): Promise<void>;
}

export interface CampaignCallbacks {
  onStartedLeading(): void;
  onStoppedLeading(): void;
  /** Each holder the campaign observes, its own identity included. */
  onNewLeader(identity: string): void;
}

/** How many instances (this one included) are in touch with this primary, of how many. */
export interface Quorum {
  inTouch: number;
  members: number;
}

export const hasMajority = (q: Quorum): boolean => q.inTouch > q.members / 2;

/** How long one question to the engine (its role, its quorum) may take: longer counts as no answer. */
export const QUESTION_TIMEOUT_MS = 3_000;

/**
 * How long a majority answer counts, from when its question was asked. One slow or unanswered
 * question (psql starting on a busy machine) must not stop a healthy primary; what bounds the risk
 * is the age of the evidence, not each question's. In failsafe the quorum is asked beside the role,
 * a turn every role interval (1 s) or, when an answer takes longer, as soon as the slower is in (at
 * most QUESTION_TIMEOUT_MS): a question answered in 2 s, the next unanswered after 3 s and the one
 * after answered within 3 s more all fit in 8 s. A longer window would tolerate more, at a price:
 * the manager waits as much longer to fail over a primary it cannot see (a lost node). The old
 * primary serves at most this long after the last question that still counted a standby in touch:
 * the manager's OUT_OF_TOUCH_MARGIN_MS (in @regulon/conventions) is the engine's sender timeout
 * plus this, plus a second.
 */
export const QUORUM_EVIDENCE_MS = 8_000;

export interface PrimaryGuardOptions {
  /** This instance's identity in the Lease (its Pod name). */
  identity: string;
  /** A new campaign for the Lease; one at a time. */
  campaign(callbacks: CampaignCallbacks): Campaign;
  /**
   * Whether the engine accepts writes now: true, false, or undefined when it
   * did not answer (starting, busy, hung). An unanswered question changes
   * nothing: a hung engine acknowledges nothing, and the Lease still guards it.
   */
  acceptsWrites(signal: AbortSignal): Promise<boolean | undefined>;
  /**
   * Which instances are in touch with this one now, from the engine's own
   * replication connections. Undefined (no failsafe): a lost Lease always fences.
   */
  quorum?: ((signal: AbortSignal) => Promise<Quorum | undefined>) | undefined;
  /**
   * How long one majority answer keeps the engine serving without the Lease, from the moment the
   * question was asked (QUORUM_EVIDENCE_MS by default). A slow or missing answer within it changes
   * nothing; the engine is fenced once the latest majority answer is this old.
   */
  quorumEvidenceMs?: number | undefined;
  /** Stops the engine at once; called at most once. */
  fence(reason: string): void;
  clock: Clock;
  log: Logger;
  /** How often the engine is asked its role. */
  roleIntervalMs: number;
  /**
   * How long an engine that accepts writes may run while the campaign has
   * not yet acquired the Lease (the API server unreachable, say). A Lease
   * another instance holds fences at once, without this grace.
   */
  acquireGraceMs: number;
}

type State =
  | { kind: 'replica' }
  /**
   * Trying to acquire. `grace` runs out for a campaign that never held the
   * Lease; in failsafe (the Lease lost, a majority in touch) there is no grace,
   * and the quorum is asked every role interval instead.
   */
  | {
      kind: 'campaigning';
      campaign: Campaign;
      grace: TimerHandle | undefined;
      failsafe: boolean;
      /** In failsafe: fences once the latest majority answer is quorumEvidenceMs old. */
      evidenceRunsOut?: TimerHandle | undefined;
    }
  | { kind: 'leading'; campaign: Campaign }
  | { kind: 'fenced'; reason: string };

/**
 * Follows the engine's role and keeps the Lease in step with it. `run()`
 * resolves when stop() is called or the engine was fenced; `fencedBecause`
 * then says why, if it was.
 */
export class PrimaryGuard {
  readonly #o: PrimaryGuardOptions;
  #state: State = { kind: 'replica' };
  readonly #stop = new AbortController();

  constructor(options: PrimaryGuardOptions) {
    if (!(options.roleIntervalMs > 0)) throw new RangeError('primary guard: roleIntervalMs must be > 0');
    if (!(options.acquireGraceMs >= 0)) throw new RangeError('primary guard: acquireGraceMs must be >= 0');
    this.#o = options;
  }

  /** Why the engine was fenced, once it was. */
  get fencedBecause(): string | undefined {
    return this.#state.kind === 'fenced' ? this.#state.reason : undefined;
  }

  /** Fences the engine for a reason found outside the Lease (see AgentConfig.podUid); once. */
  fenceFor(reason: string): void {
    this.#fence(reason);
  }

  /** True while this instance holds the Lease by its latest renewal. */
  get holdsLease(): boolean {
    return this.#state.kind === 'leading';
  }

  async run(): Promise<void> {
    const { clock, roleIntervalMs } = this.#o;
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      const turnStarted = clock.now();
      // In failsafe the quorum is asked beside the role: a turn takes one question's time, not two
      // in a row, so the evidence window outlasts a turn with an unanswered question in it.
      const current = this.#state;
      const quorumTurn =
        current.kind === 'campaigning' && current.failsafe
          ? this.#keepOrFence('the primary Lease is lost and not yet won back', current.campaign)
          : undefined;
      const writable = await this.#o.acceptsWrites(signal).catch(() => undefined);
      // A fence aborts `signal` too, also while the question was out.
      if (signal.aborted) break;
      if (writable === true && this.#state.kind === 'replica') this.#campaign(false);
      else if (writable === false && this.#state.kind !== 'replica') await this.#stepDown();
      // Stepped down meanwhile: the answer no longer concerns this state and changes nothing.
      await quorumTurn;
      // A fence or stop while this turn ran: an abort listener added now would never fire.
      if (signal.aborted) break;
      await new Promise<void>((resolve) => {
        // A turn every role interval, counted from its start: slow answers do not add a whole
        // interval on top (see QUORUM_EVIDENCE_MS).
        const timer = clock.setTimeout(resolve, Math.max(0, turnStarted + roleIntervalMs - clock.now()));
        signal.addEventListener(
          'abort',
          () => {
            clock.clearTimeout(timer);
            resolve();
          },
          { once: true },
        );
      });
    }
  }

  /**
   * Stops following the role and gives the Lease up. Call it once the engine
   * has stopped (a graceful shutdown): a Lease released while the engine still
   * accepted writes would let another instance be promoted beside it.
   */
  async stop(): Promise<void> {
    this.#stop.abort();
    if (this.#state.kind === 'campaigning' || this.#state.kind === 'leading') await this.#stepDown();
  }

  #campaign(failsafe: boolean): void {
    const { clock, log, identity, acquireGraceMs } = this.#o;
    const grace = failsafe
      ? undefined
      : clock.setTimeout(
          () =>
            void this.#keepOrFence(
              `the engine accepted writes for ${acquireGraceMs} ms without this instance acquiring the primary Lease`,
              campaign,
            ),
          acquireGraceMs,
        );
    // The callbacks run only after this returns, never during the call.
    const campaign: Campaign = this.#o.campaign({
      onStartedLeading: () => {
        if (this.#state.kind !== 'campaigning' || this.#state.campaign !== campaign) return;
        this.#clearTimers();
        this.#state = { kind: 'leading', campaign };
        log.info({ identity }, 'holding the primary Lease');
      },
      onStoppedLeading: () => {
        // A step-down sets the state to replica before it releases, and a
        // Lease taken by another fenced in onNewLeader already: what is left
        // is a Lease not renewed within the renew deadline.
        if (this.#state.kind === 'leading' && this.#state.campaign === campaign)
          void this.#keepOrFence('the primary Lease was not renewed within the renew deadline', campaign);
      },
      onNewLeader: (holder) => {
        const current = this.#state;
        if (holder === identity || current.kind === 'replica' || current.kind === 'fenced') return;
        if ('campaign' in current && current.campaign === campaign)
          this.#fence(`the primary Lease is held by ${holder}, yet this engine accepts writes`);
      },
    });
    this.#state = { kind: 'campaigning', campaign, grace, failsafe };
    if (!failsafe) log.info({ identity }, 'the engine accepts writes: campaigning for the primary Lease');
    campaign.run(this.#stop.signal).catch(() => {
      // Losing is handled by onStoppedLeading; a rejection adds nothing.
    });
  }

  /**
   * After `campaign` lost or never won the Lease: keeps the engine serving
   * only while a majority is in touch (in failsafe, with a campaign to win the
   * Lease back), else fences it.
   */
  async #keepOrFence(reason: string, campaign: Campaign): Promise<void> {
    const { quorum, clock, log, identity } = this.#o;
    const concerned = () => {
      const s = this.#state;
      return (s.kind === 'campaigning' || s.kind === 'leading') && s.campaign === campaign;
    };
    if (!concerned()) return;
    if (!quorum) return this.#fence(reason);
    const evidenceMs = this.#o.quorumEvidenceMs ?? QUORUM_EVIDENCE_MS;
    const askedAt = clock.now();
    const timeout = new AbortController();
    const timer = clock.setTimeout(() => timeout.abort(), QUESTION_TIMEOUT_MS);
    let answer: Quorum | undefined;
    try {
      answer = await Promise.race([
        quorum(AbortSignal.any([timeout.signal, this.#stop.signal])).catch(() => undefined),
        new Promise<undefined>((resolve) =>
          timeout.signal.addEventListener('abort', () => resolve(undefined)),
        ),
      ]);
    } finally {
      clock.clearTimeout(timer);
    }
    if (!concerned()) return;
    const serving = this.#state.kind === 'campaigning' && this.#state.failsafe;
    if (answer && !hasMajority(answer))
      return this.#fence(
        `${reason}, and in touch with ${answer.inTouch} of ${answer.members} instances, no majority`,
      );
    if (!answer) {
      // In failsafe the latest majority answer still counts until its timer fences; before it
      // there is none to lean on.
      if (serving) log.warn({ identity, reason }, 'no answer about the other instances this time');
      else this.#fence(`${reason}, and no answer about the other instances`);
      return;
    }
    const current = this.#state;
    if (current.kind === 'campaigning') {
      // Never won (a grace), or already serving in failsafe: the new answer's window replaces the old.
      this.#clearTimers();
      this.#state = { ...current, grace: undefined, failsafe: true };
    } else {
      // Lost: the elector's run is over; a new one tries to win it back.
      this.#campaign(true);
    }
    const now = this.#state;
    if (now.kind === 'campaigning')
      now.evidenceRunsOut = clock.setTimeout(
        () =>
          this.#fence(
            `${reason}, and no answer since ${evidenceMs} ms ago has shown a majority of the instances in touch`,
          ),
        Math.max(0, askedAt + evidenceMs - clock.now()),
      );
    if (serving) return;
    log.warn(
      { identity, reason, inTouch: answer.inTouch, members: answer.members },
      'keeping the engine up without the primary Lease: a majority of the instances is in touch with it',
    );
  }

  /** Stops the campaigning state's timers: the acquire grace, the failsafe's evidence window. */
  #clearTimers(): void {
    const current = this.#state;
    if (current.kind !== 'campaigning') return;
    if (current.grace) this.#o.clock.clearTimeout(current.grace);
    if (current.evidenceRunsOut) this.#o.clock.clearTimeout(current.evidenceRunsOut);
  }

  async #stepDown(): Promise<void> {
    const current = this.#state;
    if (current.kind !== 'campaigning' && current.kind !== 'leading') return;
    this.#clearTimers();
    this.#state = { kind: 'replica' };
    this.#o.log.info(
      { identity: this.#o.identity },
      'the engine no longer accepts writes: releasing the primary Lease',
    );
    await current.campaign.release();
  }

  #fence(reason: string): void {
    const current = this.#state;
    if (current.kind === 'fenced') return;
    this.#clearTimers();
    this.#state = { kind: 'fenced', reason };
    this.#o.log.error({ identity: this.#o.identity, reason }, 'fencing the engine');
    this.#o.fence(reason);
    this.#stop.abort();
    // The campaign stops with the abort; the Lease is left to expire, never
    // released: a release could let a successor in before the kill is done.
  }
}
