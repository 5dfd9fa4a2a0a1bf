// `--help`: generated from the spec, so it lists every option there is.
import { display, placeholder, rangeText } from './describe.ts';
import { DEFAULT_CONFIG_FLAG, checkSpec, type ConfigFileOptions, type OptionSpecs } from './spec.ts';

export interface HelpOptions extends ConfigFileOptions {
  /** The binary's name, for the usage line. */
  program: string;
  /** A sentence on what the binary does. */
  summary: string;
}

/** `--help` output: every option with its flag, variable, type, default and description, then the precedence. */
export function helpText<const S extends OptionSpecs>(spec: S, opts: HelpOptions): string {
  const configFlag = opts.configFileFlag ?? DEFAULT_CONFIG_FLAG;
  const { defaults } = checkSpec(spec, opts);
  const lines = [`Usage: ${opts.program} [flags]`, '', opts.summary, '', 'Flags:'];
  for (const [key, option] of Object.entries(spec)) {
    const name =
      option.type === 'boolean'
        ? `--${option.flag}, --no-${option.flag}`
        : `--${option.flag} ${placeholder(option)}`;
    const details = [`[env: ${option.env}]`];
    const fallback = defaults.get(key);
    details.push(fallback === undefined ? '[default: none]' : `[default: ${display(option, fallback)}]`);
    const range = rangeText(option, '..');
    if (range) details.push(`[range: ${range}]`);
    lines.push(`  ${name}`, `      ${option.description}`, `      ${details.join(' ')}`);
  }
  lines.push(
    `  --${configFlag} <path>`,
    '      Read options from this YAML or JSON file.',
    ...(opts.configFileEnv ? [`      [env: ${opts.configFileEnv}]`] : []),
    '  -h, --help',
    '      Print this help and exit.',
    '',
    'Precedence, highest first: command-line flag > environment variable > config file > default.',
    'Config file keys are option names (e.g. metricsBindAddress) or flag names (metrics-bind-address).',
    'Durations: 500ms, 15s, 2m, 1h, combinations such as 1h30m, or whole milliseconds.',
    'Booleans in the environment or --flag=value: true, false, 1, 0, yes, no. An empty variable counts as unset.',
    '',
  );
  return lines.join('\n');
}
