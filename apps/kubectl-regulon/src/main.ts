#!/usr/bin/env node
// `kubectl regulon …` (kubectl runs kubectl-regulon from PATH) and `npx kubectl-regulon …`.
import { run } from './cli.ts';

const controller = new AbortController();
// Ctrl-C during --wait: stop waiting (the request already sent stands), exit as a shell expects.
process.once('SIGINT', () => controller.abort());

process.exitCode = await run(process.argv.slice(2), {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  signal: controller.signal,
});
