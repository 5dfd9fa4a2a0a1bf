/**
 * What the manager asks a redis instance, over redis's own protocol (the
 * `redis` client, node-redis, loaded on first use: a manager whose Caches
 * are all standalone never loads it). One connection per question, closed
 * after it; the password is only ever in the connection's AUTH.
 */
import type { Server } from '@regulon/conventions';

export interface Endpoint {
  host: string;
  port: number;
  /** undefined: auth is off. Read once per reconcile, never kept past it. */
  password: string | undefined;
}

/** The `replication` section of INFO, as far as the plan and the status need it. */
export interface ReplicationInfo {
  role: 'master' | 'slave';
  /** master_repl_offset: the primary's write position, or how far a replica has got. */
  offset: bigint;
  /** A replica: whether its link to the primary is up. */
  linkUp: boolean;
  /** A replica: the primary it follows, as configured (a host name or an address). */
  masterHost: string | undefined;
  connectedReplicas: number;
  /**
   * A primary with min-replicas-to-write: the replicas that acknowledged within
   * min-replicas-max-lag, which it counts before it accepts a write. Its own
   * view, not a replica's (a replica notices a cut link only after repl-timeout).
   */
  goodReplicas: number | undefined;
}

export type Observation =
  { reachable: true; info: ReplicationInfo; server: Server } | { reachable: false; error: string };

/** Parses INFO replication (`field:value` lines). */
export function parseReplicationInfo(text: string): ReplicationInfo {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0) fields.set(line.slice(0, i), line.slice(i + 1).trim());
  }
  const role = fields.get('role');
  if (role !== 'master' && role !== 'slave')
    throw new Error(`INFO replication has no role: ${text.slice(0, 200)}`);
  // A replica's slave_repl_offset is what it has processed; master_repl_offset the same once it has synced.
  const offset = BigInt(fields.get(role === 'slave' ? 'slave_repl_offset' : 'master_repl_offset') ?? '0');
  return {
    role,
    offset,
    linkUp: fields.get('master_link_status') === 'up',
    masterHost: fields.get('master_host'),
    connectedReplicas: Number(fields.get('connected_slaves') ?? '0'),
    goodReplicas: fields.has('min_slaves_good_slaves')
      ? Number(fields.get('min_slaves_good_slaves'))
      : undefined,
  };
}

/**
 * The engine-neutral view the replication plan decides on. Redis has no data
 * set identity that survives a promotion (a new primary takes a new replid), so
 * `systemId` is empty and never compared; offsets are bytes of the replication
 * stream, continued by a promoted replica (PSYNC2).
 */
export function toServer(info: ReplicationInfo): Server {
  return {
    writable: info.role === 'master',
    systemId: '',
    timeline: 0,
    lsn: info.offset,
    replayLsn: info.offset,
    streaming: info.role === 'slave' && info.linkUp,
  };
}

const TIMEOUT_MS = 2000;
/** The bound of one connection's whole exchange: connect, AUTH, and the question. */
const EXCHANGE_TIMEOUT_MS = 2 * TIMEOUT_MS;

async function withRedis<T>(
  e: Endpoint,
  run: (send: (args: string[]) => Promise<unknown>) => Promise<T>,
): Promise<T> {
  const { createClient } = await import('redis');
  const client = createClient({
    socket: { host: e.host, port: e.port, connectTimeout: TIMEOUT_MS, reconnectStrategy: false },
    ...(e.password !== undefined ? { password: e.password } : {}),
    disableClientInfo: true,
  });
  // Connection errors reject connect() or the command; without a listener the client would throw them again.
  client.on('error', () => undefined);
  // connectTimeout bounds the TCP connect only, not the handshake after it (AUTH): a hung server
  // (SIGSTOP) accepts the connection in its kernel and never answers, which held a reconcile, and
  // with it every failover, until the container was killed. The whole exchange has one deadline.
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${EXCHANGE_TIMEOUT_MS} ms`)),
      EXCHANGE_TIMEOUT_MS,
    );
  });
  const exchange = (async () => {
    await client.connect();
    return run((args) => client.sendCommand(args, { timeout: TIMEOUT_MS }));
  })();
  exchange.catch(() => undefined);
  try {
    return await Promise.race([exchange, late]);
  } finally {
    clearTimeout(timer);
    client.destroy();
  }
}

export async function observe(e: Endpoint): Promise<Observation> {
  try {
    const text = await withRedis(e, (send) => send(['INFO', 'replication']));
    const info = parseReplicationInfo(String(text));
    return { reachable: true, info, server: toServer(info) };
  } catch (err) {
    // Never the password: node-redis errors name the command and the server's reply only.
    return { reachable: false, error: (err as Error).message };
  }
}

/** Makes a replica the primary: it keeps its data and offset, and stops following. */
export async function promote(e: Endpoint): Promise<void> {
  await withRedis(e, (send) => send(['REPLICAOF', 'NO', 'ONE']));
}

/** Points a replica (or a stray primary) at `primaryHost`. */
export async function follow(e: Endpoint, primaryHost: string, port: number): Promise<void> {
  await withRedis(e, (send) => send(['REPLICAOF', primaryHost, String(port)]));
}
