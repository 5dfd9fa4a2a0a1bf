// What the real-node tests run to watch engine instances as an installation
// does: deploy/'s plain scrape job for the instances' agents and the shipped
// instance alerts (group regulon-instances of deploy/monitoring/
// prometheusrule.yaml), each as it ships, told only where the test's API
// server is and which namespace to look in.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, podPids, runPrometheus, type RunningPrometheus } from '@regulon/testenv';
import { parse, stringify } from 'yaml';
import { checkPanels, type GrafanaDashboard, type PanelCheck } from '../scripts/dashboard-queries.ts';
import { dashboardJson, type DashboardSpec } from '../scripts/dashboards.ts';

const deploy = join(import.meta.dirname, '..', '..', 'deploy', 'monitoring');

interface ScrapeJob {
  job_name: string;
  kubernetes_sd_configs: Array<Record<string, unknown>>;
}

/** deploy/'s kubernetes_sd job for the instances, limited to `namespace` of the test's API server. */
export function instancesScrapeJob(kubeconfigPath: string, namespace: string): ScrapeJob {
  const [job] = parse(
    readFileSync(join(deploy, 'scrape-configs', 'regulon-instances.yaml'), 'utf8'),
  ) as ScrapeJob[];
  return {
    ...job!,
    kubernetes_sd_configs: job!.kubernetes_sd_configs.map((sd) => ({
      ...sd,
      kubeconfig_file: kubeconfigPath,
      namespaces: { names: [namespace] },
    })),
  };
}

/**
 * A rules file of the shipped instance alerts with every `for` set to `forDuration`: a test
 * checks that each expression catches the fault it induces on real series within seconds, not
 * that Prometheus waits out a `for` (promtool's cases in tools/scripts/alerts.test.ts do).
 */
export function instanceRulesFile(dir: string, forDuration: string): string {
  const rule = parse(readFileSync(join(deploy, 'prometheusrule.yaml'), 'utf8')) as {
    spec: { groups: Array<{ name: string; rules: Array<{ for?: string }> }> };
  };
  const group = rule.spec.groups.find((g) => g.name === 'regulon-instances');
  if (!group) throw new Error('prometheusrule.yaml has no group regulon-instances');
  const file = join(dir, 'instances.yaml');
  writeFileSync(
    file,
    stringify({ groups: [{ ...group, rules: group.rules.map((r) => ({ ...r, for: forDuration })) }] }),
  );
  return file;
}

/**
 * A real Prometheus scraping the instances in `namespace` every second with deploy/'s job,
 * evaluating the shipped instance alerts every second (their `for` set to `forDuration`).
 */
export async function watchInstances(
  kubeconfigPath: string,
  namespace: string,
  forDuration = '5s',
): Promise<RunningPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'regulon-rules-'));
  const removeRules = () => rmSync(dir, { recursive: true, force: true });
  try {
    const prometheus = await runPrometheus({
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [instanceRulesFile(dir, forDuration)],
      scrape_configs: [instancesScrapeJob(kubeconfigPath, namespace)],
    });
    return { ...prometheus, stop: () => prometheus.stop().finally(removeRules) };
  } catch (err) {
    removeRules();
    throw err;
  }
}

/** The alerts firing now (ALERTS{alertstate="firing"}), each as its name and labels. */
export async function firingAlerts(prometheus: RunningPrometheus): Promise<Array<Record<string, string>>> {
  return (await prometheus.query('ALERTS{alertstate="firing"}')).map((s) => s.metric);
}

/**
 * Waits until `alertname` fires for the instance `pod`; returns every alert firing then, for
 * the caller to check that nothing else does.
 */
export function untilFiring(
  prometheus: RunningPrometheus,
  alertname: string,
  pod: string,
  timeoutMs = 90_000,
): Promise<Array<Record<string, string>>> {
  return eventually(
    `${alertname} firing for ${pod}`,
    async () => {
      const firing = await firingAlerts(prometheus);
      return firing.some((a) => a['alertname'] === alertname && a['pod'] === pod) && firing;
    },
    timeoutMs,
    500,
  );
}

/** Waits until no alert fires. */
export async function untilNoneFiring(prometheus: RunningPrometheus, timeoutMs = 90_000): Promise<void> {
  await eventually(
    'no alert firing',
    async () => (await firingAlerts(prometheus)).length === 0,
    timeoutMs,
    500,
  );
}

