import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** One step of a run: its title, then the command and its arguments. */
export type Step = [title: string, cmd: string, args: string[]];

/**
 * Runs a command; resolves with its exit code. Its output goes to ours as it is,
 * or line by line behind `prefix` when one is given (steps running side by side).
 */
export function run(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  prefix?: string,
): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      stdio: prefix === undefined ? 'inherit' : ['inherit', 'pipe', 'pipe'],
      env,
    });
    if (prefix !== undefined) {
      for (const [from, to] of [
        [child.stdout, process.stdout],
        [child.stderr, process.stderr],
      ] as const)
        createInterface({ input: from!, crlfDelay: Infinity }).on('line', (line) =>
          to.write(`${prefix}${line}\n`),
        );
    }
    child.on('error', (err) => {
      console.error(`${prefix ?? ''}${cmd}: ${err.message}`);
      resolve(127);
    });
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/**
 * Runs the steps in order; resolves with the first failure's exit code (and
 * runs nothing after it), or 0. `shouldStop` is asked before each step.
 */
async function runSteps(
  list: Step[],
  prefix?: string,
  shouldStop: () => boolean = () => false,
): Promise<number> {
  const p = prefix ?? '';
  for (const [title, cmd, args] of list) {
    if (shouldStop()) return 0;
    console.log(`\n${p}=== ${title}: ${cmd} ${args.join(' ')}`);
    const started = performance.now();
    const code = await run(cmd, args, process.env, prefix);
    // Each step's time, for the test-time budget: CI's log then says where a run's minutes went.
    const took = `${((performance.now() - started) / 1000).toFixed(0)} s`;
    if (code !== 0) {
      console.error(`\n${p}=== ${title} failed (exit ${code}) after ${took}`);
      return code;
    }
    console.log(`${p}=== ${title}: done in ${took}`);
  }
  return 0;
}

/** Runs the steps in order and exits with the first failure's code. */
export async function steps(list: Step[]): Promise<void> {
  const code = await runSteps(list);
  if (code !== 0) process.exit(code);
}

/**
 * Runs each lane's steps in order and the lanes side by side, each output line
 * behind its lane's name: on a first run, builds that wait on downloads (the
 * images) overlap builds that keep the cores busy (Go). Once a step fails, the
 * other lanes finish the step they are in and start no other; then the run
 * exits with the failure's code.
 */
export async function sideBySide(lanes: Record<string, Step[]>): Promise<void> {
  let failed = 0;
  const started = performance.now();
  const codes = await Promise.all(
    Object.entries(lanes).map(async ([name, list]) => {
      const code = await runSteps(list, `[${name}] `, () => failed !== 0);
      if (code !== 0 && failed === 0) failed = code;
      return code;
    }),
  );
  const code = codes.find((c) => c !== 0) ?? 0;
  if (code !== 0) process.exit(code);
  console.log(
    `=== ${Object.keys(lanes).join(' and ')}, side by side: done in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
}
