import type { EngineBehaviour } from '../engine.ts';
import { childNames } from '../names.ts';
import { renderMysqlConf } from '../mysql/config.ts';
import { myGetoptNaming } from '../mysql/parameters.ts';
import { mysqlContainer } from '../mysql/pod.ts';

/**
 * MySQL: one instance run by the official image's entrypoint. It does not
 * replicate (`replicas > 1` is refused by the CRD) and has no backup tool
 * or restore: only the scheduled dump.
 */
export const mysql: EngineBehaviour = {
  name: 'mysql',
  parameters: myGetoptNaming,
  configFile: (_db, parameters) => ({ file: 'my.cnf', content: renderMysqlConf(parameters) }),
  // The official entrypoint starts it: no script of the operator's.
  podFiles: () => ({}),
  pod: (db, credentialsSecret, image) => ({
    container: mysqlContainer(credentialsSecret, image),
    volumes: [{ name: 'config', configMap: { name: childNames(db).config } }],
  }),
  dump: (host) => ({ command: `mysqldump -h ${host} -u "$USER" --all-databases`, passwordEnv: 'MYSQL_PWD' }),
  replication: undefined,
  backupTool: undefined,
  archiveNeedsStanza: false,
  pointInTimeRecovery: false,
  divergedDataDefault: 'Discard',
  agent: undefined,
  keepsRecoverySecret: false,
};
