// Generated files: the CRDs in deploy/crds come from each kind's one definition;
// the rest of deploy/ that follows from code (RBAC, flags, kustomization, alerts,
// dashboard) from tools/scripts/manifests.ts.
//   node tools/scripts/generate.ts          write them
//   node tools/scripts/generate.ts --check  fail if any is missing or differs (CI)
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cache } from '@regulon/cache-controller';
import { crdYaml } from '@regulon/crd';
import { Database } from '@regulon/database-controller';
import { MyApp } from '@regulon/myapp-controller';
import { deployFiles } from './manifests.ts';

const root = join(import.meta.dirname, '..', '..');
const kinds = [Database, Cache, MyApp];
const files = new Map<string, string>();
for (const kind of kinds) files.set(join('deploy', 'crds', `${kind.crdName}.yaml`), crdYaml(kind));
for (const [file, content] of deployFiles([...files.keys()])) files.set(file, content);

const check = process.argv.includes('--check');
const stale: string[] = [];
for (const [file, content] of files) {
  const path = join(root, file);
  const current = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  if (current === content) continue;
  if (check) stale.push(file);
  else {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, content);
    console.log(`wrote ${file}`);
  }
}
if (stale.length) {
  console.error(`generated files are out of date: ${stale.join(', ')}\nrun: npm run generate`);
  process.exit(1);
}
