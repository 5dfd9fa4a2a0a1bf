// The admission corpus of every kind as a markdown table, grouped by outcome,
// with what the API server really answered each input: the corpora are run
// (dry-run creates) against a control plane.
//   npx regulon-testenv exec -- node tools/scripts/corpus-table.ts
// Exits non-zero if any input's outcome is not the one its case expects (the
// admission tests fail on the same inputs).
import { KubeClient } from '@regulon/client';
import {
  admit,
  markdownTable,
  problemWith,
  rowFor,
  type AdmissionCorpus,
  type CorpusRow,
} from '@regulon/crd/testing';
import { start } from '@regulon/testenv';
// The corpora live beside each kind's tests and are not part of the apps' exports.
import { CACHE_CORPUS } from '../../apps/cache-controller/src/testing/admission-corpus.ts';
import { DATABASE_CORPUS } from '../../apps/database-controller/src/testing/admission-corpus.ts';
import { MYAPP_CORPUS } from '../../apps/myapp-controller/src/testing/admission-corpus.ts';

const corpora: AdmissionCorpus[] = [DATABASE_CORPUS, CACHE_CORPUS, MYAPP_CORPUS];

const env = await start();
const client = KubeClient.fromKubeConfig(env.kubeConfig, { qps: 200, burst: 200 });
try {
  await env.installCRDs(corpora.map((c) => c.kind.crd()));
  const namespace = await env.newNamespace('corpus-table');
  const rows: CorpusRow[] = [];
  const problems: string[] = [];
  for (const corpus of corpora)
    for (const [i, c] of corpus.cases.entries()) {
      const admission = await admit(client, corpus, c, { name: `c${i}`, namespace });
      rows.push(rowFor(corpus.kind.kind, c, admission));
      const problem = problemWith(c, admission);
      if (problem) problems.push(`${corpus.kind.kind} ${c.field} = ${JSON.stringify(c.value)}: ${problem}`);
    }
  const count = (outcome: string) => rows.filter((r) => r.outcome === outcome).length;
  console.log(markdownTable(rows));
  console.log(
    `\n${rows.length} inputs: ${count('rejected at admission')} rejected at admission, ${count('accepted')} accepted`,
  );
  if (problems.length) {
    console.error(`\n${problems.length} not as expected:\n${problems.join('\n')}`);
    process.exitCode = 1;
  }
} finally {
  client.close();
  await env.stop();
}
