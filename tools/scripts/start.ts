// `npm start`: the main job on the embedded local control plane.
//  1. bring up (or reuse) the control plane in .cluster/, with the machine's
//     real node (kubelet, containerd, CNI) when it can run one
//  2. install the CRDs from deploy/crds
//  3. real node: the embedded S3 object store (a service of the control plane:
//     `npm run cluster -- down` stops it), the namespace `quickstart` on the
//     real node, the store's keys and CA as Secrets, the local image catalog,
//     the manager image (the instance agent the engines' Pods run under)
//  4. run the manager with every controller, in the foreground
//  5. apply the samples once the manager is ready and show them becoming Ready:
//     real node: deploy/samples/real (a MyApp on the local app image, with a
//     3-instance postgres backed up to the store and a replicated redis), then
//     print the commands that show it is real (psql, backups, a switchover);
//     otherwise deploy/samples, on simulated (KWOK) nodes, saying why in one line
// Ctrl-C stops the manager; the control plane keeps running (npm run cluster -- down).
//   --exit-when-ready   stop the manager once every sample is Ready (used by tests)
//   --simulated         the simulated start even where a real node could run
//   --no-instance-agent the real engines without the instance agent, so without the
//                       manager image (rebuilt, 1.5-2 min, whenever the sources change)
import { spawn } from 'node:child_process';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import {
  ControlPlane,
  defaultClusterDir,
  ensureImages,
  isAlive,
  loadImagesIntoRealNode,
  localImageCatalog,
  realNodeNamespaceAnnotations,
  realNodeUnsupported,
  startObjectStore,
  TestEnv,
} from '@regulon/testenv';
import { ensureManagerImage } from '../manager-image/image.ts';
import { run } from './run.ts';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const args = process.argv.slice(2);
const exitWhenReady = args.includes('--exit-when-ready');
const metrics = process.env['REGULON_METRICS_BIND_ADDRESS'] ?? '127.0.0.1:8080';
const health = process.env['REGULON_HEALTH_PROBE_BIND_ADDRESS'] ?? '127.0.0.1:8081';
/** The real samples' namespace, whose Pods the API server places on the real node. */
const NAMESPACE = 'quickstart';
const BUCKET = 'backups';
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(0)} s`;
const started = Date.now();

const unsupported = args.includes('--simulated') ? 'asked for with --simulated' : realNodeUnsupported();
const real = unsupported === undefined;
if (!real)
  console.log(
    `Simulated start (${unsupported}): the samples' Pods are simulated on KWOK nodes, no postgres, redis or app runs.`,
  );

if ((await run('regulon-testenv', ['up', ...(real ? ['--real-node'] : [])])) !== 0) process.exit(1);
const cp = ControlPlane.attach(defaultClusterDir());
const kubectl = (...a: string[]) =>
  exec(cp.state.kubectl, ['--kubeconfig', cp.kubeconfigPath, ...a], { maxBuffer: 16 << 20 });
const apply = (doc: unknown) =>
  new Promise<void>((resolve, reject) => {
    const child = execFile(
      cp.state.kubectl,
      ['--kubeconfig', cp.kubeconfigPath, 'apply', '--server-side', '--force-conflicts', '-f', '-'],
      (err, _out, stderr) =>
        err ? reject(new Error(`kubectl apply: ${stderr.trim() || err.message}`)) : resolve(),
    );
    child.stdin!.end(JSON.stringify(doc));
  });

await kubectl('apply', '--server-side', '--force-conflicts', '-f', join(root, 'deploy', 'crds'));
await kubectl('wait', '--for=condition=Established', '--timeout=60s', '-f', join(root, 'deploy', 'crds'));
console.log('CRDs installed');

