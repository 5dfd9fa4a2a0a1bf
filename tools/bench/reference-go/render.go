package main

// What the Database controller wants to exist, built as plain JSON maps
// (apps/database-controller/src/{names,config,children}.ts and
// packages/runtime/src/apply.ts childApplyBody). Maps rather than typed
// structs because the bodies are sent with server-side apply, and an apply
// body must hold exactly the fields the controller owns: typed structs would
// add zero values (creationTimestamp: null, resources: {}, ...) that the
// TypeScript controller never sends, and the applied-hash would differ.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"
)

const (
	group                = "regulon.dev"
	version              = "v1beta1"
	kindDB               = "Database"
	fieldOwner           = "regulon-database"
	maxNameLen           = 45
	roleLabel            = "regulon.dev/role"
	configHashAnnotation = "regulon.dev/config-hash"
	dbUser               = 999
	defaultCron          = "0 3 * * *"
)

type engineDefaults struct {
	image, user, dataDir, scheme string
	port                         int64
}

var engines = map[string]engineDefaults{
	"postgres": {image: "postgres", port: 5432, user: "postgres", dataDir: "/var/lib/postgresql/data", scheme: "postgresql"},
	"mysql":    {image: "mysql", port: 3306, user: "root", dataDir: "/var/lib/mysql", scheme: "mysql"},
}

// database is the view of a Database the rendering needs, read from its JSON
// (an unstructured cache object in the manager, the input in render). Fields
// the CRD makes optional keep their raw JSON value (nil when absent), because
// the TypeScript code treats absent, null and empty differently in places.
type database struct {
	apiVersion, kind any // for the ownerReference; nil when absent
	name             string
	namespace        any // string, or nil when absent
	uid              any
	generation       any // metadata.generation ?? 0
	deleting         bool

	engine           string
	defaults         engineDefaults
	version          string
	replicas         float64
	storageSize      string // String(spec.storage.size)
	storageClassName any
	backup           map[string]any // nil when spec.backup is absent
	resources        map[string]any
	parameters       map[string]any
	credentialsRef   any // spec.credentials.secretName
	pvcRetention     any
	synchronous      bool // spec.replication.synchronous
	annotations      map[string]any

	status map[string]any // nil when absent
	spec   map[string]any
}

// parseDatabase reads a Database from its JSON form. It fails where the
// TypeScript code would throw (an unknown engine, a non-string parameter).
func parseDatabase(obj map[string]any) (*database, error) {
	meta, _ := obj["metadata"].(map[string]any)
	spec, _ := obj["spec"].(map[string]any)
	if meta == nil || spec == nil {
		return nil, fmt.Errorf("database has no metadata or spec")
	}
	db := &database{apiVersion: obj["apiVersion"], kind: obj["kind"], uid: meta["uid"], namespace: meta["namespace"]}
	db.name, _ = meta["name"].(string)
	db.generation = meta["generation"]
	if db.generation == nil {
		db.generation = int64(0)
	}
	db.deleting = meta["deletionTimestamp"] != nil
	db.engine, _ = spec["engine"].(string)
	d, ok := engines[db.engine]
	if !ok {
		return nil, fmt.Errorf("unknown engine %q", db.engine)
	}
	db.defaults = d
	db.version, _ = spec["version"].(string)
	db.replicas, _ = toFloat(spec["replicas"])
	storage, _ := spec["storage"].(map[string]any)
	db.storageSize = jsString(storage["size"])
	db.storageClassName = storage["storageClassName"]
	db.backup, _ = spec["backup"].(map[string]any)
	db.resources, _ = spec["resources"].(map[string]any)
	db.parameters, _ = spec["parameters"].(map[string]any)
	for k, v := range db.parameters {
		if _, ok := v.(string); !ok && db.engine == "postgres" {
			return nil, fmt.Errorf("parameter %s is not a string", k)
		}
	}
	if creds, ok := spec["credentials"].(map[string]any); ok {
		db.credentialsRef = creds["secretName"]
	}
	db.pvcRetention = spec["pvcRetentionPolicy"]
	if replication, ok := spec["replication"].(map[string]any); ok {
		db.synchronous = truthy(replication["synchronous"])
	}
	db.annotations, _ = meta["annotations"].(map[string]any)
	db.status, _ = obj["status"].(map[string]any)
	db.spec = spec
	return db, nil
}

