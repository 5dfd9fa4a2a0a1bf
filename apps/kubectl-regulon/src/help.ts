// The --help texts: one for the plugin, one per command. Options every command
// takes are listed once, in GLOBAL_OPTIONS.
export const GLOBAL_OPTIONS = `Options for every command:
  -n, --namespace NS     the object's namespace (default: the context's, else "default")
      --context NAME     the kubeconfig context to use (default: its current-context)
      --kubeconfig FILE  the kubeconfig file (default: KUBECONFIG, else ~/.kube/config)
  -h, --help             this help`;

export const USAGE = `kubectl regulon: day-two operations on Regulon's Databases, Caches and MyApps

Usage: kubectl regulon COMMAND [ARGS] [OPTIONS]

Commands:
  status KIND NAME              one screen on an object: spec, phase, instances, backups,
                                conditions and recent Events (KIND: database|db, cache|kc, myapp|ma)
  switchover DATABASE [--to P]  move a Database's primary to another instance, cleanly
  promote DATABASE POD          force a failover that waits to promote POD (may lose writes)
  fence DATABASE POD|--all      stop an instance's engine, its Pod kept for inspection; out of the
                                Services, never promoted (a fenced primary: no writes until unfenced)
  unfence DATABASE POD|--all    lift the fence: the engine starts again, and rejoins
  backup DATABASE               take a backup now (a DatabaseBackup)
  logs KIND NAME                the logs of every instance, each line prefixed with its Pod and role
  restore DATABASE NEW_NAME     a new Database from DATABASE's backups: a DatabaseBackup, or a point in time
  psql DATABASE [-- ARGS]       psql in a postgres Database's primary (or a replica), already logged in
  mysql DATABASE [-- ARGS]      the mariadb or mysql client in a Database's primary, already logged in
  redis-cli CACHE [-- ARGS]     redis-cli in a redis Cache's primary, already logged in
  report KIND NAME              a support bundle (object, children, Events, logs; no Secret data)

Run "kubectl regulon COMMAND --help" for a command's options.

${GLOBAL_OPTIONS}

Exit codes: 0 done; 1 a failure to act on (its reason on stderr); 2 a usage error.`;

