// Every project's tests in two lanes at once, against the one control plane that
// `regulon-testenv exec` gives this process (`npm test` runs it there):
//   - database-controller alone: its real-engine scenarios are about half of the run's
//     test time, and mostly wait on engines (failovers, backups, restores);
//   - every other project, one after another, beside it.
// One lane of all projects in turn put the run past its time budget. Side by side is
// safe because every test keeps to namespaces of its own, scopes its managers and
// webhooks to them, and a test that stops the API server starts a control plane of
// its own (start({ own: true })); the second real node goes to one file at a time.
// Both lanes run to the end, so that one lane's failure still reports the other's.
import { run } from './run.ts';

/** The lane of its own; its name as Nx knows it. */
const ALONE = '@regulon/database-controller';

function laneArgs(lane: 'alone' | 'rest'): string[] {
  const which = lane === 'alone' ? ['--projects', ALONE] : ['--exclude', ALONE];
  // Tests are not cached: they talk to a live control plane, and a replayed
  // pass would prove nothing about this run.
  return ['nx', 'run-many', '--outputStyle=stream', '-t', 'test', '--skipNxCache', ...which];
}

const codes = await Promise.all([run('npx', laneArgs('alone')), run('npx', laneArgs('rest'))]);
process.exit(codes.find((c) => c !== 0) ?? 0);
