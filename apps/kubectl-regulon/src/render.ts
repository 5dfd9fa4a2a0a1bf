// The text screen of `status`: a StatusReport as a person reads it, in the
// order they look (what it is and whether it serves, then the instances, then
// backups, then why: conditions and Events).
import type { BackupReport, InstanceReport, StatusReport } from './report.ts';
import { time } from './report.ts';

export function renderStatus(r: StatusReport, now: Date): string {
  const sections = [
    header(r, now),
    r.instances.length ? section('Instances', instanceTable(r.instances)) : '',
    r.components?.length
      ? section(
          'Components',
          table(
            ['KIND', 'NAME', 'READY', 'REASON', 'MESSAGE'],
            r.components.map((c) => [c.kind, c.name, String(c.ready), c.reason, c.message]),
          ),
        )
      : '',
    r.backup ? section('Backups', backupLines(r.backup, now)) : '',
    section(
      'Conditions',
      r.conditions.length
        ? table(
            ['TYPE', 'STATUS', 'REASON', 'AGE', 'MESSAGE'],
            r.conditions.map((c) => [c.type, c.status, c.reason, age(c.lastTransitionTime, now), c.message]),
          )
        : ['none yet (the controller has not reported)'],
    ),
    section(
      'Events (newest last)',
      r.events.length
        ? table(
            ['AGE', 'TYPE', 'REASON', 'MESSAGE'],
            r.events.map((e) => [
              age(e.time, now),
              e.type,
              e.reason,
              e.count > 1 ? `${e.note} (x${e.count})` : e.note,
            ]),
          )
        : ['none'],
    ),
  ];
  return sections.filter((s) => s !== '').join('\n\n') + '\n';
}

function header(r: StatusReport, now: Date): string {
  const s = r.spec;
  const what = [
    s.engine && s.version ? `${s.engine} ${s.version}` : s.engine,
    s.mode,
    s.image && `image ${s.image}`,
  ]
    .filter(Boolean)
    .join(', ');
  const ready = r.readyReplicas !== undefined ? ` (${r.readyReplicas} ready)` : '';
  const lines = [
    `${r.kind} ${r.namespace}/${r.name}: ${r.phase ?? 'no status yet'}`,
    field('Spec', `${what}${s.replicas !== undefined ? `, ${s.replicas} replicas${ready}` : ''}`),
  ];
  if (r.currentVersion && r.currentVersion !== s.version) lines.push(field('Running', r.currentVersion));
  if (r.instances.length || r.currentPrimary) lines.push(field('Primary', r.currentPrimary ?? 'none'));
  if (r.endpoint) lines.push(field('Endpoint', r.endpoint));
  if (r.switchover) {
    const { target, state, since, message } = r.switchover;
    lines.push(field('Switchover', `to ${target}: ${state} ${age(since, now)} ago: ${message}`));
  }
  return lines.join('\n');
}

function instanceTable(instances: InstanceReport[]): string[] {
  const rows = instances.map((i) => [
    i.name,
    i.role,
    i.state,
    lag(i),
    i.timeline === undefined ? '-' : String(i.timeline),
    i.position ?? '-',
  ]);
  const lines = table(['NAME', 'ROLE', 'STATE', 'LAG', 'TIMELINE', 'POSITION'], rows);
  for (const i of instances) if (i.replicationError) lines.push(`${i.name}: ${i.replicationError}`);
  return lines;
}

function lag(i: InstanceReport): string {
  if (i.lagBytes !== undefined) return bytes(i.lagBytes);
  if (i.lagTransactions !== undefined) return `${i.lagTransactions} trx`;
  return '-';
}

function backupLines(b: BackupReport, now: Date): string[] {
  const lines = [
    field('Destination', b.destination),
    field('Last backup', b.lastBackup ? `${b.lastBackup} (${age(b.lastBackup, now)} ago)` : 'none'),
  ];
  if (b.latest)
    lines.push(
      field(
        'Newest',
        `${b.latest.name}: ${b.latest.phase}${b.latest.startedAt ? `, started ${age(b.latest.startedAt, now)} ago` : ''}`,
      ),
    );
  const archive = {
    ok: 'archiving, no failure reported',
    failing: `FAILING: ${b.archive.message ?? ''}`,
    none: 'none',
  };
  lines.push(field('WAL archive', archive[b.archive.state]));
  return lines;
}

const field = (name: string, value: string) => `${`${name}:`.padEnd(13)}${value}`;

const section = (title: string, lines: string[]) => [title, ...lines.map((l) => `  ${l}`)].join('\n');

/** Columns padded to their widest cell, as kubectl's tables; the last column is not padded. */
export function table(head: string[], rows: string[][]): string[] {
  const all = [head, ...rows];
  const widths = head.map((_, c) => Math.max(...all.map((r) => (r[c] ?? '').length)));
  return all.map((r) =>
    r
      .map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** kubectl's short ages: 45s, 12m, 5h, 3d. */
export function age(at: string | undefined, now: Date): string {
  if (!at) return '-';
  const s = Math.max(0, Math.floor((now.getTime() - time(at)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 2 * 3600) return `${Math.floor(s / 60)}m`;
  if (s < 2 * 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** 0 B, 12 B, 4.0 KiB, 16.0 MiB. */
export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}
