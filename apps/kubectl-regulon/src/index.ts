export { run, type RunOptions } from './cli.ts';
export { parseCommandLine, type Command, type GlobalOptions, type Invocation } from './args.ts';
export { statusReport, type StatusReport } from './report.ts';
export { renderStatus } from './render.ts';
export { pickSwitchoverTarget } from './switchover.ts';