export const COMMAND_HELP: Record<string, string> = {
  fence: fenceHelp('fence'),
  unfence: fenceHelp('unfence'),
  status: `Usage: kubectl regulon status KIND NAME [-o text|json|yaml]

Shows one object on one screen: its spec (engine, version, replicas), phase,
current primary, each instance (role, state, lag, timeline and position: the
LSN on postgres, the GTID on mariadb), the last backup and WAL archiving (a
Database), every condition, and the newest Events about it (at most 10,
newest last). KIND: database|db, cache|kc, myapp|ma.

  -o, --output FORMAT  text (default), or json or yaml: the same content as a document`,
  switchover: `Usage: kubectl regulon switchover DATABASE [--to POD] [--wait [--timeout D]]

Asks the Database's controller to move the primary to POD (the annotation
regulon.dev/switchover-to): the primary shuts down cleanly, so its last WAL
reaches the standbys, and POD is promoted. A target that trails is given
spec.replication.switchoverCatchUpSeconds to catch up, then the request is
refused; status.switchover says what became of it either way.

      --to POD       the instance to promote (default: the streaming replica with the least lag)
      --wait         wait until POD is the primary, or the request is refused (exit 1)
      --timeout D    how long --wait waits (default 5m)`,
  promote: `Usage: kubectl regulon promote DATABASE POD [--wait [--timeout D]]

Orders the promotion of POD when a failover waits (the annotation
regulon.dev/force-promote): no standby provably holds every acknowledged
write, or too few instances answer a synchronous Database. Writes the old
primary acknowledged and POD lacks are lost; the ForcedFailover Event says
from which position. A Database whose primary serves has nothing to force:
use switchover.

      --wait         wait until a primary serves again (exit 1 if it is not POD)
      --timeout D    how long --wait waits (default 5m)`,
  backup: `Usage: kubectl regulon backup DATABASE [--name NAME] [--wait [--timeout D]]

Creates a DatabaseBackup of DATABASE (a physical backup into its
spec.backup.objectStore, taken on the primary) and prints its name.

      --name NAME    the DatabaseBackup's name (default: DATABASE-<UTC time>)
      --wait         wait until it has finished; exit 1 if it failed
      --timeout D    how long --wait waits (default 30m)`,
  logs: `Usage: kubectl regulon logs KIND NAME [--tail N] [--since D]

Prints the logs of every instance Pod of the object, each line prefixed
with "pod (role)": its role in the object's status (primary, replica,
standby), else the role label the controller sets, else "-". Pods one
after another, in name order.

      --tail N       the last N lines of each Pod
      --since D      only lines newer than D (such as 10m, 1h)`,
  restore: `Usage: kubectl regulon restore DATABASE NEW_NAME [--backup B | --time T] [--wait [--timeout D]]
                                [--dry-run] [-o json|yaml]

Creates the Database NEW_NAME, filled from DATABASE's backups by its
controller (spec.bootstrap.recovery), and prints it. Without --backup or
--time: DATABASE's latest backup in its object store, and its archived WAL
replayed to the end. NEW_NAME gets DATABASE's engine, version, replicas,
storage, replication, parameters, resources and backup settings, with its own
credentials and its own repository in the same object store (its default
path, <namespace>/NEW_NAME). DATABASE is only read: it keeps running.

      --backup B     restore exactly what the DatabaseBackup B holds (postgres, mariadb)
      --time T       recover to the moment T, RFC 3339 such as 2026-11-24T12:00:00Z (postgres):
                     the latest backup before it, then the archived WAL up to T
      --dry-run      print the Database it would create, create nothing (YAML unless -o json)
  -o, --output FMT   print the created Database as json or yaml instead of one line
      --wait         wait until NEW_NAME is Ready; exit 1 if it stalls
      --timeout D    how long --wait waits (default 30m)`,
  psql: clientHelp(
    'psql',
    'DATABASE',
    'a postgres Database',
    'psql orders -- -c "select 1"',
    'SUPERUSER and SUPERUSER_PASSWORD\n(from its credentials Secret), into PGPASSWORD',
  ),
  mysql: clientHelp(
    'mysql',
    'DATABASE',
    'a mariadb or mysql Database (the mariadb client on mariadb)',
    'mysql orders -- -e "select 1"',
    'SUPERUSER_PASSWORD\n(mysql: MYSQL_ROOT_PASSWORD), into MYSQL_PWD',
  ),
  'redis-cli': clientHelp(
    'redis-cli',
    'CACHE',
    'a redis Cache',
    'redis-cli sessions -- info replication',
    'REDISCLI_AUTH,\nwhich redis-cli reads itself',
  ),
  report: `Usage: kubectl regulon report KIND NAME [-f FILE.tar.gz|FILE.zip]

Writes a support bundle of the object, to attach to an issue: the object,
the status screen (text and YAML), the objects it owns (StatefulSets,
Deployments, Pods, Services, PersistentVolumeClaims, Jobs, CronJobs,
PodDisruptionBudgets, Leases), its ConfigMaps (names and keys) and Secrets
(names only), the Events about any of them, and each container's log (the
previous container's too, after a restart). No Secret data is read, so none
is in it; an inline environment value named like a password is REDACTED.
What could not be collected is listed in errors.txt inside. Prints the
file's name. KIND: database|db, cache|kc, myapp|ma.

  -f, --file FILE    where to write it; .tar.gz (or .tgz) or .zip
                     (default: <kind>-NAME-report-<UTC time>.tar.gz here)`,
};

function clientHelp(command: string, what: string, kind: string, example: string, env: string): string {
  return `Usage: kubectl regulon ${command} ${what} [--replica | --instance POD] [-- ARGS...]

Runs ${command} in an instance of ${kind}, connected as its
generated (or given) user: the primary, or with --replica the replica that
serves reads with the least lag. It runs "kubectl exec" (the kubectl on PATH,
with this command's -n, --context and --kubeconfig) with a terminal when
stdin is one, so it is interactive, or reads a script piped in. The password
is never read or printed by the plugin, nor on any command line: the client
takes it in the container from ${env}.
ARGS after "--" go to the client, such as: kubectl regulon ${example}
The exit code is the client's.

      --replica       connect to a replica instead of the primary
      --instance POD  connect to this instance`;
}

function fenceHelp(command: 'fence' | 'unfence'): string {
  const what =
    command === 'fence'
      ? `Fences POD (or every instance) of DATABASE: its engine is stopped and its Pod
kept running, for inspection. It leaves the Services at once, is never chosen
for a failover or switchover, and the Database's status says Fenced (the Fenced
condition, the instance's state). A fenced primary is not failed over: no
instance accepts writes until it is unfenced.`
      : `Lifts the fence from POD (or every instance) of DATABASE: its engine starts
again, a replica rejoins and streams, a primary resumes.`;
  return `Usage: kubectl regulon ${command} DATABASE POD|--all [--wait [--timeout D]]

${what} Other fenced instances stay as they are: the
annotation regulon.dev/fenced-instances (a JSON list of Pod names, or ["*"])
is edited, not replaced, and an edit by someone else meanwhile is not lost.

      --all          every instance (["*"]; unfence --all removes the annotation)
      --wait         wait until the status says ${command === 'fence' ? 'Fenced (the engine stopped)' : 'it serves again (Primary, Streaming or Lagging)'}
      --timeout D    how long --wait waits (default 5m)`;
}
