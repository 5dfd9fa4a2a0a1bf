// Fault scenarios that run one fault against every engine at once: each engine's Database in a
// namespace of its own, set up side by side, the fault made once (a machine has one second node),
// and each Database checked on its own, a failure naming its engine. What such a scenario asks of
// a Database under test is here: its status, its Events, a paced writer, a role sampler, its rows.
import { basename } from 'node:path';
import type { EventsV1Event } from '@kubernetes/client-node';
import { Kinds, type KubeClient } from '@regulon/client';
import type { Condition } from '@regulon/runtime';
import {
  eventTimeline,
  eventually,
  localImageCatalog,
  podServerPid,
  type RoleSampler,
} from '@regulon/testenv';
import { Database, type DatabaseObject } from '../api.ts';
import { statusSummary } from './replication-suite.ts';
import {
  lostWrites,
  readReplicaRows,
  startDatabaseSampler,
  startWriter,
  type WorkloadEngine,
  type Writer,
} from './workload.ts';

/** An engine's container and how its serving server looks among the container's processes. */
export interface EngineCase {
  engine: WorkloadEngine;
  container: string;
  /** The serving server, not a process it runs beside (see podServerPid). */
  isServer: (argv: string[]) => boolean;
}

export const ENGINE_CASES: Readonly<Record<WorkloadEngine, EngineCase>> = {
  postgres: {
    engine: 'postgres',
    container: 'postgres',
    // The postmaster: its children rename themselves "postgres: ...".
    isServer: (argv) => argv[0] === 'postgres' && argv[1] === '-D',
  },
  mariadb: {
    engine: 'mariadb',
    container: 'mariadb',
    // Not the socket-only mariadbd the start script runs while it prepares a data directory.
    isServer: (argv) => basename(argv[0] ?? '') === 'mariadbd' && !argv.includes('--skip-networking'),
  },
};

/**
 * Runs `check` for every subject at once and waits for all of them; fails with each engine's
 * failure, named, when any failed (one engine's failure must not hide or cut short the other's).
 */
export async function forEachEngine<S extends { e: EngineCase }, T>(
  subjects: readonly S[],
  check: (s: S) => Promise<T>,
): Promise<T[]> {
  const settled = await Promise.allSettled(subjects.map(check));
  const failed = settled.flatMap((r, i) =>
    r.status === 'rejected' ? [`${subjects[i]!.e.engine}: ${(r.reason as Error)?.message ?? r.reason}`] : [],
  );
  if (failed.length) throw new Error(failed.join('\n'));
  return settled.map((r) => (r as PromiseFulfilledResult<T>).value);
}

export const cond = (db: DatabaseObject, type: string): Condition | undefined =>
  db.status?.conditions?.find((c) => c.type === type);

/** Ready, replicating, and every other instance a replica. */
export const healthy = (db: DatabaseObject): boolean =>
  cond(db, 'Ready')?.status === 'True' &&
  cond(db, 'ReplicationHealthy')?.status === 'True' &&
  db.status?.instances?.filter((i) => i.role === 'replica').length === db.spec.replicas - 1;

export type DatabaseUnderTest = ReturnType<typeof databaseUnderTest<EngineCase>>;

