// `npm run release [-- --dry-run]`: versions and publishes the @regulon packages.
//
// Versions come from changesets (@changesets/cli, the versioning tool made for
// npm monorepos, kept by the people behind it since 2019): with a change, its
// author runs `npx changeset` and commits the `.changeset/*.md` it writes,
// naming the packages and the bump (patch, minor, major) with a line for the
// changelog. The release turns the pending ones into versions and a
// CHANGELOG.md per package. It never runs `changeset publish`, which would
// publish the package directories: what is published is `npm run pack`'s
// tarballs and nothing else.
//
// One version line for every @regulon package (changesets' `fixed` group in
// .changeset/config.json), not independent versions:
//   - the scaffolder writes `^<its own version>` for each @regulon package a
//     project lists (packages/create/src/dependencies.ts), and under 0.x a
//     caret range admits patches only: an independent line would ask for
//     versions that do not exist;
//   - the packages are made and tested together (pack.ts pins `^<version>`
//     between them), and a user reads one version in an issue or a lock file;
//   - the manager image runs all of them with the apps: its version is the line's,
//     and VERSIONED carries it into the files that name it.
//
// Steps, the dry run's the same minus every write:
//   1. the plan: with pending changesets, `changeset status` gives the next
//      version; with none, the current one is released (the first release,
//      or a rerun after a publish failed half-way);
//   2. (not dry) `changeset version` writes the versions and changelogs,
//      VERSIONED files follow, the lock file follows, one commit `Release vX`;
//   3. `npm run pack`'s packAll into a fresh directory (the dry run packs at
//      the planned version);
//   4. `npm publish TARBALL` for each package the registry lacks at that
//      version: `--provenance` when the CI can sign (provenanceFlags), and
//      `--dry-run` in a dry run, which needs no token;
//   5. (not dry) the tag vX; pushing the commit and the tag is left to whoever
//      runs it (`git push --follow-tags`), as is building and pushing the
//      manager image (no image registry is chosen yet).
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { packAll, PUBLISHABLE } from './pack.ts';

const execFileAsync = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
// The repository's changesets, also for the directory of a test's fixture.
const changeset = (args: string[], cwd: string) =>
  execFileAsync(process.execPath, [join(root, 'node_modules', '@changesets', 'cli', 'bin.js'), ...args], {
    cwd,
  });

const SEMVER = String.raw`\d+\.\d+\.\d+(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?`;

/**
 * Files outside the package manifests that name the release's version, each
 * with the pattern whose second group is the version (the first is kept):
 * the manager image's tag in the Deployment and its docs, the client's
 * user agent, and the scaffolder's tarball in the commands of the docs.
 */
export const VERSIONED: ReadonlyArray<{ file: string; pattern: RegExp }> = [
  {
    file: 'deploy/manager/deployment.yaml',
    pattern: new RegExp(`(image: regulon-manager:)(${SEMVER})`, 'g'),
  },
  { file: 'deploy/README.md', pattern: new RegExp(`(regulon-manager:|newTag: )(${SEMVER})`, 'g') },
  { file: 'apps/manager/Dockerfile', pattern: new RegExp(`(-t regulon-manager:)(${SEMVER})`, 'g') },
  { file: 'packages/client/src/config.ts', pattern: new RegExp(`(CLIENT_VERSION = ')(${SEMVER})(?=')`, 'g') },
  ...['README.md', 'docs/your-first-operator.md', 'packages/create/README.md'].map((file) => ({
    file,
    pattern: new RegExp(`(regulon-create-)(${SEMVER})(?=\\.tgz)`, 'g'),
  })),
];

/** The versions a text names by `pattern` (VERSIONED), in order. */
export function versionsIn(text: string, pattern: RegExp): string[] {
  return [...text.matchAll(pattern)].map((m) => m[2]!);
}

/** The text with every version `pattern` finds set to `version`. */
export function withVersion(text: string, pattern: RegExp, version: string): string {
  return text.replace(pattern, (_all, head: string) => `${head}${version}`);
}

/**
 * `--provenance` when npm can sign the tarballs' provenance here, else none:
 * npm supports it on GitHub Actions, where the job's OIDC token is offered
 * only with `permissions: id-token: write` (ACTIONS_ID_TOKEN_REQUEST_URL), and
 * on GitLab CI with an `id_tokens` entry named SIGSTORE_ID_TOKEN. Asked
 * anywhere else, npm publish fails, so a maintainer's laptop publishes without.
 */
export function provenanceFlags(env: Readonly<Record<string, string | undefined>>): string[] {
  const github = env['GITHUB_ACTIONS'] === 'true' && !!env['ACTIONS_ID_TOKEN_REQUEST_URL'];
  const gitlab = env['GITLAB_CI'] === 'true' && !!env['SIGSTORE_ID_TOKEN'];
  return github || gitlab ? ['--provenance'] : [];
}

/** The changesets not yet released: `.changeset/*.md` but its README. */
export function pendingChangesets(dir = join(root, '.changeset')): string[] {
  return readdirSync(dir).filter((f) => f.endsWith('.md') && f !== 'README.md');
}

