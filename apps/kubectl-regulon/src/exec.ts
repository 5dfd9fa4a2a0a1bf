// `psql DATABASE`, `mysql DATABASE`, `redis-cli CACHE`: the engine's own
// client, run inside the instance through `kubectl exec`, connected with the
// credentials the controller already gave the container. The plugin never
// reads them: the container's environment holds them (the database
// controller's instance-env.ts: SUPERUSER and SUPERUSER_PASSWORD from the
// credentials Secret; mysql's MYSQL_ROOT_PASSWORD; the cache controller's
// REDISCLI_AUTH), and the command sent names only the variables. A shell in the
// container moves the password into the variable the client reads
// (PGPASSWORD, MYSQL_PWD) and replaces itself with the client, so no command
// line, here or in the container's `ps`, ever holds it.
import { spawn } from 'node:child_process';
import type { V1Pod } from '@kubernetes/client-node';
import type { CacheObject } from '@regulon/cache-controller';
import { Kinds } from '@regulon/client';
import type { DatabaseObject } from '@regulon/database-controller';
import type { ClientCommand, GlobalOptions } from './args.ts';
import type { CommandEnv } from './env.ts';
import { UserError } from './errors.ts';
import { kindOf, type AnyObject, type KindInfo } from './kinds.ts';
import { ROLE_LABEL } from './logs.ts';
import { getObject } from './objects.ts';

export interface ClientRequest {
  client: ClientCommand;
  object: string;
  replica: boolean;
  instance?: string | undefined;
  /** After `--`: the client's own arguments (`-c 'select 1'`, `-e …`, a redis command). */
  args: string[];
}

/** Runs a program with the terminal's stdin, stdout and stderr; resolves with its exit code. */
export type Spawner = (command: string, args: string[]) => Promise<number>;

/** The kubectl on PATH, attached to this terminal. */
export const spawnInheriting: Spawner = (command, args) =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit' });
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT'
          ? new UserError(`${command} is not on PATH: the engine's client is run through "${command} exec"`)
          : err,
      ),
    );
    // A signal that ends kubectl ends the session as a shell reports it: 128 + its number.
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 + signalNumber(signal) : 1)));
  });

function signalNumber(signal: NodeJS.Signals): number {
  return (
    ({ SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGTERM: 15 } as Record<string, number>)[signal] ?? 0
  );
}

/** Which kind and engines each client command is for. */
const CLIENT_OF: Record<ClientCommand, { kind: string; engines: readonly string[] }> = {
  psql: { kind: 'database', engines: ['postgres'] },
  mysql: { kind: 'database', engines: ['mariadb', 'mysql'] },
  'redis-cli': { kind: 'cache', engines: ['redis'] },
};

/** The other command to use for an engine, for the refusal's message. */
const COMMAND_FOR: Record<string, string> = {
  postgres: 'psql',
  mariadb: 'mysql',
  mysql: 'mysql',
  redis: 'redis-cli',
};

/**
 * The command run in the container: the shell text names the variables,
 * never their values, and `exec` leaves the client as the only process.
 * The client's arguments follow as "$@". Ports are the engines' (the
 * controllers' ENGINE_DEFAULTS): 5432, 3306, 6379.
 */
export function containerCommand(engine: string, args: readonly string[]): string[] {
  switch (engine) {
    case 'postgres':
      return [
        'sh',
        '-c',
        'export PGPASSWORD="$SUPERUSER_PASSWORD"; exec psql -h 127.0.0.1 -p 5432 -U "$SUPERUSER" -d "${DATABASE:-postgres}" "$@"',
        'psql',
        ...args,
      ];
    case 'mariadb':
      return [
        'sh',
        '-c',
        'export MYSQL_PWD="$SUPERUSER_PASSWORD"; exec mariadb --no-defaults -h 127.0.0.1 -P 3306 -u "$SUPERUSER" ${DATABASE:+-D "$DATABASE"} "$@"',
        'mariadb',
        ...args,
      ];
    case 'mysql':
      return [
        'sh',
        '-c',
        'export MYSQL_PWD="$MYSQL_ROOT_PASSWORD"; exec mysql -h 127.0.0.1 -P 3306 -u root ${MYSQL_DATABASE:+-D "$MYSQL_DATABASE"} "$@"',
        'mysql',
        ...args,
      ];
    case 'redis':
      // redis-cli reads REDISCLI_AUTH itself, which the container has (a Cache without auth: none needed).
      return ['redis-cli', '--no-auth-warning', '-h', '127.0.0.1', '-p', '6379', ...args];
    default:
      throw new UserError(`no client for engine ${engine}`);
  }
}

