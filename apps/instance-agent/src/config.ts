// The agent's command line. The Pod spec the manager writes is its only
// caller, so a mistake is the manager's bug: it is reported in one line and
// the agent exits before starting the engine.
import { parseArgs } from 'node:util';
import { CUSTOM_QUERY_DIALECTS } from './metrics/custom-queries.ts';
import { METRICS_ENGINES } from './metrics/engines.ts';

export interface AgentConfig {
  /** The Pod's namespace, where the primary Lease is. */
  namespace: string;
  /**
   * The primary Lease's name (one per Database or replicated Cache). Undefined, with no role
   * command either: an engine without a primary (memcached), which the agent only supervises and
   * publishes the metrics of, and which needs no API access.
   */
  lease: string | undefined;
  /** This instance's name in the Lease: its Pod name. */
  identity: string;
  /**
   * Its Pod's uid (the Downward API's metadata.uid): the agent reads its Pod by name and fences its
   * engine once the object is gone or has another uid, which only happens to a container that
   * outlived its Pod (a forced delete on a node whose kubelet did not stop it). Undefined: not checked.
   */
  podUid: string | undefined;
  /** A shell command that prints `primary` when the engine accepts writes, `replica` when it does not (with `lease`). */
  roleCommand: string | undefined;
  /**
   * A shell command that prints two numbers, "IN_TOUCH MEMBERS": how many
   * instances, this one included, confirmed contact with this primary within
   * the renew deadline, of how many the Database has. Without it, a lost Lease
   * always fences (no failsafe).
   */
  quorumCommand: string | undefined;
  /** The engine and its arguments, started as the agent's child. */
  engine: string[];
  /**
   * Where the agent publishes the engine's metrics (GET /metrics): the port, which engine's
   * answer (a key of METRICS_ENGINES) and the shell command that prints it. Undefined: none.
   */
  metrics:
    | {
        port: number;
        engine: string;
        command: string;
        /** Files of user-defined queries (metrics/custom-queries.ts), read at each scrape; postgres and mariadb. */
        queriesFiles?: string[] | undefined;
      }
    | undefined;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  roleIntervalMs: number;
  acquireGraceMs: number;
}

/**
 * The Lease timings default to controller-runtime's (15 s, 10 s, 2 s): an
 * engine that lost its Lease is fenced 10 s after its last renewal, 5 s before
 * anyone can see the Lease expire.
 */
export const DEFAULT_TIMINGS = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  roleIntervalMs: 1_000,
  acquireGraceMs: 5_000,
} as const;

export const USAGE =
  'usage: regulon-instance-agent --namespace NS [--lease NAME --role-command CMD [--quorum-command CMD]] [--identity POD] ' +
  '[--pod-uid UID] [--metrics-port N --metrics-engine ENGINE --metrics-command CMD [--metrics-queries-file FILE]...] [--lease-duration-ms N --renew-deadline-ms N --retry-period-ms N --role-interval-ms N --acquire-grace-ms N] ' +
  '-- ENGINE [ARGS...]';

