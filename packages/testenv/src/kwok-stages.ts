import { parseAllDocuments, stringify } from 'yaml';

/**
 * KWOK v0.8 plays the Stages of every kind other than Node and Pod with a
 * single worker (`PlayStageParallelism: 1`, not configurable), one API request
 * at a time. Provisioning a claim takes four requests, so under load (each
 * request ~200 ms while thousands of StatefulSets are created) claims bind at
 * about one a second and a benchmark of thousands of Databases measures KWOK.
 *
 * Splitting the volume Stages by claim UID lets several KWOK processes play
 * them side by side. Every UID is a random hex string, so its last digit
 * spreads claims evenly; a PersistentVolume that KWOK provisions is named
 * `pvc-<claim UID>`, so its name ends with the same digit and the Stages of a
 * claim and its volume land on the same shard.
 */

const VOLUME_KINDS = new Set(['PersistentVolumeClaim', 'PersistentVolume']);
const PROVISION_STAGE = 'pvc-provision';
const HEX = '0123456789abcdef';

interface PatchStep {
  patch?: { root?: string; subresource?: string; type?: string; template: string } | undefined;
  [step: string]: unknown;
}

interface Stage {
  metadata: { name: string };
  spec: {
    resourceRef: { apiGroup: string; kind: string };
    selector?: { matchExpressions?: Array<Record<string, unknown>> } | undefined;
    steps?: PatchStep[] | undefined;
  };
}

export interface ShardedStages {
  /** Node and Pod Stages, plus shard 0 of the volume Stages: for the KWOK that manages the nodes. */
  main: string;
  /** Only volume Stages, one config per further KWOK process. */
  volumeOnly: string[];
}

/** The hex digits of shard `i` of `shards`: contiguous, sizes differing by at most one. */
export function shardDigits(i: number, shards: number): string {
  const from = Math.floor((i * HEX.length) / shards);
  const to = Math.floor(((i + 1) * HEX.length) / shards);
  return HEX.slice(from, to);
}

/**
 * Splits KWOK's Stage documents so `shards` processes provision volumes, and
 * binds each claim in one patch fewer (see `bindInOnePatch`).
 */
export function shardVolumeStages(stagesYaml: string, shards: number): ShardedStages {
  if (!Number.isInteger(shards) || shards < 1 || shards > HEX.length)
    throw new Error(`testenv: volume shards must be an integer from 1 to ${HEX.length}, got ${shards}`);
  const stages = parseAllDocuments(stagesYaml)
    .map((d) => d.toJS() as Stage | null)
    .filter((s): s is Stage => s !== null)
    .map((s) => (s.metadata.name === PROVISION_STAGE ? bindInOnePatch(s) : s));
  const render = (docs: Stage[]) => docs.map((d) => stringify(d, { blockQuote: 'literal' })).join('---\n');
  if (shards === 1) return { main: render(stages), volumeOnly: [] };
  const isVolume = (s: Stage) =>
    s.spec.resourceRef.apiGroup === 'v1' && VOLUME_KINDS.has(s.spec.resourceRef.kind);
  const others = stages.filter((s) => !isVolume(s));
  const volumes = stages.filter(isVolume);
  if (volumes.length === 0)
    throw new Error('testenv: KWOK stages have no PersistentVolumeClaim stages to shard');
  // Shard 0 takes whatever no other shard matches, so a volume not named
  // after a claim (one a test creates by hand) is still bound.
  const rest = Array.from({ length: shards - 1 }, (_, i) => shardDigits(i + 1, shards)).join('');
  const shard = (i: number) =>
    volumes.map((s) => (i === 0 ? onShard(s, rest, false) : onShard(s, shardDigits(i, shards), true)));
  return {
    main: render([...others, ...shard(0)]),
    volumeOnly: Array.from({ length: shards - 1 }, (_, i) => render(shard(i + 1))),
  };
}

function onShard(stage: Stage, digits: string, matching: boolean): Stage {
  // A claim is keyed by its own UID; a volume by its name, which embeds the claim's UID.
  const key =
    stage.spec.resourceRef.kind === 'PersistentVolumeClaim' ? 'self.metadata.uid' : 'self.metadata.name';
  const expression = `${matching ? '' : '!'}${key}.matches('[${digits}]$')`;
  const selector = stage.spec.selector ?? {};
  return {
    ...stage,
    spec: {
      ...stage.spec,
      selector: {
        ...selector,
        matchExpressions: [...(selector.matchExpressions ?? []), { cel: { expression } }],
      },
    },
  };
}

/**
 * KWOK's provisioning Stage patches the claim's annotations, then its
 * `spec.volumeName`, then its status. The claim still matches the Stage after
 * the first patch (it has no volumeName yet), so KWOK plays the whole Stage a
 * second time for that update. One patch of annotations and volumeName
 * together leaves no such intermediate claim, and saves a request.
 */
function bindInOnePatch(stage: Stage): Stage {
  const steps = stage.spec.steps ?? [];
  const at = (root: string) => steps.findIndex((s) => s.patch?.root === root && !s.patch.subresource);
  const [m, sp] = [at('metadata'), at('spec')];
  const meta = steps[m]?.patch;
  const spec = steps[sp]?.patch;
  // Indenting a template is safe only while no function renders indentation-dependent YAML.
  if (
    !meta ||
    !spec ||
    sp !== m + 1 ||
    meta.type !== spec.type ||
    /\{\{-?\s*YAML/.test(meta.template + spec.template)
  )
    throw new Error(`testenv: KWOK's ${PROVISION_STAGE} Stage changed shape; revisit bindInOnePatch`);
  const nest = (key: string, template: string) =>
    `${key}:\n${template
      .trimEnd()
      .split('\n')
      .map((l) => `  ${l}`)
      .join('\n')}\n`;
  const merged: PatchStep = {
    patch: {
      ...(meta.type ? { type: meta.type } : {}),
      template: nest('metadata', meta.template) + nest('spec', spec.template),
    },
  };
  return { ...stage, spec: { ...stage.spec, steps: [...steps.slice(0, m), merged, ...steps.slice(sp + 1)] } };
}
