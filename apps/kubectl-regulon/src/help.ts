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
  backup DATABASE               take a backup now (a DatabaseBackup)
  logs KIND NAME                the logs of every instance, each line prefixed with its Pod and role

Run "kubectl regulon COMMAND --help" for a command's options.

${GLOBAL_OPTIONS}

Exit codes: 0 done; 1 a failure to act on (its reason on stderr); 2 a usage error.`;

export const COMMAND_HELP: Record<string, string> = {
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
};