/** The embedded object store this control plane runs for the quick start, reused while it runs. */
interface StoreRecord {
  pid: number;
  podEndpoint: string;
  caPem: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * The real node's parts beyond the node itself: the object store, the
 * namespace and its Secrets, the image catalog file. Returns the manager's
 * extra flags and the sample to apply.
 */
async function prepareRealNode(): Promise<{ flags: string[]; sample: Record<string, unknown> }> {
  const dir = join(cp.state.dir, 'quickstart');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const recordFile = join(dir, 'object-store.json');
  let store = existsSync(recordFile)
    ? (JSON.parse(readFileSync(recordFile, 'utf8')) as StoreRecord)
    : undefined;
  if (!store || !isAlive(store.pid)) {
    // A service of the control plane (under its directory): `npm run cluster -- down` stops it.
    const s = await startObjectStore({
      env: new TestEnv(cp, false),
      reachableFromPods: true,
      log: (l) => console.log(`[object store] ${l}`),
    });
    await s.createBucket(BUCKET);
    store = {
      pid: s.pid,
      podEndpoint: s.podEndpoint!,
      caPem: s.caPem,
      accessKeyId: s.accessKeyId,
      secretAccessKey: s.secretAccessKey,
    };
    // Beside the control plane's own admin credentials, readable by this user alone.
    writeFileSync(recordFile, JSON.stringify(store), { mode: 0o600 });
  }
  console.log(`object store: ${store.podEndpoint} (bucket ${BUCKET})`);

  await apply({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: NAMESPACE, annotations: realNodeNamespaceAnnotations() },
  });
  await apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'backup-store-keys', namespace: NAMESPACE },
    stringData: { ACCESS_KEY_ID: store.accessKeyId, ACCESS_SECRET_KEY: store.secretAccessKey },
  });
  await apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'backup-store-ca', namespace: NAMESPACE },
    stringData: { 'ca.crt': store.caPem },
  });

  // The engines' images as the real node has them, by the versions they really run.
  const catalog = await localImageCatalog();
  const catalogFile = join(dir, 'image-catalog.yaml');
  writeFileSync(catalogFile, stringify(catalog));
  const [app] = await ensureImages(['app']);
  const sample = parse(readFileSync(join(root, 'deploy', 'samples', 'real', 'myapp.yaml'), 'utf8')) as {
    spec: {
      image: string;
      database: { version: string; backup: { objectStore: { endpoint: string } } };
      cache: { version: string };
    };
  };
  sample.spec.image = app!.ref;
  sample.spec.database.version = catalog['postgres']![0]!.version;
  sample.spec.cache.version = catalog['redis']![0]!.version;
  sample.spec.database.backup.objectStore.endpoint = store.podEndpoint;
  const flags = ['--image-catalog', catalogFile];
  if (!args.includes('--no-instance-agent')) {
    // As deployed: the instances run under the agent copied from the manager's own image,
    // which holds each Database's and Cache's primary Lease.
    const building = Date.now();
    // A build's own output (buildah's steps) stays out of the way: its start and result show.
    const image = await ensureManagerImage((l) => {
      if (/^\[(images|manager-image)\]/.test(l)) console.log(l);
    });
    loadImagesIntoRealNode(cp.state.dir, [image]);
    console.log(`instance agent: ${image.ref} (${seconds(building)})`);
    flags.push('--instance-agent-image', image.ref);
  }
  return {
    flags,
    sample: { ...sample, metadata: { name: 'shop', namespace: NAMESPACE } },
  };
}

const setup = real ? await prepareRealNode() : undefined;

const manager = spawn(
  process.execPath,
  [
    join(root, 'apps', 'manager', 'src', 'main.ts'),
    '--kubeconfig',
    cp.kubeconfigPath,
    '--metrics-bind-address',
    metrics,
    '--health-probe-bind-address',
    health,
    ...(setup?.flags ?? []),
  ],
  { stdio: 'inherit' },
);
const exited = new Promise<number>((resolve) => manager.on('exit', (code) => resolve(code ?? 1)));
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => manager.kill(sig));

/** The `kubectl get` lines and phases of `kinds` (in `namespace`, else the default one). */
async function phasesOf(kinds: string[], namespace?: string): Promise<string[]> {
  const { stdout } = await kubectl(
    'get',
    kinds.join(','),
    ...(namespace ? ['-n', namespace] : []),
    '-o',
    'jsonpath={range .items[*]}{.kind}/{.metadata.name}={.status.phase}{"\\n"}{end}',
  );
  return stdout.trim().split('\n').filter(Boolean);
}