/** What `scrapes` scrapes in a row of one instance cost, as its agent reports and the host sees. */
export interface ScrapeCost {
  /** Each scrape's engine read (regulon_instance_scrape_duration_seconds), in ms, ascending. */
  readsMs: number[];
  /**
   * The scrapes whose engine read did not answer within the agent's limit (SCRAPE_TIMEOUT_MS
   * in apps/instance-agent): they said `<engine>_up 0` of an engine that was up.
   */
  unanswered: number;
  /** The agent process's resident memory before and after, in MiB. */
  rssBeforeMiB: number;
  rssAfterMiB: number;
}

/**
 * Scrapes the agent of the Pod `podUid` at `url` `scrapes` times in a row, reading its own
 * figure for each engine read and its process's resident memory (from /proc, on this host: the
 * real node's Pods are its processes) before and after.
 */
export async function scrapeCost(podUid: string, url: string, scrapes: number): Promise<ScrapeCost> {
  const agentPid = podPids(podUid, (argv) => argv.some((a) => a.endsWith('agent.mjs')))[0];
  if (!agentPid) throw new Error(`no agent process in Pod ${podUid}`);
  const rssMiB = () =>
    Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${agentPid}/status`, 'utf8'))?.[1]) / 1024;
  const rssBeforeMiB = rssMiB();
  const readsMs: number[] = [];
  let unanswered = 0;
  for (let i = 0; i < scrapes; i++) {
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${text}`);
    readsMs.push(Number(/^regulon_instance_scrape_duration_seconds ([\d.e-]+)$/m.exec(text)?.[1]) * 1000);
    // The engine's own up series (pg_up, mysql_up, redis_up, memcached_up), with the role label.
    if (!/^(pg|mysql|redis|memcached)_up(\{[^}]*\})? 1$/m.test(text)) unanswered++;
  }
  return { readsMs: readsMs.sort((a, b) => a - b), unanswered, rssBeforeMiB, rssAfterMiB: rssMiB() };
}

/** A cost as a test's diagnostic line says it. */
export const describeCost = (c: ScrapeCost): string =>
  `${c.readsMs.length} scrapes: engine read median ${c.readsMs[Math.floor(c.readsMs.length / 2)]!.toFixed(1)} ms, ` +
  `at most ${c.readsMs.at(-1)!.toFixed(1)} ms, ${c.unanswered} unanswered; the agent's resident memory ${c.rssBeforeMiB.toFixed(1)} MiB before, ${c.rssAfterMiB.toFixed(1)} MiB after`;

/**
 * Runs every panel query of an engine's dashboard (as shipped) against `prometheus`, each
 * variable at Grafana's default: the panels that may be empty say so in their spec.
 */
export async function checkEngineDashboard(
  prometheus: RunningPrometheus,
  spec: DashboardSpec,
): Promise<PanelCheck> {
  return checkPanels(prometheus.url, JSON.parse(dashboardJson(spec)) as GrafanaDashboard, '1m', spec.rows);
}

/**
 * Waits until every rule group has been evaluated after this call: alerts read then reflect the
 * series as they are now, not an evaluation from before every target was scraped.
 */
export async function afterNextEvaluation(prometheus: RunningPrometheus): Promise<void> {
  const since = Date.now();
  await eventually(
    'every rule group evaluated again',
    async () => {
      const res = (await (await fetch(`${prometheus.url}/api/v1/rules`)).json()) as {
        data: { groups: Array<{ lastEvaluation: string }> };
      };
      return res.data.groups.length > 0 && res.data.groups.every((g) => Date.parse(g.lastEvaluation) > since);
    },
    30_000,
    200,
  );
}

/**
 * Asserts that no alert fires at each of `evaluations` evaluations, a second apart, from the
 * next one on. Firing, not pending: with every `for` at 5 s, one slow scrape on a loaded machine
 * makes an alert pending for an evaluation, which the rules as shipped (a minute at the least)
 * ignore by design; firing means the condition held for 5 s.
 */
export async function assertNoneFiring(prometheus: RunningPrometheus, evaluations: number): Promise<void> {
  await afterNextEvaluation(prometheus);
  for (let i = 0; i < evaluations; i++) {
    const firing = await firingAlerts(prometheus);
    if (firing.length) throw new Error(`alerts firing on a healthy system: ${JSON.stringify(firing)}`);
    await afterNextEvaluation(prometheus);
  }
}
