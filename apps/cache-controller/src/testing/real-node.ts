// What the real-node tests of the Cache share: the client image and its Pod,
// kubectl in the test's namespace, and where a Service sends connections.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { V1EnvVar, V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '@regulon/client';
import { EndpointSlices } from '@regulon/conventions';
import type { Condition } from '@regulon/runtime';
import type { TestEnv } from '@regulon/testenv';
import type { CacheObject } from '../api.ts';

const run = promisify(execFile);

/** redis-cli, bash and coreutils (tools/images/recipes/client.sh). */
export const CLIENT_IMAGE = 'regulon.local/client:12';

export const cond = (c: CacheObject, type: string): Condition | undefined =>
  c.status?.conditions?.find((x) => x.type === type);

/** kubectl against the test environment, in namespace `ns`; its stdout. */
export const kubectlIn =
  (env: TestEnv, ns: string) =>
  async (args: string[], timeout = 120_000): Promise<string> =>
    (
      await run(env.controlPlane.state.kubectl, ['--kubeconfig', env.kubeconfigPath, '-n', ns, ...args], {
        maxBuffer: 64 << 20,
        timeout,
      })
    ).stdout;

/** A restricted Pod of the client image that runs until deleted, with `env`. */
export function clientPod(name: string, namespace: string, env: V1EnvVar[]): V1Pod {
  return {
    metadata: { name, namespace },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 65534, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'client',
          image: CLIENT_IMAGE,
          env,
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
    },
  };
}

/** The Pods (uids) a Service sends connections to: its ready endpoints. */
export async function serviceTargets(client: KubeClient, ns: string, service: string): Promise<string[]> {
  const slices = await client
    .resource(EndpointSlices)
    .list({ namespace: ns, labelSelector: `kubernetes.io/service-name=${service}` });
  return slices.items
    .flatMap((s) => s.endpoints ?? [])
    .filter((e) => e.conditions?.ready !== false)
    .flatMap((e) => (e.targetRef?.uid ? [e.targetRef.uid] : []))
    .sort();
}
