import type { DatabaseObject } from './api.ts';
import { ENGINE_DEFAULTS } from './versions.ts';

/** The engine's configuration file from spec.parameters; reserved settings are the operator's. */
export function renderConfig(db: DatabaseObject): { file: string; content: string } {
  const d = ENGINE_DEFAULTS[db.spec.engine];
  const params = Object.entries(db.spec.parameters ?? {}).sort(([a], [b]) => a.localeCompare(b));
  if (db.spec.engine === 'postgres') {
    const lines = [
      `listen_addresses = '*'`,
      `port = ${d.port}`,
      ...params.map(([k, v]) => `${k} = '${v.replace(/'/g, "''")}'`),
    ];
    return { file: 'postgresql.conf', content: `${lines.join('\n')}\n` };
  }
  const lines = [
    '[mysqld]',
    `port = ${d.port}`,
    'bind-address = 0.0.0.0',
    ...params.map(([k, v]) => `${k} = ${v}`),
  ];
  return { file: 'my.cnf', content: `${lines.join('\n')}\n` };
}
