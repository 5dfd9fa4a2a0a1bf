// The command line every framework subject takes, Node or Go alike.
import { parseArgs } from 'node:util';
import type { PopulationKind } from '../population.ts';

export interface SubjectArgs {
  kubeconfig: string;
  kind: PopulationKind;
  namespace: string;
  /** host:port of /readyz. */
  healthAddress: string;
  concurrency: number;
}

export function subjectArgs(argv: readonly string[] = process.argv.slice(2)): SubjectArgs {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      kubeconfig: { type: 'string' },
      kind: { type: 'string', default: 'widgets' },
      namespace: { type: 'string' },
      'health-probe-bind-address': { type: 'string' },
      concurrency: { type: 'string', default: '1' },
    },
  });
  const kind = values.kind;
  if (kind !== 'widgets' && kind !== 'configmaps')
    throw new Error(`--kind: widgets or configmaps, not "${kind}"`);
  if (!values.kubeconfig) throw new Error('--kubeconfig is required');
  if (!values.namespace) throw new Error('--namespace is required');
  if (!values['health-probe-bind-address']) throw new Error('--health-probe-bind-address is required');
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('--concurrency: a positive integer');
  return {
    kubeconfig: values.kubeconfig,
    kind,
    namespace: values.namespace,
    healthAddress: values['health-probe-bind-address'],
    concurrency,
  };
}
