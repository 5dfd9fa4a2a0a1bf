// A stand-in engine for the agent's tests: it runs until stopped. It writes
// `ready` into the directory named by its first argument once it handles
// SIGTERM, and on the SIGTERM of a graceful stop records when it went (epoch
// ms) in `stopped` before exiting. A SIGKILL (a fence) leaves no record, as it
// would leave none on a real engine.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
if (!dir) throw new Error('usage: engine.ts DIR');
process.on('SIGTERM', () => {
  writeFileSync(join(dir, 'stopped'), String(Date.now()));
  process.exit(0);
});
writeFileSync(join(dir, 'ready'), '');
setInterval(() => undefined, 60_000);
