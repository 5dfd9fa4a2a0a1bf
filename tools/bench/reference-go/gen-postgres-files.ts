// The constant texts of the postgres configuration, as the TypeScript
// controller renders them, for the Go reference to embed (postgres-files.json,
// `//go:embed` in postgres.go): the start script and pg_hba.conf are too long
// to copy by hand and keep equal. The Go side still renders, hashes and
// applies the ConfigMap; only these texts come from here.
//
//   npx node tools/bench/reference-go/gen-postgres-files.ts          writes postgres-files.json
//   npx node tools/bench/reference-go/gen-postgres-files.ts --check  fails if it is stale
//
// reference.test.ts fails while the file is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DatabaseObject } from '@regulon/database-controller';
import { postgresOperatorSettings } from '../../../apps/database-controller/src/postgres/config.ts';
import {
  renderHba,
  renderStartScript,
  REPLICATION_USER,
} from '../../../apps/database-controller/src/postgres/start-script.ts';

export const POSTGRES_FILES_PATH = join(import.meta.dirname, 'postgres-files.json');
export const REGENERATE_COMMAND = 'npx node tools/bench/reference-go/gen-postgres-files.ts';

/** postgres-files.json's content, rendered from the TypeScript controller now. */
export function postgresFilesJson(): string {
  const settings = (synchronous: boolean) =>
    postgresOperatorSettings({
      // The Go side puts the Database's name in place of this (databaseNamePlaceholder, postgres.go).
      metadata: { name: '{{name}}' },
      spec: { engine: 'postgres', replication: { synchronous } },
    } as unknown as DatabaseObject)
      .map(([k, v]) => `${k} = ${v}\n`)
      .join('');
  const files = {
    replicationUser: REPLICATION_USER,
    pgHba: renderHba(),
    startScript: renderStartScript(),
    // postgresql.conf's first lines, before spec.parameters (one string: prettier keeps it as written).
    operatorSettings: { asynchronous: settings(false), synchronous: settings(true) },
  };
  return `${JSON.stringify(files, null, 2)}\n`;
}

/** Undefined when postgres-files.json is current; otherwise what is wrong and how to fix it. */
export function postgresFilesProblem(): string | undefined {
  let onDisk: string;
  try {
    onDisk = readFileSync(POSTGRES_FILES_PATH, 'utf8');
  } catch {
    return `${POSTGRES_FILES_PATH} is missing: run ${REGENERATE_COMMAND}`;
  }
  if (onDisk !== postgresFilesJson())
    return `${POSTGRES_FILES_PATH} is stale (the TypeScript controller's postgres files changed): run ${REGENERATE_COMMAND}`;
  return undefined;
}

if (import.meta.main) {
  if (process.argv.includes('--check')) {
    const problem = postgresFilesProblem();
    if (problem) {
      process.stderr.write(`${problem}\n`);
      process.exit(1);
    }
  } else {
    writeFileSync(POSTGRES_FILES_PATH, postgresFilesJson());
    process.stdout.write(`wrote ${POSTGRES_FILES_PATH}\n`);
  }
}
