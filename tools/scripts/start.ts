// `npm start`: the main job on the embedded local control plane.
// Brings up (or reuses) the control plane in .cluster/ and prints how to reach it.
import { run } from './run.ts';

const code = await run('regulon-testenv', ['up']);
if (code !== 0) process.exit(code);
console.log('\nThe control plane keeps running; stop it with: npm run cluster -- down');
