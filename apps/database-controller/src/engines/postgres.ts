import type { EngineBehaviour } from '../engine.ts';
import { instanceVolumes } from '../instance-env.ts';
import { renderPostgresConf } from '../postgres/config.ts';
import { postgresDriver } from '../postgres/driver.ts';
import { gucNaming } from '../postgres/parameters.ts';
import {
  pgbackrestVolumes,
  postgresContainer,
  postgresFiles,
  POSTGRES_METRICS_COMMAND,
  POSTGRES_METRICS_PORT,
  POSTGRES_QUORUM_COMMAND,
  POSTGRES_ROLE_COMMAND,
} from '../postgres/pod.ts';
import { REPLICATION_USER } from '../postgres/start-script.ts';

/** PostgreSQL: streaming replication, WAL archived and backed up by pgBackRest. */
export const postgres: EngineBehaviour = {
  name: 'postgres',
  parameters: gucNaming,
  configFile: (db, parameters) => ({ file: 'postgresql.conf', content: renderPostgresConf(db, parameters) }),
  podFiles: postgresFiles,
  pod: (db, credentialsSecret, image) => ({
    container: postgresContainer(db, credentialsSecret, image),
    volumes: [...instanceVolumes(db), ...pgbackrestVolumes(db).volumes],
  }),
  dump: (host) => ({ command: `pg_dumpall -h ${host} -U "$USER"`, passwordEnv: 'PGPASSWORD' }),
  replication: { driver: postgresDriver, user: REPLICATION_USER },
  backupTool: 'pgBackRest',
  archiveNeedsStanza: true,
  pointInTimeRecovery: true,
  divergedDataDefault: 'Discard',
  keepsRecoverySecret: true,
  agent: {
    roleCommand: POSTGRES_ROLE_COMMAND,
    quorumCommand: POSTGRES_QUORUM_COMMAND,
    metrics: { port: POSTGRES_METRICS_PORT, engine: 'postgres', command: POSTGRES_METRICS_COMMAND },
  },
};
