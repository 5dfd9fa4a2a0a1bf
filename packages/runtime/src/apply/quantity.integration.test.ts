// canonicalQuantity against the real API server: every spelling is stored,
// read back, and must come back exactly as canonicalQuantity predicts. This
// is what lets applyChild take a live `1Gi` for the desired `1024Mi`.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KubeClient, retyped, type KubeObject, type ResourceType } from '@regulon/client';
import { start, type TestEnv } from '@regulon/testenv';
import { canonicalQuantity } from './quantity.ts';

// Non-negative (both fields refuse negatives), in every format and every rule: binary, decimal,
// none, exponent; rounding; the fast path that keeps a spelling; the int64 cap.
const SPELLINGS = [
  ...['1024Mi', '1Gi', '0.5Gi', '1536Mi', '1.5Gi', '2048Ki', '1048576Ki', '1.5Ki', '0.5Ki', '0.0001Ki'],
  ...['1.0000000001Ki', '3Ki', '1500Ki', '8Ki', '1023', '1024', '1000m', '1500m', '100m', '0.1', '1.5'],
  ...['1000', '2000', '1500', '10000000', '1073741824', '268435456', '1000M', '0.001G', '12E', '01'],
  ...['1e3', '10e3', '1e1', '1E2', '1e-3', '100e-3', '1.5e3', '0.1n', '1e-20', '0Gi', '0', '0m', '+1'],
  ...['+1Gi', '5.', '.5', '1.50', '1.500', '12.000', '7T', '1P', '123456789', '0.000001', '1u', '1000u'],
  ...['1000000n', '1234567890123456789', '8Ei', '9Ei', '0.5Mi', '1.25Ti'],
];

const RESOURCE_QUOTA: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'ResourceQuota',
  plural: 'resourcequotas',
  namespaced: true,
};
const POD_TEMPLATE: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'PodTemplate',
  plural: 'podtemplates',
  namespaced: true,
};

let env: TestEnv;
let client: KubeClient;
let ns: string;
before(async () => {
  env = await start();
  client = KubeClient.fromKubeConfig(env.kubeConfig);
  ns = await env.newNamespace('quantity');
});
after(async () => {
  client.close();
  await env.stop();
});

const mismatches = (stored: (i: number) => string | undefined, milli: boolean) =>
  SPELLINGS.flatMap((q, i) => {
    const predicted = canonicalQuantity(q, { milli });
    return predicted === stored(i) ? [] : [`${q}: server ${stored(i)}, canonicalQuantity ${predicted}`];
  });

test('canonicalQuantity spells a ResourceList value (requests, limits, quotas) as the API server stores it', async () => {
  // spec.hard is a ResourceList; `requests.<domain>/<name>` keys need not be whole numbers.
  const key = (i: number) => `requests.example.com/q${i}`;
  type Quota = KubeObject & { spec: { hard: Record<string, string> } };
  const created = await client.resource(retyped<Quota>(RESOURCE_QUOTA)).create({
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: 'spellings', namespace: ns },
    spec: { hard: Object.fromEntries(SPELLINGS.map((q, i) => [key(i), q])) },
  });
  assert.deepEqual(
    mismatches((i) => created.spec.hard[key(i)], true),
    [],
  );
});

test('canonicalQuantity spells any other quantity (an emptyDir sizeLimit) as the API server stores it', async () => {
  type Template = KubeObject & {
    template: { spec: { volumes: Array<{ name: string; emptyDir: { sizeLimit?: string } }> } };
  };
  const created = await client.resource(retyped<Template>(POD_TEMPLATE)).create({
    apiVersion: 'v1',
    kind: 'PodTemplate',
    metadata: { name: 'spellings', namespace: ns },
    template: {
      spec: {
        containers: [{ name: 'c', image: 'busybox' }],
        volumes: SPELLINGS.map((q, i) => ({ name: `v${i}`, emptyDir: { sizeLimit: q } })),
      },
    },
  } as Template);
  const volumes = created.template.spec.volumes;
  assert.deepEqual(
    mismatches((i) => volumes[i]?.emptyDir.sizeLimit, false),
    [],
  );
});
