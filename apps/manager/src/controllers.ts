import { setupDatabaseController } from '@regulon/database-controller';
import type { Manager } from '@regulon/runtime';

/** Every controller the manager can run, by the name its feature flags use. */
export interface ControllerRegistration {
  name: string;
  description: string;
  setup(mgr: Manager, options: { maxConcurrentReconciles: number }): void;
}

export const CONTROLLERS: readonly ControllerRegistration[] = [
  { name: 'database', description: 'Database: postgres/mysql StatefulSets', setup: setupDatabaseController },
];
