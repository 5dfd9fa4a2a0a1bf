// The seam between the engine-neutral code (reconciler.ts, children.ts,
// status.ts, parameters.ts, backup/, replication/) and the engines
// (postgres/, mariadb/, mysql/, each assembled in engines/): what the neutral
// code may ask of an engine. Both sides import this module and nothing of each
// other's, so no `engine === '…'` branch is needed outside an engine's folder.
import type { V1Container, V1Volume } from '@kubernetes/client-node';
import type { Server } from '@regulon/conventions';
import type { DatabaseObject } from './api.ts';
import type { Engine } from './versions.ts';

/** Where the manager reaches one instance, for one reconcile. */
export interface Endpoint {
  host: string;
  /** The replication account's password: read once per reconcile, never kept past it. */
  password: string;
  signal?: AbortSignal | undefined;
}

/** One instance as its server answered over SQL, or why it did not. */
export type Observation =
  | {
      reachable: true;
      server: Server;
      /** Its position as the engine writes it (an LSN, a GTID), for the status. */
      position: string;
      /**
       * A writable instance: how many standbys confirm its commits now (synchronous mode; postgres
       * counts the sync and quorum standbys, mariadb its semi-sync replicas). 0: a commit waits.
       */
      confirming?: number | undefined;
      /** What it held that the primary never had and discarded when it rejoined, said by the instance. */
      discarded?: string | undefined;
    }
  | { reachable: false; error: string };

/**
 * What the replication reconcile needs from an engine, whatever its protocol:
 * the engine-neutral view of an instance that plan() decides on, a promotion,
 * and the primary's upkeep for its replicas. Each engine speaks its own SQL
 * (postgres/instance.ts, mariadb/instance.ts), loaded with its client library
 * on first use: a manager whose Databases are all single instances loads
 * neither.
 */
export interface InstanceDriver {
  /** What `Server.lsn` counts, so the status names its lag: WAL bytes or transactions. */
  readonly lagUnit: 'bytes' | 'transactions';
  /** The Database's read-only lag bound, in `lagUnit`. */
  maxLag(db: DatabaseObject): bigint;
  observe(e: Endpoint): Promise<Observation>;
  /** Makes a fenced primary's replica writable; a no-op on a writable one. */
  promote(e: Endpoint, db: DatabaseObject): Promise<void>;
  /** Upkeep on the current primary for the other instances (Pod names), with what changed, if anything. */
  tendPrimary(primary: Endpoint, others: string[]): Promise<string | undefined>;
  /**
   * Asks the instance to plan each statement (an EXPLAIN, see metrics-queries-check.ts) in a
   * read-only session, each bounded by the engine's statement timeout, until `deadline` (ms since
   * the epoch): what it said of each one asked. Throws when the instance cannot be asked (no
   * connection, a connection lost): that says nothing of the statements.
   */
  plan(
    e: Endpoint,
    statements: readonly { name: string; sql: string }[],
    deadline: number,
  ): Promise<Map<string, PlanVerdict>>;
}

/** How long an engine may take to plan one statement (its statement timeout). */
export const PLAN_TIMEOUT_MS = 1000;

/**
 * What an engine said when asked to plan a statement: it accepted it, refused it (its error's
 * first line), or could not tell (a privilege the replication account lacks, a timeout).
 */
export type PlanVerdict = { verdict: 'accepted' } | { verdict: 'refused' | 'unknown'; error: string };

/**
 * InstanceDriver.plan's loop over one session: `run` sends a statement, `verdictOf` reads the
 * server's error (undefined for one that is no server's answer: it ends the check).
 */
export async function planStatements(
  statements: readonly { name: string; sql: string }[],
  deadline: number,
  run: (sql: string) => Promise<unknown>,
  verdictOf: (err: unknown) => PlanVerdict | undefined,
): Promise<Map<string, PlanVerdict>> {
  const verdicts = new Map<string, PlanVerdict>();
  for (const { name, sql } of statements) {
    if (Date.now() >= deadline) break;
    try {
      await run(sql);
      verdicts.set(name, { verdict: 'accepted' });
    } catch (err) {
      const verdict = verdictOf(err);
      if (!verdict) throw err;
      verdicts.set(name, verdict);
    }
  }
  return verdicts;
}

