// metav1.Condition helpers with apimachinery's meta.SetStatusCondition
// semantics. Pure functions: they never mutate their input, so a reconciler can
// compare the conditions it read with the ones it computed to decide whether a
// status write is needed at all.
import { metaTime, truncateUtf8 } from '../support.ts';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** metav1.Condition as it appears in JSON. */
export interface Condition {
  type: string;
  status: ConditionStatus;
  /**
   * The `.metadata.generation` the condition was computed from. Absent, never
   * undefined: so a condition fits the status schema a kind declares
   * (metav1.Condition's), also under exactOptionalPropertyTypes.
   */
  observedGeneration?: number;
  /** RFC 3339, second precision: when `status` last changed. */
  lastTransitionTime: string;
  /** CamelCase, machine-readable. */
  reason: string;
  message: string;
}

/** What a controller states about one condition; the transition time is derived. */
export interface ConditionUpdate {
  type: string;
  status: ConditionStatus;
  reason: string;
  message?: string | undefined;
  observedGeneration?: number | undefined;
}

/** metav1.Condition's reason pattern: CamelCase, starting with a letter. */
export const CONDITION_REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
/** metav1.Condition's maxLength on reason. */
export const CONDITION_REASON_MAX_LENGTH = 1024;
/** metav1.Condition's maxLength on message; longer messages are cut, not rejected. */
export const CONDITION_MESSAGE_MAX_BYTES = 32_768;
/** metav1.Condition's maxLength on type. */
export const CONDITION_TYPE_MAX_LENGTH = 316;

// metav1.Condition's type pattern: an optional DNS-subdomain prefix, then a qualified name.
const TYPE_PATTERN =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;
const STATUSES: ReadonlySet<string> = new Set<ConditionStatus>(['True', 'False', 'Unknown']);

/** True when `reason` would pass the API's validation of metav1.Condition.reason. */
export function isValidConditionReason(reason: string): boolean {
  return reason.length <= CONDITION_REASON_MAX_LENGTH && CONDITION_REASON_PATTERN.test(reason);
}

/**
 * Returns a copy of `conditions` with `update` applied. An existing condition
 * of the same type keeps its position and its `lastTransitionTime` unless its
 * status changes; reason, message and observedGeneration are always taken from
 * `update` (an omitted observedGeneration clears it, as in apimachinery). A
 * new type is appended with `lastTransitionTime` = `now`.
 *
 * Throws TypeError for an invalid type, status or reason: the API server would
 * reject the whole status write, and such values are bugs in the caller, not
 * conditions of the cluster, so they should fail loudly and early.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  update: ConditionUpdate,
  now: Date = new Date(),
): Condition[] {
  validate(update);
  const message = truncateUtf8(update.message ?? '', CONDITION_MESSAGE_MAX_BYTES);
  const list = conditions ?? [];
  const i = list.findIndex((c) => c.type === update.type);
  const existing = i >= 0 ? list[i] : undefined;
  const next: Condition = {
    type: update.type,
    status: update.status,
    ...(update.observedGeneration !== undefined ? { observedGeneration: update.observedGeneration } : {}),
    lastTransitionTime:
      existing && existing.status === update.status && existing.lastTransitionTime
        ? existing.lastTransitionTime
        : metaTime(now),
    reason: update.reason,
    message,
  };
  if (!existing) return [...list.map(copy), next];
  return list.map((c, j) => (j === i ? next : copy(c)));
}

/** Returns a copy of `conditions` without the condition of `type`. */
export function removeCondition(conditions: readonly Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type).map(copy);
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

export function isConditionFalse(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'False';
}

/**
 * True when `conditions` already state `update`: the condition of its type
 * has the same status, reason and message (cut as setCondition cuts it).
 * What an Event that accompanies a condition is emitted on: the change, not
 * every reconcile that finds the same state. An event recorder aggregates
 * repeats only in memory, so a restarted manager, or a new leader, would
 * otherwise write one more Event per object for a state its status already
 * reports.
 */
export function conditionMatches(
  conditions: readonly Condition[] | undefined,
  update: ConditionUpdate,
): boolean {
  const c = findCondition(conditions, update.type);
  return (
    c !== undefined &&
    c.status === update.status &&
    c.reason === update.reason &&
    (c.message ?? '') === truncateUtf8(update.message ?? '', CONDITION_MESSAGE_MAX_BYTES)
  );
}

/**
 * True when both lists hold the same conditions, compared field by field
 * (transition times included) and regardless of order: a reordering alone is
 * not worth a status write. Missing lists equal empty ones.
 */
export function conditionsEqual(
  a: readonly Condition[] | undefined,
  b: readonly Condition[] | undefined,
): boolean {
  const left = a ?? [];
  const right = b ?? [];
  if (left.length !== right.length) return false;
  return left.every((x) => {
    const y = right.find((c) => c.type === x.type);
    return (
      y !== undefined &&
      x.status === y.status &&
      x.reason === y.reason &&
      (x.message ?? '') === (y.message ?? '') &&
      (x.observedGeneration ?? 0) === (y.observedGeneration ?? 0) &&
      x.lastTransitionTime === y.lastTransitionTime
    );
  });
}

function validate(u: ConditionUpdate): void {
  if (u.type.length === 0 || u.type.length > CONDITION_TYPE_MAX_LENGTH || !TYPE_PATTERN.test(u.type)) {
    throw new TypeError(
      `invalid condition type ${JSON.stringify(u.type)}: expected a qualified name such as Ready`,
    );
  }
  if (!STATUSES.has(u.status)) {
    throw new TypeError(
      `invalid status ${JSON.stringify(u.status)} for condition ${u.type}: expected True, False or Unknown`,
    );
  }
  if (!isValidConditionReason(u.reason)) {
    throw new TypeError(
      `invalid reason ${JSON.stringify(u.reason)} for condition ${u.type}: expected CamelCase matching ${String(CONDITION_REASON_PATTERN)}`,
    );
  }
  if (
    u.observedGeneration !== undefined &&
    !(Number.isSafeInteger(u.observedGeneration) && u.observedGeneration >= 0)
  ) {
    throw new TypeError(`invalid observedGeneration ${u.observedGeneration} for condition ${u.type}`);
  }
}

function copy(c: Condition): Condition {
  return { ...c };
}
