// Per-controller switches: an enabled flag and a concurrency for each
// controller the binary can run, named after the controller.
import { KEBAB, checkSpec, type OptionSpec } from './spec.ts';

export interface ControllerOptionsDefaults {
  /** Default true. */
  enabled?: boolean;
  /** Default 1. */
  concurrency?: number;
  /** Prefix of the environment variables; default `REGULON`. */
  envPrefix?: string;
}

type CamelCase<S extends string> = S extends `${infer Head}-${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;

interface BooleanOption extends OptionSpec {
  readonly type: 'boolean';
  readonly default: boolean;
}
interface IntegerOption extends OptionSpec {
  readonly type: 'integer';
  readonly default: number;
}
export type ControllerOptions<N extends string> = {
  readonly [K in N as `${CamelCase<K>}Enabled`]: BooleanOption;
} & { readonly [K in N as `${CamelCase<K>}Concurrency`]: IntegerOption };

export const MAX_CONTROLLER_CONCURRENCY = 64;

/**
 * The camelCase key of a kebab-case name: each hyphen dropped and the
 * character after it upper-cased (`my-app` → `myApp`), as the CamelCase type
 * above does, so that ConfigOf's keys are the keys at run time. A digit has
 * no upper case: `redis-2` → `redis2`, the same key as the name `redis2`'s.
 * So the mapping has no inverse on strings (a camelCase key cannot tell
 * where a hyphen was): the kebab-case name is what a controller is known by,
 * flags and variables keep its hyphens (`--redis-2-enabled`,
 * `REGULON_REDIS_2_ENABLED`), and controllerOptions refuses two names that
 * share a key, so within one binary each key leads back to one name.
 * The one conversion: everything that finds a controller's options by its
 * name (the manager, the generated manifests) goes through
 * {@link controllerOptionKeys}.
 */
export function camelCaseKey(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The keys, in a config from {@link controllerOptions}, of the options of the controller `name`. */
export function controllerOptionKeys(name: string): { enabled: string; concurrency: string } {
  const key = camelCaseKey(name);
  return { enabled: `${key}Enabled`, concurrency: `${key}Concurrency` };
}

/** The controllers `config` switches on, each with its concurrency; found by the one name-to-key conversion. */
export function enabledControllers<C extends { name: string }>(
  config: object,
  controllers: readonly C[],
): Array<{ controller: C; concurrency: number }> {
  const values = config as Readonly<Record<string, unknown>>;
  return controllers.flatMap((controller) => {
    const keys = controllerOptionKeys(controller.name);
    return values[keys.enabled] === true
      ? [{ controller, concurrency: Number(values[keys.concurrency]) }]
      : [];
  });
}

/**
 * Per-controller switches, to spread into a spec: for a controller `my-app`,
 * `myAppEnabled` (`--my-app-enabled`, `REGULON_MY_APP_ENABLED`) and
 * `myAppConcurrency` (`--my-app-concurrency`, `REGULON_MY_APP_CONCURRENCY`,
 * 1..{@link MAX_CONTROLLER_CONCURRENCY}). Names are lowercase kebab-case.
 */
export function controllerOptions<const N extends readonly string[]>(
  names: N,
  defaults: ControllerOptionsDefaults = {},
): ControllerOptions<N[number]> {
  const prefix = defaults.envPrefix ?? 'REGULON';
  const options: Record<string, OptionSpec> = {};
  const byKey = new Map<string, string>();
  for (const name of names) {
    if (!KEBAB.test(name)) throw new TypeError(`controller name "${name}" must be lowercase kebab-case`);
    const keys = controllerOptionKeys(name);
    const other = byKey.get(keys.enabled);
    if (other === name) throw new TypeError(`controller "${name}" is listed twice`);
    if (other !== undefined)
      throw new TypeError(
        `controllers "${other}" and "${name}" would share the option ${keys.enabled}: rename one`,
      );
    byKey.set(keys.enabled, name);
    const env = `${prefix}_${name.toUpperCase().replaceAll('-', '_')}`;
    options[keys.enabled] = {
      flag: `${name}-enabled`,
      env: `${env}_ENABLED`,
      type: 'boolean',
      default: defaults.enabled ?? true,
      description: `Run the ${name} controller.`,
    };
    options[keys.concurrency] = {
      flag: `${name}-concurrency`,
      env: `${env}_CONCURRENCY`,
      type: 'integer',
      default: defaults.concurrency ?? 1,
      min: 1,
      max: MAX_CONTROLLER_CONCURRENCY,
      description: `Reconciles the ${name} controller runs at once.`,
    };
  }
  checkSpec(options, {});
  return options as ControllerOptions<N[number]>;
}
