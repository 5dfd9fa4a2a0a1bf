import { findCondition, type Condition } from '@regulon/runtime';

/** The summary phases every Regulon kind reports. */
export type Phase = 'Pending' | 'Provisioning' | 'Ready' | 'Updating' | 'Degraded';

/**
 * Derives the phase from the conditions, so the two can never disagree:
 * Degraded=True wins; then Ready=True; otherwise Updating if the resource
 * has been ready before (it has a current version/generation), Provisioning
 * if it is on its way for the first time, Pending if nothing is known yet.
 * The phase is `Ready` exactly when the Ready condition is True (unless
 * Degraded is True, in which case Ready is False too).
 */
export function derivePhase(conditions: readonly Condition[], everReady: boolean): Phase {
  if (findCondition(conditions, 'Degraded')?.status === 'True') return 'Degraded';
  const ready = findCondition(conditions, 'Ready');
  if (ready?.status === 'True') return 'Ready';
  if (!ready || ready.status === 'Unknown') return 'Pending';
  return everReady ? 'Updating' : 'Provisioning';
}