export function parseAgentArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): AgentConfig {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      namespace: { type: 'string' },
      lease: { type: 'string' },
      identity: { type: 'string' },
      'pod-uid': { type: 'string' },
      'role-command': { type: 'string' },
      'quorum-command': { type: 'string' },
      'metrics-port': { type: 'string' },
      'metrics-engine': { type: 'string' },
      'metrics-command': { type: 'string' },
      'metrics-queries-file': { type: 'string', multiple: true },
      'lease-duration-ms': { type: 'string' },
      'renew-deadline-ms': { type: 'string' },
      'retry-period-ms': { type: 'string' },
      'role-interval-ms': { type: 'string' },
      'acquire-grace-ms': { type: 'string' },
    },
  });
  const required = (name: string, value: string | undefined): string => {
    if (!value) throw new Error(`instance agent: --${name} is required. ${USAGE}`);
    return value;
  };
  const ms = (name: keyof typeof DEFAULT_TIMINGS, flag: string): number => {
    // A timing flag is a single string (only --metrics-queries-file repeats).
    const raw = values[flag as keyof typeof values] as string | undefined;
    if (raw === undefined) return DEFAULT_TIMINGS[name];
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0)
      throw new Error(
        `instance agent: --${flag} must be a whole number of milliseconds above 0, not "${raw}"`,
      );
    return n;
  };
  if (positionals.length === 0) throw new Error(`instance agent: no engine command after "--". ${USAGE}`);
  const metricsFlags = [values['metrics-port'], values['metrics-engine'], values['metrics-command']];
  if (metricsFlags.some(Boolean) && !metricsFlags.every(Boolean))
    throw new Error(
      'instance agent: --metrics-port, --metrics-engine and --metrics-command go together: give all three or none',
    );
  if (values['metrics-queries-file']?.length && !values['metrics-port'])
    throw new Error(
      'instance agent: --metrics-queries-file needs --metrics-port, --metrics-engine and --metrics-command: the queries run through the metrics command',
    );
  let metrics: AgentConfig['metrics'];
  if (values['metrics-port']) {
    const port = Number(values['metrics-port']);
    if (!Number.isInteger(port) || port < 1 || port > 65_535)
      throw new Error(
        `instance agent: --metrics-port must be a port number, not "${values['metrics-port']}"`,
      );
    const engine = values['metrics-engine']!;
    if (!Object.hasOwn(METRICS_ENGINES, engine))
      throw new Error(
        `instance agent: --metrics-engine "${engine}" is not one the agent knows (${Object.keys(METRICS_ENGINES).join(', ')})`,
      );
    const queriesFiles = values['metrics-queries-file'];
    if (queriesFiles?.length && !Object.hasOwn(CUSTOM_QUERY_DIALECTS, engine))
      throw new Error(
        `instance agent: --metrics-queries-file: the ${engine} engine runs no user-defined queries (${Object.keys(CUSTOM_QUERY_DIALECTS).join(', ')} do)`,
      );
    metrics = {
      port,
      engine,
      command: values['metrics-command']!,
      ...(queriesFiles?.length ? { queriesFiles } : {}),
    };
  }
  // The Lease and the role go together; without them the agent has nothing to do but the metrics.
  if (Boolean(values.lease) !== Boolean(values['role-command']))
    throw new Error(
      `instance agent: --lease and --role-command go together: give both, or neither. ${USAGE}`,
    );
  if (!values.lease && values['quorum-command'])
    throw new Error(
      "instance agent: --quorum-command is the primary Lease's: it needs --lease and --role-command",
    );
  if (!values.lease && !metrics)
    throw new Error(
      `instance agent: without --lease it only publishes metrics: give --metrics-port, --metrics-engine and --metrics-command. ${USAGE}`,
    );
  const config: AgentConfig = {
    namespace: required('namespace', values.namespace),
    lease: values.lease || undefined,
    identity: required('identity (or the POD_NAME environment variable)', values.identity ?? env['POD_NAME']),
    podUid: values['pod-uid'] || env['POD_UID'] || undefined,
    roleCommand: values['role-command'] || undefined,
    quorumCommand: values['quorum-command'],
    engine: positionals,
    metrics,
    leaseDurationMs: ms('leaseDurationMs', 'lease-duration-ms'),
    renewDeadlineMs: ms('renewDeadlineMs', 'renew-deadline-ms'),
    retryPeriodMs: ms('retryPeriodMs', 'retry-period-ms'),
    roleIntervalMs: ms('roleIntervalMs', 'role-interval-ms'),
    acquireGraceMs: ms('acquireGraceMs', 'acquire-grace-ms'),
  };
  // The Lease's promise holds only if the fence comes before anyone can see
  // the Lease expire (LeaderElector checks the same on its own side).
  if (config.renewDeadlineMs >= config.leaseDurationMs)
    throw new Error(
      `instance agent: --renew-deadline-ms (${config.renewDeadlineMs}) must be below --lease-duration-ms (${config.leaseDurationMs})`,
    );
  if (config.acquireGraceMs >= config.leaseDurationMs)
    throw new Error(
      `instance agent: --acquire-grace-ms (${config.acquireGraceMs}) must be below --lease-duration-ms (${config.leaseDurationMs})`,
    );
  return config;
}
