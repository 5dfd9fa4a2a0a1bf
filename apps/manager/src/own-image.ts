import { Kinds, type KubeClient } from '@regulon/client';
import { ownNamespace } from '@regulon/options';

/**
 * `--instance-agent-image=self`: the instance agent comes from the image the
 * manager runs. deploy/ says so rather than naming the image twice, because
 * an overlay's `images:` rewrites a container's image but not a variable, and
 * an agent copied from another build than the manager's would speak another
 * version of their contract.
 */
export const OWN_IMAGE = 'self';

/** The container of the manager's Pod whose image it names: `manager`, or the Pod's only one. */
export const MANAGER_CONTAINER = 'manager';

/**
 * The image of the manager's own container, read from its Pod (POD_NAME and
 * POD_NAMESPACE, from the downward API). Throws saying what is missing: the
 * manager then does not start, rather than run its engines without the agent
 * it was told to give them.
 */
export async function ownImage(
  client: KubeClient,
  env: NodeJS.ProcessEnv,
  signal?: AbortSignal,
): Promise<string> {
  const name = env['POD_NAME'];
  if (!name)
    throw new Error(
      `--instance-agent-image=${OWN_IMAGE} reads the manager's own Pod: set POD_NAME from the downward API (metadata.name), or name the image`,
    );
  const namespace = ownNamespace(env);
  const pod = await client.resource(Kinds.Pod).get(name, { namespace, ...(signal ? { signal } : {}) });
  const containers = pod.spec?.containers ?? [];
  const own =
    containers.find((c) => c.name === MANAGER_CONTAINER) ??
    (containers.length === 1 ? containers[0] : undefined);
  if (!own?.image)
    throw new Error(
      `--instance-agent-image=${OWN_IMAGE}: the Pod ${namespace}/${name} has no container named "${MANAGER_CONTAINER}" and more than one container (${containers.map((c) => c.name).join(', ')}): name the image`,
    );
  return own.image;
}
