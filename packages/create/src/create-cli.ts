#!/usr/bin/env node
// `npm create @regulon my-operator`: npm runs this bin, which is `regulon init`.
import { main } from './commands.ts';

process.exitCode = main(['init', ...process.argv.slice(2)]);
