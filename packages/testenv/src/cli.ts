#!/usr/bin/env node
// regulon-testenv: the local control plane from the command line.
//   install [--real-node]  build the control plane's binaries from the Go module
//                     proxy, or find them in the versioned cache, and print their
//                     bin dir; --real-node also the real node's (a second line)
//                     and its images
//   up [--real-node|--real-nodes=2] [--feature-gates=A=true,B=false]  start it in
//                     .cluster/ (or $REGULON_CLUSTER_DIR) and leave it running;
//                     --real-node joins the machine's real node to it, --real-nodes=2
//                     also the second one (real-node-1); --feature-gates are the API
//                     server's (e.g. ShardedListAndWatch=true)
//   down    stop it and remove its directory
//   images  build the real node's images (and the Debian packages that build them)
//   status  show its components, readiness and nodes
//   exec -- CMD ARGS...   run CMD against one control plane (started for the run
//                         unless REGULON_TESTENV_DIR already names a running one)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { ControlPlane, featureGateArgs, parseFeatureGates } from './control-plane.ts';
import { installBinaries } from './binaries.ts';
import { removeIfEmpty, STATE_DIR_ENV } from './env.ts';
import { adminRequest } from './http.ts';
import { ensureImages } from './images.ts';
import { defaultClusterDir } from './paths.ts';

const log = (line: string) => process.stderr.write(`[testenv] ${line}\n`);
const usage =
  'usage: regulon-testenv install [--real-node]|up [--real-node|--real-nodes=2] [--feature-gates=A=true,...]|down|status|images|exec -- COMMAND [ARGS...]';

const GATES = '--feature-gates=';

async function running(dir: string): Promise<ControlPlane | undefined> {
  if (!ControlPlane.exists(dir)) return undefined;
  const cp = ControlPlane.attach(dir, log);
  try {
    const res = await adminRequest(cp.credentials, 'GET', '/readyz');
    return res.status === 200 ? cp : undefined;
  } catch {
    return undefined;
  }
}

function printAccess(cp: ControlPlane): void {
  const path = relative(process.cwd(), cp.kubeconfigPath) || cp.kubeconfigPath;
  console.log(`kubeconfig: ${cp.kubeconfigPath}`);
  console.log(`server:     ${cp.server}`);
  console.log(`try:        ${cp.state.kubectl} --kubeconfig ${path} get nodes`);
  console.log(`            export KUBECONFIG=${cp.kubeconfigPath}`);
}

async function up(args: string[]): Promise<number> {
  const unknown = args.filter(
    (a) => !['--real-node', '--real-nodes=1', '--real-nodes=2'].includes(a) && !a.startsWith(GATES),
  );
  if (unknown.length) throw new Error(`unknown option ${unknown[0]}\n${usage}`);
  const gatesArg = args.find((a) => a.startsWith(GATES));
  const featureGates = gatesArg ? parseFeatureGates(gatesArg.slice(GATES.length)) : {};
  const realNodes = args.includes('--real-nodes=2')
    ? 2
    : args.some((a) => a.startsWith('--real-node'))
      ? 1
      : 0;
  const dir = defaultClusterDir();
  const existing = await running(dir);
  if (existing) {
    const want = featureGateArgs(featureGates);
    const has = existing.state.components['kube-apiserver']?.args.filter((a) => a.startsWith(GATES)) ?? [];
    if (gatesArg && want.join() !== has.join())
      throw new Error(
        `the running control plane's API server has ${has[0] ?? 'no --feature-gates'}, not ${want[0] ?? 'none'}: npm run cluster -- down first`,
      );
    if (realNodes) await existing.ensureRealNode(undefined, realNodes);
    log('already running');
    printAccess(existing);
    return 0;
  }
  if (ControlPlane.exists(dir)) await ControlPlane.attach(dir).stop();
  rmSync(dir, { recursive: true, force: true });
  const started = Date.now();
  const cp = await ControlPlane.start({ dir, log, realNodes, featureGates });
  log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  printAccess(cp);
  return 0;
}