/**
 * `kubectl exec` with the plugin's own connection flags: -i always (so a
 * script can be piped in), -t only when stdin is a terminal (kubectl warns
 * otherwise, and a pipe must not get a terminal's line endings).
 */
export function kubectlExecArgs(o: {
  global: GlobalOptions;
  namespace: string;
  pod: string;
  container: string;
  tty: boolean;
  command: readonly string[];
}): string[] {
  return [
    'exec',
    o.tty ? '-it' : '-i',
    o.pod,
    '-n',
    o.namespace,
    ...(o.global.context ? ['--context', o.global.context] : []),
    ...(o.global.kubeconfig ? ['--kubeconfig', o.global.kubeconfig] : []),
    '-c',
    o.container,
    '--',
    ...o.command,
  ];
}

type InstanceStatus = {
  name: string;
  role: string;
  state?: string;
  lagBytes?: number;
  lagTransactions?: number;
};

/**
 * The instance to connect to: --instance, else with --replica the replica
 * that serves reads with the least lag (role replica in the status), else the
 * primary the status names. An object whose status names no primary (one
 * instance, or independent ones) connects to the Pod the role label calls
 * primary, else the first of its Pods by name. Pure.
 */
export function pickInstance(
  object: AnyObject,
  pods: readonly V1Pod[],
  req: Pick<ClientRequest, 'replica' | 'instance'>,
): string {
  const status = object.status as
    { currentPrimary?: string | undefined; instances?: InstanceStatus[] | undefined } | undefined;
  const name = object.metadata.name!;
  const podNames = pods.map((p) => p.metadata!.name!).sort((a, b) => a.localeCompare(b));
  if (req.instance !== undefined) {
    if (!podNames.includes(req.instance))
      throw new UserError(
        `${req.instance} is not an instance of ${name}${podNames.length ? ` (${podNames.join(', ')})` : ''}`,
      );
    return req.instance;
  }
  if (req.replica) {
    const lag = (i: InstanceStatus) => i.lagBytes ?? i.lagTransactions ?? Number.MAX_SAFE_INTEGER;
    const fromStatus = (status?.instances ?? [])
      .filter((i) => i.role === 'replica' && podNames.includes(i.name))
      .sort((a, b) => lag(a) - lag(b) || a.name.localeCompare(b.name))[0]?.name;
    const labelled = pods.find((p) => p.metadata?.labels?.[ROLE_LABEL] === 'replica')?.metadata?.name;
    const replica = fromStatus ?? labelled;
    if (!replica) throw new UserError(`${name} has no replica serving reads (status.instances)`);
    return replica;
  }
  if (status?.currentPrimary) {
    if (!podNames.includes(status.currentPrimary))
      throw new UserError(`the primary of ${name}, ${status.currentPrimary}, has no Pod now`);
    return status.currentPrimary;
  }
  const labelled = pods.find((p) => p.metadata?.labels?.[ROLE_LABEL] === 'primary')?.metadata?.name;
  if (labelled) return labelled;
  if ((status?.instances?.length ?? 0) > 1)
    throw new UserError(
      `${name} has no serving primary now: name an instance with --instance, or use --replica`,
    );
  const first = podNames[0];
  if (!first) throw new UserError(`${name} has no instance Pods`);
  return first;
}

export async function runClient(env: CommandEnv, req: ClientRequest): Promise<number> {
  const { kind: kindWord, engines } = CLIENT_OF[req.client];
  const kind: KindInfo = kindOf(kindWord);
  const object = await getObject<DatabaseObject | CacheObject>(env, kind, req.object);
  const engine = object.spec.engine;
  if (!engines.includes(engine))
    throw new UserError(
      `${kind.kind} "${req.object}" runs ${engine}${COMMAND_FOR[engine] ? `: use kubectl regulon ${COMMAND_FOR[engine]} ${req.object}` : ', which has no client to run'}`,
    );
  const { items } = await env.client.resource<V1Pod>(Kinds.Pod).listAll({
    namespace: env.namespace,
    labelSelector: kind.podSelector(object),
    signal: env.signal,
  });
  const pods = items.filter((p) => !p.metadata?.deletionTimestamp);
  const pod = pickInstance(object, pods, req);
  const independent = !object.status?.currentPrimary;
  if (independent && pods.length > 1 && !req.instance && !req.replica)
    env.err(`connecting to ${pod}, one of ${pods.length} independent instances (pick one with --instance)\n`);
  const args = kubectlExecArgs({
    global: env.global,
    namespace: env.namespace,
    pod,
    container: engine,
    tty: env.stdinIsTTY,
    command: containerCommand(engine, req.args),
  });
  return env.spawn('kubectl', args);
}
