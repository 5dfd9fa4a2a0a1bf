import type { DatabaseObject } from './api.ts';
import { engineOf } from './engines/index.ts';
import { PARAMETER_LIMITS, parameterProblem } from './parameters.ts';

/**
 * spec.parameters that can't be written to the engine's configuration file.
 * The CRD rejects them at admission; this catches objects stored before it
 * did. The reconciler reports it as Degraded (reason `InvalidParameters`) and
 * applies nothing, so the running configuration stays the last good one.
 */
export class InvalidParametersError extends Error {
  readonly reason = 'InvalidParameters';
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`spec.parameters: ${problems.join('; ')}. Fix spec.parameters; nothing was applied.`);
    this.name = 'InvalidParametersError';
    this.problems = problems;
  }
}

/**
 * The engine's configuration file from spec.parameters, one setting per line
 * after the operator's own; reserved settings are the operator's. Throws
 * {@link InvalidParametersError} rather than write a line that could end early
 * or set something reserved: the engine writes each value in its own syntax
 * (postgres/config.ts, mariadb/start-script.ts, mysql/config.ts), and only
 * names and values checked here reach it.
 */
export function renderConfig(db: DatabaseObject): { file: string; content: string } {
  const engine = db.spec.engine;
  const params = Object.entries(db.spec.parameters ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const problems = params.flatMap(([k, v]) => parameterProblem(engine, k, v) ?? []);
  if (params.length > PARAMETER_LIMITS.maxEntries)
    problems.unshift(`${params.length} entries, at most ${PARAMETER_LIMITS.maxEntries} are allowed`);
  if (problems.length) throw new InvalidParametersError(problems);
  return engineOf(db).configFile(db, params);
}
