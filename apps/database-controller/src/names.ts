import { recommendedLabels } from '@regulon/conventions';
import type { DatabaseObject } from './api.ts';

/**
 * The longest Database name whose derived names stay valid: a CronJob's Jobs
 * append 11 characters to a 52-character limit, and `<name>-backup` must fit.
 */
export const MAX_NAME_LENGTH = 45;

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

/** The Pod label the primary carries, and the Services select on. */
export const ROLE_LABEL = 'regulon.dev/role';
