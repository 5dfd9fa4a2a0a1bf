import { primaryLeaseName, recommendedLabels } from '@regulon/conventions';
import type { DatabaseObject } from './api.ts';

/**
 * The longest Database name whose derived names stay valid: a CronJob's Jobs
 * append 11 characters to a 52-character limit, and `<name>-backup` must fit.
 */
export const MAX_NAME_LENGTH = 45;

/** The most instances a Database runs (spec.replicas): ordinals 0 to MAX_REPLICAS - 1. */
export const MAX_REPLICAS = 5;

/**
 * In synchronous mode, how many standbys confirm each commit (postgres: `ANY 1 (…)`; mariadb:
 * rpl_semi_sync_master_wait_for_slave_count's default). A failover counts its quorum with it.
 */
export const SYNCHRONOUS_CONFIRMATIONS = 1;

export interface ChildNames {
  statefulSet: string;
  headlessService: string;
  clientService: string;
  readOnlyService: string;
  credentials: string;
  config: string;
  serviceAccount: string;
  disruptionBudget: string;
  backup: string;
  /** Which instance is the primary (replication/plan.ts); read by the Pods when they start. */
  topology: string;
  /** The replication role's password, generated once (postgres). */
  replicationCredentials: string;
  /** spec.bootstrap.recovery resolved once: the source repository's settings and keys (postgres). */
  recovery: string;
  /** The primary Lease the instance agents hold (see @regulon/instance-agent). */
  primaryLease: string;
  /** The Role and RoleBinding that let the instances' service account renew that Lease. */
  agentRole: string;
}

export function childNames(db: DatabaseObject): ChildNames {
  const n = db.metadata.name!;
  return {
    statefulSet: n,
    headlessService: `${n}-hl`,
    clientService: n,
    readOnlyService: `${n}-ro`,
    credentials: db.spec.credentials?.secretName ?? `${n}-credentials`,
    config: `${n}-config`,
    serviceAccount: n,
    disruptionBudget: n,
    backup: `${n}-backup`,
    topology: `${n}-topology`,
    replicationCredentials: `${n}-replication`,
    recovery: `${n}-recovery`,
    primaryLease: primaryLeaseName(n),
    agentRole: `${n}-instance-agent`,
  };
}

/** The recommended app.kubernetes.io labels. */
export function labels(db: DatabaseObject): Record<string, string> {
  return recommendedLabels({
    name: db.spec.engine,
    instance: db.metadata.name!,
    version: db.spec.version,
    component: 'database',
  });
}

export function selector(db: DatabaseObject): Record<string, string> {
  return { 'app.kubernetes.io/name': db.spec.engine, 'app.kubernetes.io/instance': db.metadata.name! };
}

/** The Pod of ordinal `i`. */
export function podName(db: DatabaseObject, i: number): string {
  return `${db.metadata.name!}-${i}`;
}

/** The ordinal of a Pod of this Database, from its name. */
export function ordinalOf(db: DatabaseObject, pod: string): number {
  return Number(pod.slice(db.metadata.name!.length + 1));
}

/** The Pod label the primary carries, and the Services select on (shared with the replication plan). */
export { ROLE_LABEL } from '@regulon/conventions';
