#!/usr/bin/env node
// regulon: scaffolding for an operator project.
//   regulon init [DIR] [--name NAME] [--skip-install]
//   regulon create api --group GROUP --version VERSION --kind KIND [--plural PLURAL]
import { main } from './commands.ts';

process.exitCode = main(process.argv.slice(2));