/**
 * What an installed @regulon/testenv needs before `start()`, the way
 * `setup-envtest use -p path` prints its assets' path: the bin dir on stdout,
 * progress on stderr. The same scripts and cache keys as the repository's own
 * build, so a machine that built there finds everything here.
 */
async function install(args: string[]): Promise<number> {
  const unknown = args.filter((a) => a !== '--real-node');
  if (unknown.length) throw new Error(`unknown option ${unknown[0]}\n${usage}`);
  const started = Date.now();
  console.log(await installBinaries('control-plane', log));
  if (args.includes('--real-node')) {
    console.log(await installBinaries('node', log));
    for (const image of await ensureImages(undefined, { log })) log(`${image.ref}: ${image.archive}`);
  }
  log(`installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return 0;
}

async function down(): Promise<number> {
  const dir = defaultClusterDir();
  if (!ControlPlane.exists(dir)) {
    log('not running');
    return 0;
  }
  await ControlPlane.attach(dir, log).stop();
  rmSync(dir, { recursive: true, force: true });
  log('stopped');
  return 0;
}

async function status(): Promise<number> {
  const dir = defaultClusterDir();
  if (!ControlPlane.exists(dir)) {
    console.log('not running');
    return 1;
  }
  const cp = ControlPlane.attach(dir);
  for (const [name, alive] of Object.entries(cp.alive()))
    console.log(`${name.padEnd(24)} ${alive ? 'running' : 'stopped'}`);
  const ready = await running(dir);
  console.log(`${'api server'.padEnd(24)} ${ready ? 'ready' : 'not ready'}`);
  if (ready)
    console.log(
      `${'nodes ready'.padEnd(24)} ${await cp.readyNodes()}/${cp.state.nodes + cp.realNodeCount}${cp.realNodeCount ? ` (${cp.realNodeCount === 1 ? 'one' : 'two'} real)` : ''}`,
    );
  printAccess(cp);
  return ready ? 0 : 1;
}

async function exec(argv: string[]): Promise<number> {
  if (argv.length === 0) throw new Error(usage);
  const shared = process.env[STATE_DIR_ENV];
  let cp: ControlPlane | undefined;
  let dir: string | undefined;
  if (!(shared && (await running(shared)))) {
    dir = mkdtempSync(join(tmpdir(), 'regulon-testenv-'));
    const started = Date.now();
    const runDir = dir;
    cp = await ControlPlane.start({ dir, log }).catch((err: unknown) => {
      removeIfEmpty(runDir);
      throw err;
    });
    log(`control plane ready in ${((Date.now() - started) / 1000).toFixed(1)} s (${cp.server})`);
  }
  const env = cp ? { ...process.env, [STATE_DIR_ENV]: dir, KUBECONFIG: cp.kubeconfigPath } : process.env;
  const [cmd, ...args] = argv as [string, ...string[]];
  const child = spawn(cmd, args, { stdio: 'inherit', env });
  const forward = (sig: NodeJS.Signals) => child.kill(sig);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  const code = await new Promise<number>((resolve) => {
    child.on('error', (err) => {
      log(`${cmd}: ${err.message}`);
      resolve(127);
    });
    child.on('exit', (c, sig) => resolve(c ?? (sig ? 128 + 15 : 1)));
  });
  if (cp && dir) {
    await cp.stop();
    if (!process.env['REGULON_TESTENV_KEEP']) rmSync(dir, { recursive: true, force: true });
    else log(`kept ${dir}`);
  }
  return code;
}

async function main(): Promise<number> {
  const [command, ...rest] = process.argv.slice(2);
  switch (command) {
    case 'install':
      return install(rest);
    case 'up':
      return up(rest);
    case 'down':
      return down();
    case 'images':
      for (const img of await ensureImages(undefined, { log })) console.log(`${img.ref}\t${img.archive}`);
      return 0;
    case 'status':
      return status();
    case 'exec':
      return exec(rest[0] === '--' ? rest.slice(1) : rest);
    default:
      console.error(usage);
      return 2;
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`regulon-testenv: ${(err as Error).message}`);
    process.exit(1);
  },
);
