#!/usr/bin/env node
// regulon-generate: an operator's deploy/ from its regulon.config.
//   regulon-generate [--config FILE] [--out DIR]   write what is missing or differs
//   regulon-generate --check [...]                 write nothing; exit 1 naming each stale file
import { relative } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from './config.ts';
import { generate, LAYOUT, syncGenerated } from './generate.ts';

const usage = 'usage: regulon-generate [--config FILE] [--out DIR] [--check]';

async function main(argv: string[]): Promise<number> {
  let values: {
    config?: string | undefined;
    out?: string | undefined;
    check?: boolean | undefined;
    help?: boolean | undefined;
  };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        config: { type: 'string' },
        out: { type: 'string' },
        check: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    return 2;
  }
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const loaded = await loadConfig(values.config);
  const outDir = values.out ?? loaded.outDir;
  const shown = (path: string) => relative(process.cwd(), `${outDir}/${path}`) || path;
  const { stale } = syncGenerated(outDir, generate(loaded.config), {
    check: values.check,
    exclusiveDirs: [LAYOUT.crds],
  });
  if (values.check) {
    if (!stale.length) return 0;
    console.error(
      `generated files are out of date:\n${stale.map((s) => `  ${shown(s.path)}: ${s.reason}`).join('\n')}\nrun: npx regulon-generate`,
    );
    return 1;
  }
  for (const s of stale)
    console.log(`${s.reason === 'no longer generated' ? 'removed' : 'wrote'} ${shown(s.path)}`);
  return 0;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  console.error(`regulon-generate: ${(err as Error).message}`);
  process.exitCode = 1;
}
