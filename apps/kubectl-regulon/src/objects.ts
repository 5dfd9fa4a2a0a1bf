// Reading the object a command names, with the message a person needs when it
// is not there.
import { ApiError, isNotFound, retyped, type KubeObject } from '@regulon/client';
import type { CommandEnv } from './env.ts';
import { UserError } from './errors.ts';
import type { KindInfo } from './kinds.ts';

export async function getObject<T extends KubeObject>(
  env: CommandEnv,
  kind: KindInfo,
  name: string,
): Promise<T> {
  try {
    return await env.client
      .resource(retyped<T>(kind.type))
      .get(name, { namespace: env.namespace, signal: env.signal });
  } catch (err) {
    if (isNotFound(err)) throw notFound(err, kind, name, env.namespace);
    throw err;
  }
}

/**
 * The API server's own words (`databases.regulon.dev "x" not found`) do not
 * say where it looked, and a 404 without the object's name in its details is
 * a resource the server does not serve at all: the CRD is not installed.
 */
function notFound(err: unknown, kind: KindInfo, name: string, namespace: string): UserError {
  const details = err instanceof ApiError ? err.status.details : undefined;
  if (details?.name === undefined)
    return new UserError(
      `the API server does not serve ${kind.type.plural}.${kind.type.group}: is Regulon's ${kind.kind} CRD installed?`,
    );
  return new UserError(`${kind.kind} "${name}" not found in namespace "${namespace}"`);
}