// childNames (names.ts).
type childNames struct {
	statefulSet, headlessService, clientService, readOnlyService  string
	credentials, config, serviceAccount, disruptionBudget, backup string
	topology, replicationCredentials                              string
}

func (db *database) names() childNames {
	n := db.name
	creds := n + "-credentials"
	if db.credentialsRef != nil {
		creds = jsString(db.credentialsRef)
	}
	return childNames{
		statefulSet: n, headlessService: n + "-hl", clientService: n, readOnlyService: n + "-ro",
		credentials: creds, config: n + "-config", serviceAccount: n, disruptionBudget: n, backup: n + "-backup",
		topology: n + "-topology", replicationCredentials: n + "-replication",
	}
}

// referencesSecret: spec.credentials.secretName is set (truthy), so no credentials are generated.
func (db *database) referencesSecret() bool { return truthy(db.credentialsRef) }

func (db *database) ns() string { return jsTemplate(db.namespace) }

// jsTemplate is `${v}` for an optional string.
func jsTemplate(v any) string {
	if v == nil {
		return "undefined"
	}
	return jsString(v)
}

// labels: the recommended app.kubernetes.io labels (support.ts recommendedLabels).
func (db *database) labels() map[string]any {
	l := map[string]any{
		"app.kubernetes.io/name":       db.engine,
		"app.kubernetes.io/instance":   db.name,
		"app.kubernetes.io/component":  "database",
		"app.kubernetes.io/part-of":    "regulon",
		"app.kubernetes.io/managed-by": "regulon",
	}
	if db.version != "" {
		l["app.kubernetes.io/version"] = db.version
	}
	return l
}

func (db *database) selector() map[string]any {
	return map[string]any{"app.kubernetes.io/name": db.engine, "app.kubernetes.io/instance": db.name}
}

func (db *database) selectorString() string {
	return "app.kubernetes.io/name=" + db.engine + ",app.kubernetes.io/instance=" + db.name
}

func (db *database) image() string { return db.defaults.image + ":" + db.version }

// number returns a JSON number for a float the spec held: an int64 when whole.
func number(f float64) any {
	if f == float64(int64(f)) {
		return int64(f)
	}
	return f
}

// The collator is not safe for concurrent use; parameters are sorted with
// String.prototype.localeCompare, i.e. ICU root/en collation.
var collators = sync.Pool{New: func() any { return collate.New(language.English) }}

// renderConfig (config.ts): the engine's configuration file from spec.parameters.
func (db *database) renderConfig() (file, content string) {
	keys := make([]string, 0, len(db.parameters))
	for k := range db.parameters {
		keys = append(keys, k)
	}
	if len(keys) > 1 {
		c := collators.Get().(*collate.Collator)
		sort.SliceStable(keys, func(i, j int) bool { return c.CompareString(keys[i], keys[j]) < 0 })
		collators.Put(c)
	}
	var b strings.Builder
	port := jsNumber(float64(db.defaults.port))
	if db.engine == "postgres" {
		b.WriteString(db.operatorSettings())
		for _, k := range keys {
			v, _ := db.parameters[k].(string)
			b.WriteString(k + " = " + postgresValue(v) + "\n")
		}
		return "postgresql.conf", b.String()
	}
	b.WriteString("[mysqld]\nport = " + port + "\nbind-address = 0.0.0.0\n")
	for _, k := range keys {
		b.WriteString(k + " = " + jsString(db.parameters[k]) + "\n")
	}
	return "my.cnf", b.String()
}