/** Database `name` of engine `e` in namespace `ns`, with what the scenarios ask of it. */
export function databaseUnderTest<E extends EngineCase>(client: KubeClient, e: E, ns: string, name: string) {
  const dbs = () => client.resource(Database);
  const get = () => dbs().get(name, { namespace: ns });
  /** The Database once its status describes its spec and `check` holds; on a timeout, its status. */
  const until = (what: string, check: (db: DatabaseObject) => boolean, timeoutMs = 180_000) =>
    eventually(
      what,
      async () => {
        const db = await get();
        return db.status?.observedGeneration === db.metadata.generation && check(db) ? db : undefined;
      },
      timeoutMs,
    ).catch(async (err: Error) => {
      err.message += `\n${statusSummary((await get().catch(() => undefined))?.status).join('\n')}`;
      throw err;
    });
  /** The namespace's Events since a moment, as `+seconds object reason: message`: what a slow failover did. */
  const timeline = async (fromMs: number) =>
    eventTimeline((await client.resource<EventsV1Event>(Kinds.Event).list({ namespace: ns })).items, fromMs);
  const rows = () => readReplicaRows({ client, namespace: ns, db: name, engine: e.engine });

  const s = {
    e,
    ns,
    name,
    pod: (ordinal: number) => `${name}-${ordinal}`,
    dbs,
    get,
    until,
    timeline,
    rows,
    writer: undefined as Writer | undefined,
    /** The host PID of the server of the Pod with uid `uid`, once it runs (this host sees every node's processes). */
    server: (uid: string) =>
      eventually(`${e.engine}'s server`, () => Promise.resolve(podServerPid(uid, e.isServer))),
    /** Starts sampling the instances' roles; `samplers` stops it at the scenario's end, whatever happens. */
    sampler: async (samplers: RoleSampler[]) => {
      const sampler = await startDatabaseSampler({ client, namespace: ns, db: name, engine: e.engine });
      samplers.push(sampler);
      return sampler;
    },

    /**
     * Three synchronous instances, replicating under a paced write load. `divergedData`: what a
     * former primary holding commits no standby confirmed does on its return (default the engine's).
     */
    async create(o: { divergedData?: 'Discard' | 'Keep' } = {}) {
      await dbs().create(
        Database.object({
          metadata: { name, namespace: ns },
          spec: {
            engine: e.engine,
            version: (await localImageCatalog())[e.engine]![0]!.version,
            replicas: 3,
            storage: { size: '1Gi' },
            backup: { enabled: false, schedule: '0 3 * * *', historyLimit: 1 },
            replication: {
              synchronous: true,
              failoverDelaySeconds: 5,
              ...(o.divergedData ? { divergedData: o.divergedData } : {}),
            },
          },
        }),
      );
      await until('three instances replicating', healthy, 300_000);
      // Paced as the replication suite's: a session per write, unpaced, takes a core.
      s.writer = await startWriter({ client, namespace: ns, db: name, engine: e.engine, maxPerSecond: 10 });
      await s.writer.waitForAcks(100, 120_000);
    },

    /**
     * Waits for a write acknowledged after `sinceMs`, when `newPrimary` took over. Writes go
     * through the client Service and, being synchronous, wait for a standby of the new primary:
     * on a timeout, the status, the writer's errors and the Events since `faultAt` say which was
     * missing.
     */
    writesResume: (sinceMs: number, newPrimary: string, faultAt: number) =>
      s.writer!.waitForAckAfter(sinceMs, 90_000).catch(async (err: Error) => {
        const failures = (await s.writer!.log()).failures.filter((f) => f.atMs >= sinceMs);
        const said = [
          ...new Set(failures.map((f) => `exit ${f.exitCode}${f.message ? ` ${f.message}` : ''}`)),
        ];
        err.message +=
          `\n${statusSummary((await get().catch(() => undefined))?.status).join('\n')}` +
          `\nwriter since ${newPrimary} took over: ${failures.length} failed, ${said.slice(-3).join(' | ')}` +
          `\nevents: ${await timeline(faultAt)}`;
        throw err;
      }),

    /** Every write acknowledged so far is on every instance, once 50 more were acknowledged. */
    async nothingLost(): Promise<number> {
      await s.writer!.waitForAcks((await s.writer!.acked()).length + 50, 60_000);
      const acked = await s.writer!.acked();
      await eventually('every acknowledged write on every instance', async () => {
        const found = await rows();
        return found.length === 3 && found.every((r) => r.ids && lostWrites(acked, r.ids).length === 0);
      });
      return acked.length;
    },
  };
  return s;
}
