// Where the Pods reach the API server, for a real-node test that cuts an
// instance off from it (@regulon/testenv's cutPodOffFrom), and the
// EndpointSlice kind that answers it, which both apps' tests read.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { Kinds, type KubeClient, type ResourceType } from '@regulon/client';

export const EndpointSlices: ResourceType<V1EndpointSlice> = Object.freeze({
  group: 'discovery.k8s.io',
  version: 'v1',
  kind: 'EndpointSlice',
  plural: 'endpointslices',
  namespaced: true,
});

/** What the Pods dial for the API server: the kubernetes Service's address, and the addresses behind it. */
export async function apiServerAddresses(client: KubeClient): Promise<string[]> {
  const api = await client.resource(Kinds.Service).get('kubernetes', { namespace: 'default' });
  const slices = await client
    .resource(EndpointSlices)
    .list({ namespace: 'default', labelSelector: 'kubernetes.io/service-name=kubernetes' });
  return [
    api.spec!.clusterIP!,
    ...slices.items.flatMap((s) => s.endpoints?.flatMap((e) => e.addresses) ?? []),
  ];
}
