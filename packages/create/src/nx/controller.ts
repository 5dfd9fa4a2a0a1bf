// `nx g @regulon/create:controller --kind Widget --group widgets.regulon.dev --api-version v1alpha1`
// inside this monorepo: a controller app (apps/<kind>-controller) with the
// same kind, controller and test `regulon create api` writes in a user's
// project, registered in the manager (its CONTROLLERS entry gives it the
// --<kind>-enabled flags, its CRD and its RBAC in deploy/), then the
// workspace linked (npm install), deploy/ generated and the files formatted.
import { execFileSync } from 'node:child_process';
import { kindNames, NameError, type ApiRequest, type KindNames } from '../names.ts';
import { insertAboveMarkers } from '../scaffold.ts';
import { apiFiles } from '../templates/api.ts';
import { CONTROLLER_TYPE } from '../templates/project.ts';

/**
 * The part of Nx's Tree this generator uses. Nx hands the generator its
 * virtual file system and writes it out (or prints it, with --dry-run) once
 * the generator returns. Declared here rather than imported from nx, so that
 * the published package does not depend on Nx for this monorepo-only entry.
 */
export interface Tree {
  readonly root: string;
  exists(path: string): boolean;
  read(path: string, encoding: 'utf-8'): string | null;
  write(path: string, content: string): void;
}

/** The generator's options (schema.json): `apiVersion`, since Nx keeps `--version` for its own. */
export interface ControllerSchema extends Omit<ApiRequest, 'version'> {
  apiVersion: string;
}

export const MANAGER_CONTROLLERS = 'apps/manager/src/controllers.ts';
export const MANAGER_PACKAGE = 'apps/manager/package.json';
const MARKERS = {
  imports: '// regulon:scaffold:controller-imports',
  controllers: '// regulon:scaffold:controllers',
};

export default function controllerGenerator(tree: Tree, schema: ControllerSchema): () => void {
  const n = kindNames({ ...schema, version: schema.apiVersion });
  const app = `apps/${n.kebab}-controller`;
  const packageName = `@regulon/${n.kebab}-controller`;
  if (tree.exists(`${app}/package.json`))
    throw new NameError(`${app} exists: the kind ${n.kind} is there already`);
  const controllers = tree.read(MANAGER_CONTROLLERS, 'utf-8');
  const manager = tree.read(MANAGER_PACKAGE, 'utf-8');
  if (controllers === null || manager === null)
    throw new NameError(
      `${MANAGER_CONTROLLERS} is missing: run this generator at the root of the Regulon monorepo`,
    );
  // Both registrations are computed before anything is written: a missing marker changes nothing.
  const registered = insertAboveMarkers(MANAGER_CONTROLLERS, controllers, [
    [MARKERS.imports, `import { ${n.kind}, ${n.camel}Controller } from '${packageName}';`],
    [
      MARKERS.controllers,
      `{ ...${n.camel}Controller, description: '${n.kind}: ${n.plural}.${n.group}', kinds: [${n.kind}] },`,
    ],
  ]);
  const managerManifest = JSON.parse(manager) as { dependencies: Record<string, string> };
  managerManifest.dependencies = Object.fromEntries(
    Object.entries({ ...managerManifest.dependencies, [packageName]: '*' }).sort(([a], [b]) =>
      a.localeCompare(b),
    ),
  );

  for (const [path, content] of appFiles(n, packageName)) tree.write(`${app}/${path}`, content);
  tree.write(MANAGER_CONTROLLERS, registered);
  tree.write(MANAGER_PACKAGE, `${JSON.stringify(managerManifest, null, 2)}\n`);

  return () => {
    const run = (command: string, args: string[]) =>
      execFileSync(command, args, { cwd: tree.root, stdio: 'inherit' });
    run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline']);
    run('npm', ['run', 'generate']);
    run('npx', ['prettier', '--write', app, MANAGER_CONTROLLERS, MANAGER_PACKAGE]);
  };
}

function appFiles(n: KindNames, packageName: string): Map<string, string> {
  const files = apiFiles(n);
  files.set('src/controller.ts', CONTROLLER_TYPE);
  files.set(
    'src/index.ts',
    `export { ${n.kind} } from './api/${n.kebab}.ts';\nexport { ${n.camel}Controller } from './controllers/${n.kebab}.ts';\n`,
  );
  files.set(
    'package.json',
    `${JSON.stringify(
      {
        name: packageName,
        version: '0.1.0',
        private: true,
        type: 'module',
        description: `The ${n.kind} kind (${n.plural}.${n.group}) and its controller`,
        exports: { '.': { 'regulon-dist': './dist/index.js', default: './src/index.ts' } },
        scripts: {
          build: 'tsc -p tsconfig.build.json',
          typecheck: 'tsc -p tsconfig.json',
          lint: 'eslint .',
          test: 'node ../../tools/scripts/node-test.ts --cluster',
        },
        dependencies: { '@regulon/client': '*', '@regulon/crd': '*', '@regulon/runtime': '*' },
        devDependencies: { '@regulon/testenv': '*' },
      },
      null,
      2,
    )}\n`,
  );
  files.set(
    'tsconfig.json',
    `${JSON.stringify({ extends: '../../tsconfig.base.json', compilerOptions: { noEmit: true }, include: ['src'] }, null, 2)}\n`,
  );
  files.set(
    'tsconfig.build.json',
    `${JSON.stringify(
      {
        extends: './tsconfig.json',
        compilerOptions: { noEmit: false, rootDir: 'src', outDir: 'dist' },
        exclude: ['src/**/*.test.ts'],
      },
      null,
      2,
    )}\n`,
  );
  files.set(
    'README.md',
    `# ${packageName}\n\nThe ${n.kind} kind (\`${n.plural}.${n.group}/${n.version}\`) and its controller, run by the manager (\`--${n.kebab}-enabled\`).\nMade by \`nx g @regulon/create:controller\`: a starting point to edit.\n`,
  );
  return files;
}