// postgresValue: postgresql.conf string syntax, a backslash and a quote doubled.
var postgresEscapes = strings.NewReplacer(`\`, `\\`, "'", "''")

func postgresValue(v string) string { return "'" + postgresEscapes.Replace(v) + "'" }

// configFile is one file of the config ConfigMap.
type configFile struct{ name, content string }

// configFiles: the engine's configuration and, for postgres, pg_hba.conf and
// the start script, in the order the TypeScript object holds them.
func (db *database) configFiles() []configFile {
	file, content := db.renderConfig()
	files := []configFile{{file, content}}
	if db.engine == "postgres" {
		files = append(files, configFile{"pg_hba.conf", postgresFiles.PgHba}, configFile{"start.sh", postgresFiles.StartScript})
	}
	return files
}

// configHash: the template annotation covers every file, so any change rolls the Pods.
func configHash(files []configFile) string {
	parts := make([]string, len(files))
	for i, f := range files {
		parts[i] = f.name + "\n" + f.content
	}
	return contentHash(strings.Join(parts, "\n"))
}

func contentHash(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:8])
}

// controllerReference: garbage collection deletes the child with the Database, and Owns() maps it back.
func (db *database) controllerReference() map[string]any {
	ref := map[string]any{"name": db.name, "controller": true, "blockOwnerDeletion": true}
	setIfPresent(ref, "apiVersion", db.apiVersion)
	setIfPresent(ref, "kind", db.kind)
	setIfPresent(ref, "uid", db.uid)
	return ref
}

func setIfPresent(m map[string]any, k string, v any) {
	if v != nil {
		m[k] = v
	}
}

func meta(name string, labels map[string]any) map[string]any {
	return map[string]any{"name": name, "labels": labels}
}

// The kinds of child, in the order apiVersion/kind are written into apply bodies.
type childKind struct {
	apiVersion, kind string
}

var (
	kindServiceAccount = childKind{"v1", "ServiceAccount"}
	kindConfigMap      = childKind{"v1", "ConfigMap"}
	kindSecret         = childKind{"v1", "Secret"}
	kindService        = childKind{"v1", "Service"}
	kindStatefulSet    = childKind{"apps/v1", "StatefulSet"}
	kindPDB            = childKind{"policy/v1", "PodDisruptionBudget"}
	kindCronJob        = childKind{"batch/v1", "CronJob"}
)

// desiredChild is one child the Database should have (body != nil), or
// should not have (body nil: deleted if the Database controls it).
type desiredChild struct {
	kind childKind
	name string
	body map[string]any // the apply body, hash annotation included
}

func (db *database) service(name string, sel map[string]any, extra map[string]any) map[string]any {
	port := db.defaults.port
	spec := map[string]any{
		"selector": sel,
		"ports":    []any{map[string]any{"name": db.engine, "port": port, "targetPort": port, "protocol": "TCP"}},
	}
	for k, v := range extra {
		spec[k] = v
	}
	return map[string]any{"metadata": meta(name, db.labels()), "spec": spec}
}

func withRole(sel map[string]any, role string) map[string]any {
	out := map[string]any{roleLabel: role}
	for k, v := range sel {
		out[k] = v
	}
	return out
}

func restrictedContainerSecurityContext() map[string]any {
	return map[string]any{
		"allowPrivilegeEscalation": false,
		"readOnlyRootFilesystem":   false,
		"runAsNonRoot":             true,
		"capabilities":             map[string]any{"drop": []any{"ALL"}},
		"seccompProfile":           map[string]any{"type": "RuntimeDefault"},
	}
}

func secretEnv(name, secret, key string, optional bool) map[string]any {
	ref := map[string]any{"name": secret, "key": key}
	if optional {
		ref["optional"] = true
	}
	return map[string]any{"name": name, "valueFrom": map[string]any{"secretKeyRef": ref}}
}

// quantities: requests/limits with every value as a string (String(v)).
func quantities(r map[string]any) map[string]any {
	out := map[string]any{}
	for _, field := range []string{"requests", "limits"} {
		m, ok := r[field].(map[string]any)
		if !ok {
			continue
		}
		s := make(map[string]any, len(m))
		for k, v := range m {
			s[k] = jsString(v)
		}
		out[field] = s
	}
	return out
}

// statefulSet (desiredStatefulSet): instances is spec.replicas, or more
// while the primary still runs on an ordinal being scaled away.
func (db *database) statefulSet(credentials, createdStorageSize string, instances float64) map[string]any {
	n := db.names()
	var container map[string]any
	volumes := []any{map[string]any{"name": "config", "configMap": map[string]any{"name": n.config}}}
	if db.engine == "postgres" {
		container = db.postgresContainer(credentials, db.image())
		volumes = append(volumes, map[string]any{"name": "topology", "configMap": map[string]any{"name": n.topology}})
	} else {
		container = db.mysqlContainer(credentials, db.image())
	}
	if db.resources != nil {
		container["resources"] = quantities(db.resources)
	}
	storage := db.storageSize
	if createdStorageSize != "" {
		storage = createdStorageSize
	}
	claim := map[string]any{
		"accessModes": []any{"ReadWriteOnce"},
		"resources":   map[string]any{"requests": map[string]any{"storage": storage}},
	}
	if truthy(db.storageClassName) {
		claim["storageClassName"] = db.storageClassName
	}
	whenDeleted := db.pvcRetention
	if whenDeleted == nil {
		whenDeleted = "Retain"
	}
	// Several instances: the manager replaces the Pods itself, replicas first (desiredStatefulSet).
	strategy := "RollingUpdate"
	if instances > 1 {
		strategy = "OnDelete"
	}
	return map[string]any{
		"metadata": meta(n.statefulSet, db.labels()),
		"spec": map[string]any{
			"serviceName":         n.headlessService,
			"replicas":            number(instances),
			"selector":            map[string]any{"matchLabels": db.selector()},
			"podManagementPolicy": "Parallel",
			"updateStrategy":      map[string]any{"type": strategy},
			"persistentVolumeClaimRetentionPolicy": map[string]any{
				"whenDeleted": whenDeleted,
				"whenScaled":  "Retain",
			},
			"template": map[string]any{
				"metadata": map[string]any{
					"labels":      db.labels(),
					"annotations": map[string]any{configHashAnnotation: configHash(db.configFiles())},
				},
				"spec": map[string]any{
					"serviceAccountName":           n.serviceAccount,
					"automountServiceAccountToken": false,
					"securityContext": map[string]any{
						"runAsNonRoot":   true,
						"runAsUser":      int64(dbUser),
						"runAsGroup":     int64(dbUser),
						"fsGroup":        int64(dbUser),
						"seccompProfile": map[string]any{"type": "RuntimeDefault"},
					},
					"containers": []any{container},
					"volumes":    volumes,
				},
			},
			"volumeClaimTemplates": []any{
				map[string]any{"metadata": map[string]any{"name": "data", "labels": db.selector()}, "spec": claim},
			},
		},
	}
}

// throwawayBackups: backups enabled without an object store (children.ts throwawayBackups).
func (db *database) throwawayBackups() bool {
	return db.backup != nil && truthy(db.backup["enabled"]) && db.backup["objectStore"] == nil
}

func (db *database) backupCronJob(credentials string) map[string]any {
	// Only for backups enabled without an object store (a Database stored before the CRD refused
	// them); no spec.backup means no backups, as in children.ts.
	if !db.throwawayBackups() {
		return nil
	}
	backup := db.backup
	n := db.names()
	host := n.clientService + "." + db.ns() + ".svc"
	var command []any
	passwordVar := "MYSQL_PWD"
	if db.engine == "postgres" {
		command = []any{"sh", "-c", "pg_dumpall -h " + host + ` -U "$USER" > /backup/dump-$(date +%Y%m%d%H%M%S).sql`}
		passwordVar = "PGPASSWORD"
	} else {
		command = []any{"sh", "-c", "mysqldump -h " + host + ` -u "$USER" --all-databases > /backup/dump-$(date +%Y%m%d%H%M%S).sql`}
	}
	podLabels := db.labels()
	podLabels["app.kubernetes.io/component"] = "backup"
	spec := map[string]any{
		"concurrencyPolicy": "Forbid",
		"jobTemplate": map[string]any{
			"metadata": map[string]any{"labels": db.labels()},
			"spec": map[string]any{
				"backoffLimit": int64(2),
				"template": map[string]any{
					"metadata": map[string]any{"labels": podLabels},
					"spec": map[string]any{
						"restartPolicy":                "OnFailure",
						"serviceAccountName":           n.serviceAccount,
						"automountServiceAccountToken": false,
						"securityContext": map[string]any{
							"runAsNonRoot":   true,
							"runAsUser":      int64(dbUser),
							"seccompProfile": map[string]any{"type": "RuntimeDefault"},
						},
						"containers": []any{map[string]any{
							"name":    "backup",
							"image":   db.image(),
							"command": command,
							"env": []any{
								secretEnv("USER", credentials, "username", false),
								secretEnv(passwordVar, credentials, "password", false),
							},
							"securityContext": restrictedContainerSecurityContext(),
							"volumeMounts":    []any{map[string]any{"name": "backup", "mountPath": "/backup"}},
						}},
						"volumes": []any{map[string]any{"name": "backup", "emptyDir": map[string]any{}}},
					},
				},
			},
		},
	}
	// Absent members stay absent, as undefined ones vanish from the TypeScript body.
	setIfPresent(spec, "schedule", backup["schedule"])
	setIfPresent(spec, "successfulJobsHistoryLimit", backup["historyLimit"])
	setIfPresent(spec, "failedJobsHistoryLimit", backup["historyLimit"])
	return map[string]any{"metadata": meta(n.backup, db.labels()), "spec": spec}
}

// desiredChildren: every child but the credentials Secret, in apply order,
// each as its apply body. createdStorageSize is the live StatefulSet's claim
// size: volumeClaimTemplates are immutable, so the template keeps it.
func (db *database) desiredChildren(createdStorageSize string, instances float64) []desiredChild {
	n := db.names()
	headless := db.service(n.headlessService, db.selector(), map[string]any{"clusterIP": "None", "publishNotReadyAddresses": true})
	client := db.service(n.clientService, withRole(db.selector(), "primary"), nil)
	var readOnly, pdb map[string]any
	if db.replicas > 1 {
		readOnly = db.service(n.readOnlyService, withRole(db.selector(), "replica"), nil)
		pdb = map[string]any{
			"metadata": meta(n.disruptionBudget, db.labels()),
			"spec":     map[string]any{"maxUnavailable": int64(1), "selector": map[string]any{"matchLabels": db.selector()}},
		}
	}
	data := map[string]any{}
	for _, f := range db.configFiles() {
		data[f.name] = f.content
	}
	children := []desiredChild{
		{kindServiceAccount, n.serviceAccount, map[string]any{"metadata": meta(n.serviceAccount, db.labels()), "automountServiceAccountToken": false}},
		{kindConfigMap, n.config, map[string]any{"metadata": meta(n.config, db.labels()), "data": data}},
		{kindService, n.headlessService, headless},
		{kindService, n.clientService, client},
		{kindService, n.readOnlyService, readOnly},
		{kindStatefulSet, n.statefulSet, db.statefulSet(n.credentials, createdStorageSize, instances)},
		{kindPDB, n.disruptionBudget, pdb},
		{kindCronJob, n.backup, db.backupCronJob(n.credentials)},
	}
	for i := range children {
		if children[i].body != nil {
			children[i].body = db.applyBody(children[i].kind, children[i].body)
		}
	}
	return children
}

// applyBody (childApplyBody): type, namespace, the controller ownerReference
// and the applied-hash annotation added to the desired object.
func (db *database) applyBody(k childKind, desired map[string]any) map[string]any {
	desired["apiVersion"] = k.apiVersion
	desired["kind"] = k.kind
	m := desired["metadata"].(map[string]any)
	if _, ok := m["namespace"]; !ok {
		setIfPresent(m, "namespace", db.namespace)
	}
	m["ownerReferences"] = []any{db.controllerReference()}
	return withAppliedHash(desired)
}

// credentialsSecret: the generated credentials, created once and never
// rewritten (generatedCredentials + createSecretOnce's namespace and owner).
func (db *database) credentialsSecret(password string) map[string]any {
	d := db.defaults
	n := db.names()
	host := n.clientService + "." + db.ns() + ".svc"
	port := jsNumber(float64(d.port))
	m := meta(n.credentials, db.labels())
	setIfPresent(m, "namespace", db.namespace)
	m["ownerReferences"] = []any{db.controllerReference()}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   m,
		"type":       "servicebinding.io/" + db.engine,
		"stringData": map[string]any{
			"type":     db.engine,
			"provider": "regulon",
			"host":     host,
			"port":     port,
			"username": d.user,
			"password": password,
			"database": "app",
			"uri":      d.scheme + "://" + d.user + ":" + encodeURIComponent(password) + "@" + host + ":" + port + "/app",
		},
	}
}
