#!/usr/bin/env node
// regulon-manager: every Regulon controller in one process. `--help` lists the options.
import { run } from './run.ts';

process.exitCode = await run();
