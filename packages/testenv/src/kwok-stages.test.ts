import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { shardDigits, shardVolumeStages } from './kwok-stages.ts';

const stage = (
  name: string,
  kind: string,
  expressions: string[],
  steps = STATUS_STEP,
) => `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: ${name}
spec:
  resourceRef:
    apiGroup: v1
    kind: ${kind}
  selector:
    matchExpressions:
${expressions.map((e) => `    - cel:\n        expression: ${JSON.stringify(e)}`).join('\n')}
${steps}`;

const STATUS_STEP = `  steps:
  - patch:
      root: status
      subresource: status
      template: |
        phase: Done
`;

// The shape of KWOK v0.8's pvc-provision Stage.
const PROVISION_STEPS = `  steps:
  - apply:
      template: |
        kind: PersistentVolume
        metadata:
          name: pvc-{{ .metadata.uid }}
        spec:
          capacity:
          {{ YAML .spec.resources.requests 2 }}
  - patch:
      root: metadata
      template: |
        annotations:
          pv.kubernetes.io/bind-completed: "yes"
  - patch:
      root: spec
      template: |
        volumeName: pvc-{{ .metadata.uid }}
  - patch:
      root: status
      subresource: status
      template: |
        phase: Bound
`;

const STAGES = [
  stage('node-ready', 'Node', ['true']),
  stage('pod-ready', 'Pod', ['true']),
  stage('pvc-provision', 'PersistentVolumeClaim', ['!has(self.spec.volumeName)'], PROVISION_STEPS),
  stage('pv-bind', 'PersistentVolume', ["self.status.phase != 'Bound'"]),
].join('---\n');

interface Step {
  apply?: { template: string };
  patch?: { root?: string; subresource?: string; template: string };
}
interface Parsed {
  metadata: { name: string };
  spec: { selector: { matchExpressions: Array<{ cel: { expression: string } }> }; steps: Step[] };
}
const parse = (yaml: string) => parseAllDocuments(yaml).map((d) => d.toJS() as Parsed);
const expressions = (s: Parsed) => s.spec.selector.matchExpressions.map((e) => e.cel.expression);

test('shards split the hex digits into contiguous parts that cover each digit once', () => {
  for (const shards of [1, 2, 3, 5, 8, 16]) {
    const parts = Array.from({ length: shards }, (_, i) => shardDigits(i, shards));
    assert.equal(parts.join(''), '0123456789abcdef', `${shards} shards`);
    const sizes = parts.map((p) => p.length);
    assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `${shards} shards: ${sizes.join(',')}`);
  }
});

test('one shard: the same Stages, but a claim is bound by one patch of its annotations and volumeName', () => {
  const { main, volumeOnly } = shardVolumeStages(STAGES, 1);
  assert.deepEqual(volumeOnly, []);
  const original = parse(STAGES);
  const stages = parse(main);
  assert.deepEqual(
    stages.filter((s) => s.metadata.name !== 'pvc-provision'),
    original.filter((s) => s.metadata.name !== 'pvc-provision'),
  );
  const provision = stages.find((s) => s.metadata.name === 'pvc-provision')!;
  const before = original.find((s) => s.metadata.name === 'pvc-provision')!;
  assert.deepEqual(provision.spec.selector, before.spec.selector);
  assert.deepEqual(provision.spec.steps, [
    before.spec.steps[0],
    {
      patch: {
        template:
          'metadata:\n  annotations:\n    pv.kubernetes.io/bind-completed: "yes"\nspec:\n  volumeName: pvc-{{ .metadata.uid }}\n',
      },
    },
    before.spec.steps[3],
  ]);
  // The apply's indentation-sensitive template survives the round trip byte for byte.
  assert.equal(provision.spec.steps[0]!.apply!.template, before.spec.steps[0]!.apply!.template);
});

test('a provisioning Stage of another shape is refused rather than rewritten wrongly', () => {
  const changed = stage(
    'pvc-provision',
    'PersistentVolumeClaim',
    ['true'],
    PROVISION_STEPS.replace('volumeName: pvc', 'volumeName: {{ YAML .x 1 }}pvc'),
  );
  assert.throws(() => shardVolumeStages(changed, 1), /pvc-provision Stage changed shape/);
});

test('volume stages are split by the claim UID; node and pod stages stay with the main KWOK', () => {
  const { main, volumeOnly } = shardVolumeStages(STAGES, 4);
  assert.equal(volumeOnly.length, 3);

  const mainStages = parse(main);
  assert.deepEqual(
    mainStages.map((s) => s.metadata.name),
    ['node-ready', 'pod-ready', 'pvc-provision', 'pv-bind'],
  );
  // Shard 0 takes what no other shard matches, so hand-made volumes still bind.
  const [pvc0, pv0] = mainStages.slice(2) as [Parsed, Parsed];
  assert.deepEqual(expressions(pvc0), [
    '!has(self.spec.volumeName)',
    "!self.metadata.uid.matches('[456789abcdef]$')",
  ]);
  assert.deepEqual(expressions(pv0), [
    "self.status.phase != 'Bound'",
    "!self.metadata.name.matches('[456789abcdef]$')",
  ]);

  volumeOnly.forEach((yaml, i) => {
    const digits = shardDigits(i + 1, 4);
    const stages = parse(yaml);
    assert.deepEqual(
      stages.map((s) => s.metadata.name),
      ['pvc-provision', 'pv-bind'],
    );
    assert.deepEqual(expressions(stages[0]!).at(-1), `self.metadata.uid.matches('[${digits}]$')`);
    assert.deepEqual(expressions(stages[1]!).at(-1), `self.metadata.name.matches('[${digits}]$')`);
  });
});

test('a shard count KWOK cannot honour is refused', () => {
  assert.throws(() => shardVolumeStages(STAGES, 0), /integer from 1 to 16, got 0/);
  assert.throws(() => shardVolumeStages(STAGES, 17), /got 17/);
  assert.throws(
    () => shardVolumeStages(stage('node-ready', 'Node', ['true']), 2),
    /no PersistentVolumeClaim stages/,
  );
});