export interface StatusRelease {
  name: string;
  oldVersion: string;
  newVersion: string;
  type: string;
}

/** The version changesets plans for the @regulon line; every package of it must move to the same one. */
export function plannedVersion(releases: readonly StatusRelease[], current: string): string {
  const versions = new Set(releases.filter((r) => r.type !== 'none').map((r) => r.newVersion));
  if (versions.size > 1) throw new Error(`changesets plans several versions: ${[...versions].join(', ')}`);
  return [...versions][0] ?? current;
}

/** What the pending changesets release (`changeset status` in `cwd`): each package's next version; none when none are pending. */
export async function releasePlan(cwd: string): Promise<StatusRelease[]> {
  if (!pendingChangesets(join(cwd, '.changeset')).length) return [];
  const out = join(mkdtempSync(join(tmpdir(), 'regulon-release-')), 'status.json');
  try {
    await changeset(['status', '--output', out], cwd);
    return (JSON.parse(readFileSync(out, 'utf8')) as { releases: StatusRelease[] }).releases;
  } finally {
    rmSync(join(out, '..'), { recursive: true, force: true });
  }
}

/** Whether the registry has `name` at `version` (npm view: E404 is no; any other failure is thrown). */
async function published(name: string, version: string): Promise<boolean> {
  try {
    const { stdout } = await execFileAsync('npm', ['view', `${name}@${version}`, 'version', '--json']);
    return stdout.trim() !== '';
  } catch (err) {
    if (/\bE404\b/.test(String((err as { stderr?: string }).stderr))) return false;
    throw err;
  }
}

async function git(...args: string[]): Promise<string> {
  return (await execFileAsync('git', args, { cwd: root })).stdout;
}

/** Step 2: the versions, changelogs and VERSIONED files written, the lock file refreshed, one commit. */
async function writeVersion(version: string, log: (line: string) => void): Promise<void> {
  await changeset(['version'], root);
  for (const { file, pattern } of VERSIONED) {
    const path = join(root, file);
    writeFileSync(path, withVersion(readFileSync(path, 'utf8'), pattern, version));
  }
  // The workspace packages' versions are in the lock file too.
  await execFileAsync(
    'npm',
    ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'],
    {
      cwd: root,
    },
  );
  await git('add', '-A');
  await git('commit', '-m', `Release v${version}`);
  log(`committed: Release v${version}`);
}

export interface ReleaseOptions {
  dryRun: boolean;
  env: Readonly<Record<string, string | undefined>>;
  log: (line: string) => void;
}

/** Steps 1-5 (see the top of this file); returns the version released. */
export async function release({ dryRun, env, log }: ReleaseOptions): Promise<string> {
  const current = (
    JSON.parse(readFileSync(join(root, 'packages', 'create', 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
  if (!dryRun && (await git('status', '--porcelain')).trim())
    throw new Error('the working tree has changes: a release is made from a commit');
  const pending = pendingChangesets();
  const version = plannedVersion(await releasePlan(root), current);
  log(
    `version: ${current} → ${version} (${pending.length} pending changesets${pending.length ? `: ${pending.join(', ')}` : ''})`,
  );
  if (version !== current) {
    const files = ['package.json and CHANGELOG.md of every @regulon package', 'package-lock.json'];
    if (dryRun)
      log(
        `would write: ${[...files, ...VERSIONED.map((v) => v.file)].join(', ')}; commit Release v${version}`,
      );
    else await writeVersion(version, log);
  }

  const outDir = mkdtempSync(join(tmpdir(), 'regulon-release-'));
  try {
    const packed = await packAll(outDir, PUBLISHABLE, version);
    const flags = [
      '--access',
      'public',
      '--tag',
      'latest',
      ...provenanceFlags(env),
      ...(dryRun ? ['--dry-run'] : []),
    ];
    for (const p of packed) {
      if (await published(p.name, p.version)) {
        log(`${p.name}@${p.version}: already on the registry, skipped`);
        continue;
      }
      const args = ['publish', p.tarball, ...flags];
      log(
        `${dryRun ? 'would publish' : 'publishing'} ${p.name}@${p.version}: npm ${args.join(' ').replace(outDir, '<packed>')}`,
      );
      const { stdout } = await execFileAsync('npm', args);
      for (const line of stdout.trim().split('\n')) log(`  ${line}`);
    }
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }

  const tag = `v${version}`;
  if (dryRun) log(`would tag ${tag}`);
  else if (!(await git('tag', '--list', tag)).trim()) {
    await git('tag', '-a', tag, '-m', `Release ${tag}`);
    log(`tagged ${tag}: push with git push --follow-tags`);
  }
  return version;
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { 'dry-run': { type: 'boolean', default: false } } });
  if (!existsSync(join(root, '.changeset', 'config.json'))) throw new Error('no .changeset/config.json');
  const version = await release({ dryRun: values['dry-run'], env: process.env, log: (l) => console.log(l) });
  console.log(
    `${values['dry-run'] ? 'dry run: nothing written or published;' : 'released'} @regulon/* ${version}`,
  );
}