/**
 * How an engine's configuration file parser reads a setting name (see
 * parameters.ts, which enforces it at admission and again before rendering).
 */
export interface ParameterNaming {
  /** The grammar of a name, as a regular expression (JavaScript and CEL alike). */
  readonly namePattern: string;
  /** The grammar in words, for messages. */
  readonly nameRuleText: string;
  /** A name as the engine compares it, from its lower-cased ASCII form. */
  canonical(lower: string): string;
  /** CEL: the parameter name `k` is one of `names` (canonical, `[a-z0-9_-]` only) as the engine compares it. */
  celMatches(k: string, names: readonly string[]): string;
  /** How names are compared, in words, for the reserved-names message. */
  readonly comparedText: string;
}

/** The tools that take a DatabaseBackup (backup/controller.ts drives each one). */
export type BackupToolName = 'pgBackRest' | 'mariabackup';

/** The engine's container and the volumes it needs beside the data claim. */
export interface EnginePod {
  container: V1Container;
  volumes: V1Volume[];
}

/**
 * One engine's behaviour: everything the neutral code would otherwise decide
 * by comparing the engine's name. Engines are looked up with engineOf()
 * (engines/index.ts).
 */
export interface EngineBehaviour {
  readonly name: Engine;
  /** How spec.parameters names are read and compared. */
  readonly parameters: ParameterNaming;
  /** Its configuration file: the operator's settings, then the (validated, sorted) parameters in its own value syntax. */
  configFile(db: DatabaseObject, parameters: [string, string][]): { file: string; content: string };
  /** The other files of the config ConfigMap its Pods run with (start script, pg_hba.conf), if any. */
  podFiles(db: DatabaseObject): Record<string, string>;
  /** The engine's container and the volumes it mounts. */
  pod(db: DatabaseObject, credentialsSecret: string, image: string): EnginePod;
  /** The scheduled dump without an object store: the shell command and the variable its client reads the password from. */
  dump(host: string): { command: string; passwordEnv: string };
  /** How its instances replicate; undefined for an engine that runs one instance (mysql). */
  readonly replication: { driver: InstanceDriver; user: string } | undefined;
  /** The tool that takes its DatabaseBackups into spec.backup.objectStore; undefined for none. */
  readonly backupTool: BackupToolName | undefined;
  /** Whether its archive needs a stanza made on the primary before WAL can be archived (pgBackRest). */
  readonly archiveNeedsStanza: boolean;
  /** Whether spec.bootstrap.recovery may name a point in time (targetTime). */
  readonly pointInTimeRecovery: boolean;
  /**
   * spec.replication.divergedData when the spec leaves it out: what becomes of a former primary
   * holding transactions the primary never had (postgres rewinds it; mariadb keeps errant
   * transactions out, as MOCO does).
   */
  readonly divergedDataDefault: 'Discard' | 'Keep';
  /** Whether spec.bootstrap.recovery is resolved into a recovery Secret the first Pod reads. */
  readonly keepsRecoverySecret: boolean;
  /**
   * What the instance agent asks the engine, where its Pods run under the agent (see
   * @regulon/instance-agent): a shell command printing `primary` or `replica`, and one printing
   * how many instances are in touch with a primary ("IN_TOUCH MEMBERS"), which keeps it serving
   * through an API-server outage while a majority is (without it, a lost Lease always fences).
   * Undefined: its Pods run without the agent, and only the kubelet ends a primary's role.
   * `metrics`: where and how the agent publishes the engine's metrics (AgentCommandOptions.metrics).
   */
  readonly agent:
    | {
        roleCommand: string;
        quorumCommand?: string | undefined;
        metrics?: { port: number; engine: string; command: string } | undefined;
      }
    | undefined;
}