/** Waits until `count` objects of `kinds` are Ready, printing each change on the way. */
async function untilReady(kinds: string[], count: number, deadline: number, namespace?: string) {
  let shown = '';
  for (;;) {
    const phases = await phasesOf(kinds, namespace);
    if (phases.length >= count && phases.every((l) => l.endsWith('=Ready'))) return;
    const now = phases.join(', ');
    if (real && now !== shown) console.log(`[${seconds(started)}] ${now || 'waiting for the MyApp'}`);
    shown = now;
    if (Date.now() > deadline) throw new Error(`samples not Ready: ${now}`);
    await new Promise((r) => setTimeout(r, real ? 2000 : 500));
  }
}

// Whatever fails from here on, the manager this script started must not outlive it.
try {
  const managerDeadline = Date.now() + 120_000;
  const healthUrl = `http://${health.startsWith(':') ? `127.0.0.1${health}` : health}/readyz`;
  for (;;) {
    const ok = await fetch(healthUrl).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > managerDeadline || manager.exitCode !== null)
      throw new Error('the manager did not become ready');
    await new Promise((r) => setTimeout(r, 250));
  }

  const k = `kubectl -n ${NAMESPACE}`;
  if (setup) {
    await apply(setup.sample);
    console.log(
      `applied deploy/samples/real/myapp.yaml in namespace ${NAMESPACE}: real postgres, redis and app Pods on the real node; waiting for them to be Ready`,
    );
    // A first start pulls nothing (the images are local) but initialises 3 postgres instances one after another.
    await untilReady(['myapp', 'database', 'cache'], 3, Date.now() + 15 * 60_000, NAMESPACE);
    console.log((await kubectl('get', 'myapp,database,cache,pods', '-n', NAMESPACE)).stdout);
    const rel = relative(process.cwd(), cp.kubeconfigPath);
    const path = rel && !rel.startsWith('..') ? rel : cp.kubeconfigPath;
    const primary = `$(${k} get database shop-db -o jsonpath='{.status.currentPrimary}')`;
    console.log(
      [
        `Everything is Ready, on real engines (${seconds(started)}). Try:`,
        `  export KUBECONFIG=${path} PATH=${dirname(cp.state.kubectl)}:$PATH`,
        `  ${k} get myapp,database,cache,pods`,
        '  # psql into the primary, with the credentials the operator generated (read in the Pod, never printed):',
        `  npx kubectl-regulon psql shop-db -n ${NAMESPACE}`,
        '  # the same with kubectl alone, and redis-cli into the cache:',
        `  ${k} exec -it ${primary} -c postgres -- sh -c 'PGPASSWORD="$SUPERUSER_PASSWORD" exec psql -h 127.0.0.1 -U "$SUPERUSER" -d "\${DATABASE:-postgres}"'`,
        `  npx kubectl-regulon redis-cli shop-cache -n ${NAMESPACE}`,
        '  # backups (hourly) and WAL archiving to the embedded object store; take one now and list them:',
        `  npx kubectl-regulon backup shop-db -n ${NAMESPACE} --wait`,
        `  ${k} get databasebackups`,
        `  npx kubectl-regulon status database shop-db -n ${NAMESPACE}`,
        '  # a switchover to the least lagging replica:',
        `  npx kubectl-regulon switchover shop-db -n ${NAMESPACE} --wait`,
        'Ctrl-C stops the manager; npm run cluster -- down stops the control plane, the real node and the object store.',
      ].join('\n'),
    );
  } else {
    const samples = readdirSync(join(root, 'deploy', 'samples')).filter((f) => f.endsWith('.yaml'));
    for (const file of samples)
      await kubectl('apply', '--server-side', '-f', join(root, 'deploy', 'samples', file));
    console.log(`applied ${samples.join(', ')}; waiting for them to be Ready`);
    const kinds = samples.map((f) => f.replace(/\.yaml$/, ''));
    await untilReady(kinds, samples.length, Date.now() + 120_000);
    console.log((await kubectl('get', kinds.join(','))).stdout);
    console.log(
      `Everything is Ready (simulated Pods). Try:\n  ${cp.state.kubectl} --kubeconfig ${cp.kubeconfigPath} get ${kinds.join(',')}\nCtrl-C stops the manager; npm run cluster -- down stops the control plane.`,
    );
  }
} catch (err) {
  console.error(`npm start failed: ${err instanceof Error ? err.message : String(err)}`);
  manager.kill('SIGTERM');
  await exited;
  process.exit(1);
}
if (exitWhenReady) manager.kill('SIGTERM');
process.exit(await exited);
