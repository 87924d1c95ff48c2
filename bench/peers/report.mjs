// Reads the JSON lines of a run on stdin and prints readable tables.
import { createInterface } from 'node:readline';

const bench = [];
const probes = [];
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim().startsWith('{')) continue;
  const o = JSON.parse(line);
  if (o.kind === 'bench') bench.push(o);
  else if (o.kind === 'guarantees') probes.push(o);
}

function table(head, rows) {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const fmt = (r) => '| ' + r.map((c, i) => String(c).padEnd(w[i])).join(' | ') + ' |';
  return [fmt(head), '|' + w.map((n) => '-'.repeat(n + 2)).join('|') + '|', ...rows.map(fmt)].join('\n');
}

if (bench.length) {
  const b0 = bench[0];
  console.log(`\nkeyed one-off runs: RUNS=${b0.runs} CONCURRENCY=${b0.concurrency} ENQUEUERS=${b0.enqueuers} MODE=${b0.mode} (node ${b0.node}, ${b0.cpus} CPUs)\n`);
  console.log(
    table(
      ['peer', 'version', 'workload', 'enqueue jobs/s', 'end-to-end jobs/s', 'start latency p50 ms', 'p99 ms', 'completed', 'dup runs'],
      bench.map((b) => [
        b.peer,
        b.version,
        b.workload,
        b.enqueue_jobs_per_s,
        b.e2e_jobs_per_s + (b.timed_out ? ' (TIMED OUT)' : ''),
        b.start_latency_ms.p50,
        b.start_latency_ms.p99,
        `${b.completed}/${b.runs}`,
        b.duplicate_runs,
      ]),
    ),
  );
}

if (probes.length) {
  const ret = (c) => {
    if (!c) return '-';
    if (c.threw) return `threw ${c.threw.error}`;
    const v = c.returned;
    if (v === null || v === undefined) return String(v);
    if (typeof v === 'string') return v.length > 12 ? v.slice(0, 8) + '…' : v;
    return `id ${v.id}`;
  };
  console.log('\nguarantees (runs counted by the handler)\n');
  console.log(
    table(
      ['peer', 'variant', 'pending dup: 1st / 2nd returned', 'runs', 'after completion: returned', 'runs total', 'dup while running: 2nd returned', 'runs total', 'of them during the 1st', 'extra'],
      probes.map((p) => [
        p.peer,
        p.variant,
        `${ret(p.pending_duplicate.first)} / ${ret(p.pending_duplicate.second)}`,
        p.pending_duplicate.runs,
        ret(p.after_completion.third),
        p.after_completion.runs_total,
        ret(p.active_duplicate.second),
        p.active_duplicate.runs_total,
        p.active_duplicate.runs_while_first_active - 1,
        p.after_archive ? `after archive: ${ret(p.after_archive.fourth)}, runs total ${p.after_archive.runs_total}` : '',
      ]),
    ),
  );
}
