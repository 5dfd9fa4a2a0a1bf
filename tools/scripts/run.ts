import { spawn } from 'node:child_process';

/** Runs a command with inherited stdio; resolves with its exit code. */
export function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: 'inherit', env });
    child.on('error', (err) => {
      console.error(`${cmd}: ${err.message}`);
      resolve(127);
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** Runs the steps in order and exits with the first failure's code. */
export async function steps(list: Array<[string, string, string[]]>): Promise<void> {
  for (const [title, cmd, args] of list) {
    console.log(`\n=== ${title}: ${cmd} ${args.join(' ')}`);
    const started = performance.now();
    const code = await run(cmd, args);
    // Each step's time, for the test-time budget: CI's log then says where a run's minutes went.
    const took = `${((performance.now() - started) / 1000).toFixed(0)} s`;
    if (code !== 0) {
      console.error(`\n=== ${title} failed (exit ${code}) after ${took}`);
      process.exit(code);
    }
    console.log(`=== ${title}: done in ${took}`);
  }
}
