import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** This package's own version: a new project asks for the Regulon packages it was made with. */
export const REGULON_VERSION = (
  JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string }
).version;

const regulon = `^${REGULON_VERSION}`;

/**
 * What a new project depends on. The ranges of the third-party packages are
 * the ones the Regulon packages themselves build and test with (a unit test
 * compares them with the repository's manifests), so a project gets no
 * TypeBox or prom-client other than the framework's own.
 */
export const PROJECT_DEPENDENCIES: Readonly<Record<string, string>> = {
  '@regulon/client': regulon,
  '@regulon/crd': regulon,
  '@regulon/options': regulon,
  '@regulon/runtime': regulon,
  'prom-client': '^15.1.3',
  typebox: '^1.4.3',
};

export const PROJECT_DEV_DEPENDENCIES: Readonly<Record<string, string>> = {
  '@regulon/create': regulon,
  '@regulon/generate': regulon,
  '@regulon/testenv': regulon,
  '@types/node': '^24.10.0',
  typescript: '~5.9.3',
};

/** Node's own type stripping runs the project's TypeScript: 22.18 and later, 24. */
export const PROJECT_NODE_ENGINES = '>=22.19.0';
