// The engines whose metrics the agent publishes, each by what its metrics
// command prints (--metrics-engine names one).
import type { EngineReading } from './exposition.ts';
import { redisReading } from './redis.ts';

export const METRICS_ENGINES: Readonly<Record<string, (output: string) => EngineReading | undefined>> = {
  redis: redisReading,
};
