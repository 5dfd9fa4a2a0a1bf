import { ENGINE_DEFAULTS } from '../versions.ts';

/**
 * mysql's my.cnf: where it listens, then the (validated) parameters. Values
 * are written as my.cnf value syntax, as they always were (surrounding
 * quotes, `\` escapes and a `#` comment keep their meaning), so existing
 * Databases render unchanged. That stays inside its own line: mysqld splits
 * the file at line breaks only (refused before this), the name ends at the
 * first `=` (names have none), and a directive (`!include`, `[group]`) is only
 * one at the start of a line, where the name is.
 */
export function renderMysqlConf(parameters: [string, string][]): string {
  const lines = [
    '[mysqld]',
    `port = ${ENGINE_DEFAULTS.mysql.port}`,
    'bind-address = 0.0.0.0',
    ...parameters.map(([k, v]) => `${k} = ${v}`),
  ];
  return `${lines.join('\n')}\n`;
}
