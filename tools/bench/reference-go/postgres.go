package main

// The postgres instance's files and container
// (apps/database-controller/src/postgres/{pod,start-script}.ts, config.ts
// postgresOperatorSettings). The long constant texts, the start script and
// pg_hba.conf, come from postgres-files.json, which gen-postgres-files.ts
// renders from the TypeScript functions (reference.test.ts fails while it is
// stale); everything else is rendered here.

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed postgres-files.json
var postgresFilesJSON []byte

// postgresTexts is postgres-files.json.
type postgresTexts struct {
	ReplicationUser  string `json:"replicationUser"`
	PgHba            string `json:"pgHba"`
	StartScript      string `json:"startScript"`
	OperatorSettings struct {
		Asynchronous string `json:"asynchronous"`
		Synchronous  string `json:"synchronous"`
	} `json:"operatorSettings"`
}

var postgresFiles = func() postgresTexts {
	var t postgresTexts
	if err := json.Unmarshal(postgresFilesJSON, &t); err != nil {
		panic(fmt.Sprintf("postgres-files.json: %v", err))
	}
	if t.StartScript == "" || t.PgHba == "" || t.ReplicationUser == "" || t.OperatorSettings.Asynchronous == "" {
		panic("postgres-files.json lacks a text: regenerate it with npx node tools/bench/reference-go/gen-postgres-files.ts")
	}
	return t
}()

const (
	pgConfigMount   = "/etc/postgresql"
	pgDataMount     = "/var/lib/postgresql/data"
	pgData          = pgDataMount + "/pgdata"
	pgTopologyMount = "/etc/regulon/topology"
	startingMarker  = "/tmp/regulon-starting"
)

// databaseNamePlaceholder stands for the Database's name in postgres-files.json's texts
// (gen-postgres-files.ts): no Database name contains it.
const databaseNamePlaceholder = "{{name}}"

// operatorSettings: postgresql.conf's lines before spec.parameters.
func (db *database) operatorSettings() string {
	if db.synchronous {
		// The standbys are named after the Database's Pods (synchronousStandbyNames in config.ts).
		return strings.ReplaceAll(postgresFiles.OperatorSettings.Synchronous, databaseNamePlaceholder, db.name)
	}
	return postgresFiles.OperatorSettings.Asynchronous
}

// postgresContainer (pod.ts): the start script decides how the instance starts.
func (db *database) postgresContainer(credentials, image string) map[string]any {
	n := db.names()
	ns := db.ns()
	fieldEnv := func(name, path string) map[string]any {
		return map[string]any{"name": name, "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": path}}}
	}
	return map[string]any{
		"name":    "postgres",
		"image":   image,
		"command": []any{"bash", pgConfigMount + "/start.sh"},
		"ports":   []any{map[string]any{"name": "postgres", "containerPort": int64(5432)}},
		// A start that fails leaves its last log lines in the Pod's status (pod.ts).
		"terminationMessagePolicy": "FallbackToLogsOnError",
		"env": []any{
			fieldEnv("POD_NAME", "metadata.name"),
			map[string]any{"name": "PRIMARY_HOST", "value": n.clientService + "." + ns + ".svc"},
			map[string]any{"name": "PEERS_HOST", "value": n.headlessService + "." + ns + ".svc"},
			secretEnv("SUPERUSER", credentials, "username", false),
			secretEnv("SUPERUSER_PASSWORD", credentials, "password", false),
			secretEnv("DATABASE", credentials, "database", true),
			secretEnv("REPLICATION_PASSWORD", n.replicationCredentials, "password", false),
		},
		"readinessProbe": map[string]any{
			"exec": map[string]any{"command": []any{
				"sh", "-c",
				`PGPASSWORD="$SUPERUSER_PASSWORD" timeout 3 psql -h 127.0.0.1 -U "$SUPERUSER" -d postgres -tAXc "select 1" >/dev/null`,
			}},
			"periodSeconds":    int64(5),
			"timeoutSeconds":   int64(4),
			"failureThreshold": int64(2),
		},
		"livenessProbe": map[string]any{
			"exec": map[string]any{"command": []any{
				"sh", "-c", "test -e " + startingMarker + " && exit 0; pg_isready -q -h 127.0.0.1; [ $? -lt 2 ]",
			}},
			"initialDelaySeconds": int64(30),
			"periodSeconds":       int64(20),
			"timeoutSeconds":      int64(5),
		},
		"lifecycle": map[string]any{
			"preStop": map[string]any{"exec": map[string]any{"command": []any{
				"sh", "-c", "pg_ctl -D " + pgData + " -m fast -w -t 25 stop || true",
			}}},
		},
		"securityContext": restrictedContainerSecurityContext(),
		"volumeMounts": []any{
			map[string]any{"name": "data", "mountPath": pgDataMount},
			map[string]any{"name": "config", "mountPath": pgConfigMount},
			map[string]any{"name": "topology", "mountPath": pgTopologyMount},
		},
	}
}

// mysqlContainer (children.ts): the official image's entrypoint, one instance.
func (db *database) mysqlContainer(credentials, image string) map[string]any {
	d := db.defaults
	probe := map[string]any{"command": []any{"mysqladmin", "ping", "-h", "127.0.0.1"}}
	return map[string]any{
		"name":  "mysql",
		"image": image,
		"ports": []any{map[string]any{"name": "mysql", "containerPort": d.port}},
		"env": []any{
			secretEnv("MYSQL_ROOT_PASSWORD", credentials, "password", false),
			secretEnv("MYSQL_DATABASE", credentials, "database", true),
		},
		"readinessProbe": map[string]any{"exec": probe, "periodSeconds": int64(10), "timeoutSeconds": int64(5)},
		"livenessProbe": map[string]any{
			"exec": probe, "initialDelaySeconds": int64(30), "periodSeconds": int64(20), "timeoutSeconds": int64(5),
		},
		"securityContext": restrictedContainerSecurityContext(),
		"volumeMounts": []any{
			map[string]any{"name": "data", "mountPath": d.dataDir},
			map[string]any{"name": "config", "mountPath": "/etc/mysql/conf.d"},
		},
	}
}

// replicationSecret: the replication role's password, created once like the
// credentials (replicationCredentials + createOnce's namespace and owner).
func (db *database) replicationSecret(password string) map[string]any {
	m := meta(db.names().replicationCredentials, db.labels())
	setIfPresent(m, "namespace", db.namespace)
	m["ownerReferences"] = []any{db.controllerReference()}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   m,
		"type":       "kubernetes.io/basic-auth",
		"stringData": map[string]any{"username": postgresFiles.ReplicationUser, "password": password},
	}
}
