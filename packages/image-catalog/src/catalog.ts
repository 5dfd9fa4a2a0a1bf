// The engine image catalog: the one place an operator learns which image runs
// a given engine version. Its versions are also the allow-list: a version the
// catalog lacks is not run, and says so. Modelled on CloudNativePG's image
// catalogs, as a file the manager reads (a ConfigMap in deploy/), so that an
// air-gapped cluster names its own registry and tests name local images,
// without anything re-tagged behind the operator's back.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

/** One engine version the operators may run, and the image that runs it. */
export interface CatalogEntry {
  version: string;
  image: string;
}

/** engine → its versions, oldest first: the order upgrades go in. */
export type CatalogEntries = Readonly<Record<string, readonly CatalogEntry[]>>;

/** Dotted numeric versions, as every engine here numbers its releases. */
// `[.]`, not a backslash: the source goes into CEL string literals as it is.
export const VERSION_PATTERN = /^[0-9]{1,4}([.][0-9]{1,4}){0,2}$/;
// An image reference as the kubelet parses it: [registry[:port]/]path[:tag][@digest], lower-case path.
const IMAGE_PATTERN =
  /^([a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?\/)?[a-z0-9]+([._-][a-z0-9]+)*(\/[a-z0-9]+([._-][a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$/;

export class ImageCatalogError extends Error {
  override name = 'ImageCatalogError';
}

export class ImageCatalog {
  /** Where it came from, for messages: "the official images" or a file path. */
  readonly source: string;
  readonly #entries: CatalogEntries;

  constructor(entries: CatalogEntries, source: string) {
    for (const [engine, list] of Object.entries(entries)) {
      const seen = new Set<string>();
      for (const e of list) {
        if (!VERSION_PATTERN.test(e.version))
          throw new ImageCatalogError(
            `${source}: ${engine} version "${e.version}" is not a dotted number such as 16.8`,
          );
        if (!IMAGE_PATTERN.test(e.image))
          throw new ImageCatalogError(
            `${source}: ${engine} ${e.version}: "${e.image}" is not an image reference`,
          );
        if (seen.has(e.version))
          throw new ImageCatalogError(`${source}: ${engine} ${e.version} is listed twice`);
        seen.add(e.version);
      }
      const sorted = [...list].sort((a, b) => compareVersions(a.version, b.version));
      if (sorted.some((e, i) => e !== list[i]))
        throw new ImageCatalogError(
          `${source}: ${engine}'s versions must be listed oldest first (the order upgrades go in): ${sorted.map((e) => e.version).join(', ')}`,
        );
    }
    this.#entries = entries;
    this.source = source;
  }

  /**
   * Reads a catalog file:
   *
   *     postgres:
   *       - { version: "16.8", image: registry.example/postgres:16.8 }
   *
   * It is the whole catalog: an engine it doesn't list has no versions.
   */
  static load(path: string): ImageCatalog {
    let doc: unknown;
    try {
      doc = parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new ImageCatalogError(`image catalog ${path}: ${(err as Error).message}`);
    }
    return ImageCatalog.fromDocument(doc, path);
  }

  static fromDocument(doc: unknown, source: string): ImageCatalog {
    if (!isRecord(doc))
      throw new ImageCatalogError(`${source}: expected a map of engine to a list of versions`);
    const entries: Record<string, CatalogEntry[]> = {};
    for (const [engine, list] of Object.entries(doc)) {
      if (!Array.isArray(list))
        throw new ImageCatalogError(`${source}: ${engine}: expected a list of { version, image }`);
      entries[engine] = list.map((e: unknown, i) => {
        if (
          !isRecord(e) ||
          typeof e['image'] !== 'string' ||
          (typeof e['version'] !== 'string' && typeof e['version'] !== 'number')
        )
          throw new ImageCatalogError(
            `${source}: ${engine}[${i}]: expected { version: "x.y", image: "..." }`,
          );
        const extra = Object.keys(e).filter((k) => k !== 'version' && k !== 'image');
        if (extra.length)
          throw new ImageCatalogError(`${source}: ${engine}[${i}]: unknown field ${extra[0]}`);
        return { version: String(e['version']), image: e['image'] };
      });
    }
    return new ImageCatalog(entries, source);
  }

  /** The catalog of an engine's official images (`<repository>:<version>`). */
  static official(
    engines: Record<string, { repository: string; versions: readonly string[] }>,
  ): ImageCatalog {
    const entries: Record<string, CatalogEntry[]> = {};
    for (const [engine, { repository, versions }] of Object.entries(engines))
      entries[engine] = versions.map((version) => ({ version, image: `${repository}:${version}` }));
    return new ImageCatalog(entries, 'the official images');
  }

  /** The image that runs `version` of `engine`, or undefined when the catalog lacks it. */
  imageFor(engine: string, version: string): string | undefined {
    return this.#entries[engine]?.find((e) => e.version === version)?.image;
  }

  /** The versions of `engine`, oldest first. */
  versions(engine: string): string[] {
    return (this.#entries[engine] ?? []).map((e) => e.version);
  }

  /** Why `version` can't run, for a status condition; undefined when it can. */
  unsupported(engine: string, version: string): string | undefined {
    if (this.imageFor(engine, version)) return undefined;
    const versions = this.versions(engine);
    return versions.length
      ? `${engine} ${version} is not in the image catalog (${this.source}); it has ${versions.join(', ')}`
      : `the image catalog (${this.source}) has no ${engine} images`;
  }
}

/** Compares dotted numeric versions (missing parts count as 0). */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/**
 * A CEL expression that is true when version `a` >= version `b` (both CEL
 * string expressions of dotted numbers, up to three parts), for CRD
 * transition rules: the catalog can change at any time, so the schema can't
 * list versions, but it can still refuse a downgrade.
 */
export function celVersionAtLeast(a: string, b: string): string {
  const part = (v: string, i: number) => `(size(${v}.split('.')) > ${i} ? int(${v}.split('.')[${i}]) : 0)`;
  const [a0, a1, a2] = [0, 1, 2].map((i) => part(a, i));
  const [b0, b1, b2] = [0, 1, 2].map((i) => part(b, i));
  return `(${a0} > ${b0} || (${a0} == ${b0} && (${a1} > ${b1} || (${a1} == ${b1} && ${a2} >= ${b2}))))`;
}
