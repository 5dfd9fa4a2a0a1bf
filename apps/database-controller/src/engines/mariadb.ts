import type { EngineBehaviour } from '../engine.ts';
import { instanceVolumes } from '../instance-env.ts';
import { mariadbDriver } from '../mariadb/driver.ts';
import {
  MARIADB_METRICS_COMMAND,
  MARIADB_METRICS_PORT,
  MARIADB_QUORUM_COMMAND,
  MARIADB_ROLE_COMMAND,
  mariadbBackupVolumes,
  mariadbContainer,
  mariadbFiles,
} from '../mariadb/pod.ts';
import { REPLICATION_USER, renderMycnf } from '../mariadb/start-script.ts';
import { myGetoptNaming } from '../mysql/parameters.ts';

/** MariaDB: GTID replication, physical backups by mariabackup (restored to a backup's end only). */
export const mariadb: EngineBehaviour = {
  name: 'mariadb',
  // mariadbd reads my.cnf with the same parser (my_getopt) as mysqld.
  parameters: myGetoptNaming,
  configFile: (db, parameters) => ({
    file: 'my.cnf',
    content: renderMycnf({ synchronous: !!db.spec.replication?.synchronous }, parameters),
  }),
  podFiles: mariadbFiles,
  pod: (db, credentialsSecret, image) => ({
    container: mariadbContainer(db, credentialsSecret, image),
    volumes: [...instanceVolumes(db), ...mariadbBackupVolumes(db).volumes],
  }),
  dump: (host) => ({
    command: `mariadb-dump -h ${host} -u "$USER" --all-databases --single-transaction`,
    passwordEnv: 'MYSQL_PWD',
  }),
  replication: { driver: mariadbDriver, user: REPLICATION_USER },
  backupTool: 'mariabackup',
  archiveNeedsStanza: false,
  pointInTimeRecovery: false,
  divergedDataDefault: 'Keep',
  agent: {
    roleCommand: MARIADB_ROLE_COMMAND,
    quorumCommand: MARIADB_QUORUM_COMMAND,
    metrics: { port: MARIADB_METRICS_PORT, engine: 'mariadb', command: MARIADB_METRICS_COMMAND },
  },
  keepsRecoverySecret: true,
};
