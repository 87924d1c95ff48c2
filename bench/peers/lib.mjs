// Shared harness for the peer benchmarks: parameters, the timed run, the
// statistics and the JSON line. Each peer script supplies the queue-specific
// parts (setup, enqueue, start workers, wait until the store has settled,
// teardown).
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import os from 'node:os';

const require = createRequire(import.meta.url);

export { sleep };

function intEnv(name, dflt) {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${v}`);
  return n;
}

export const params = {
  runs: intEnv('RUNS', 10000),
  concurrency: intEnv('CONCURRENCY', 8),
  enqueuers: intEnv('ENQUEUERS', 8),
  workload: process.env.WORKLOAD || 'noop',
  mode: process.env.MODE || 'concurrent',
  timeoutS: intEnv('TIMEOUT_S', 240),
};

if (!['noop', 'sleep10'].includes(params.workload)) {
  throw new Error(`unknown WORKLOAD ${params.workload} (noop, sleep10)`);
}
if (!['concurrent', 'prefill'].includes(params.mode)) {
  throw new Error(`unknown MODE ${params.mode} (concurrent, prefill)`);
}

export function pkgVersion(name) {
  return require(`${name}/package.json`).version;
}

export function key(i) {
  return `order-${i}`;
}

// The job body: nothing, or await a 10 ms timer.
export async function work() {
  if (params.workload === 'sleep10') await sleep(10);
}

function pct(sorted, p) {
  if (sorted.length === 0) return null;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}

const r1 = (x) => (x === null || Number.isNaN(x) ? null : Math.round(x * 10) / 10);
const r3 = (x) => (x === null || Number.isNaN(x) ? null : Math.round(x * 1000) / 1000);

/**
 * Runs one timed benchmark and prints its JSON line on stdout.
 *
 * peer: {
 *   name, version, settings,
 *   setup(): prepare a fresh schema / db (untimed),
 *   startWorkers(handle): start workers; handle(i) runs job i and must be awaited by the worker,
 *   enqueue(i): enqueue job i under key(i); resolves to the id the library returned (or null),
 *   settled(): resolves true once the store shows every job finished (polled),
 *   teardown(),
 * }
 */
export async function runBench(peer) {
  const n = params.runs;
  const resolvedAt = new Float64Array(n).fill(NaN);
  const startedAt = new Float64Array(n).fill(NaN);
  const runsPerJob = new Uint32Array(n);
  let finished = 0;
  let duplicateRuns = 0;
  let lastDone = NaN;
  let nullIds = 0;
  let allDone;
  const allDonePromise = new Promise((res) => (allDone = res));

  async function handle(i) {
    const t = performance.now();
    const first = runsPerJob[i]++ === 0;
    if (first) startedAt[i] = t;
    else duplicateRuns++;
    await work();
    if (first) {
      finished++;
      if (finished === n) {
        lastDone = performance.now();
        allDone();
      }
    }
  }

  await peer.setup();

  async function enqueueAll() {
    let next = 0;
    const one = async () => {
      for (;;) {
        const i = next++;
        if (i >= n) return;
        const id = await peer.enqueue(i);
        resolvedAt[i] = performance.now();
        if (id === null || id === undefined) nullIds++;
      }
    };
    await Promise.all(Array.from({ length: params.enqueuers }, one));
  }

  let t0, tEnqDone, tWorkersStarted;
  if (params.mode === 'concurrent') {
    await peer.startWorkers(handle);
    t0 = performance.now();
    tWorkersStarted = t0;
    await enqueueAll();
    tEnqDone = performance.now();
  } else {
    t0 = performance.now();
    await enqueueAll();
    tEnqDone = performance.now();
    await peer.startWorkers(handle);
    tWorkersStarted = performance.now();
  }

  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    allDone();
  }, params.timeoutS * 1000);
  await allDonePromise;
  clearTimeout(timer);
  if (timedOut) lastDone = performance.now();

  // How long after the last handler returned the store showed every job
  // finished (completion writes can be asynchronous or batched).
  let settledMs = null;
  if (!timedOut) {
    const deadline = Date.now() + 30000;
    for (;;) {
      if (await peer.settled()) {
        settledMs = performance.now() - lastDone;
        break;
      }
      if (Date.now() > deadline) break;
      await sleep(20);
    }
  }
  // A short grace period to catch a late duplicate run.
  await sleep(500);

  const lat = [];
  for (let i = 0; i < n; i++) {
    if (!Number.isNaN(startedAt[i]) && !Number.isNaN(resolvedAt[i])) lat.push(startedAt[i] - resolvedAt[i]);
  }
  lat.sort((a, b) => a - b);

  const enqueueS = (tEnqDone - t0) / 1000;
  const e2eS = (lastDone - t0) / 1000;
  const line = {
    kind: 'bench',
    peer: peer.name,
    version: peer.version,
    workload: params.workload,
    mode: params.mode,
    runs: n,
    concurrency: params.concurrency,
    enqueuers: params.enqueuers,
    completed: finished,
    timed_out: timedOut,
    duplicate_runs: duplicateRuns,
    enqueue_null_ids: nullIds,
    enqueue_s: r3(enqueueS),
    enqueue_jobs_per_s: r1(n / enqueueS),
    e2e_s: r3(e2eS),
    e2e_jobs_per_s: r1(finished / e2eS),
    drain_after_workers_start_jobs_per_s: params.mode === 'prefill' ? r1(finished / ((lastDone - tWorkersStarted) / 1000)) : undefined,
    start_latency_ms: { p50: r1(pct(lat, 50)), p99: r1(pct(lat, 99)), max: r1(lat.length ? lat[lat.length - 1] : null), min: r1(lat.length ? lat[0] : null) },
    store_settled_after_last_run_ms: r1(settledMs),
    settings: peer.settings,
    node: process.version,
    cpus: os.cpus().length,
  };
  process.stdout.write(JSON.stringify(line) + '\n');
  await peer.teardown();
  return line;
}

/** Polls fn() until it returns true or ms elapse; returns the last value. */
export async function waitFor(fn, ms = 10000, step = 20) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() > deadline) return v;
    await sleep(step);
  }
}

export function errorInfo(e) {
  return { error: e?.constructor?.name ?? 'Error', message: String(e?.message ?? e) };
}

/** Runs fn, returning { value } or { threw: {error, message} }. */
export async function capture(fn) {
  try {
    return { value: await fn() };
  } catch (e) {
    return { threw: errorInfo(e) };
  }
}

/**
 * The "guarantees" probe, the same steps for every peer:
 *  pending:  enqueue key A twice before any worker runs, then start the worker;
 *  completed: once A's run has finished (and the store shows it finished),
 *             enqueue A again;
 *  active:   enqueue key B, and while B's handler is running enqueue B again.
 * It counts the handler runs per key and records what each enqueue call
 * returned (or threw). `extra` is for peer-specific steps.
 *
 * p: {
 *   name, version, variant, settings,
 *   setup(), teardown(),
 *   enqueue(key, data): the library's raw result (the probe keeps a summary),
 *   summarize(result): a JSON-able summary of what enqueue returned,
 *   startWorker(handler): handler(key, data) must be awaited by the worker,
 *   idle(key): true once the store shows no pending or running job for key,
 *   pollWaitMs: how long to wait for a run that may or may not come,
 *   extra(ctx): optional, returns an object merged into the result,
 * }
 */
export async function runProbe(p) {
  const runs = new Map(); // key -> array of data objects the handler saw
  const gates = new Map(); // key -> {started, release}
  const seen = (k) => [...(runs.get(k) ?? [])];
  async function handler(k, data) {
    if (!runs.has(k)) runs.set(k, []);
    runs.get(k).push(data);
    const g = gates.get(k);
    if (g && data?.block) {
      g.started();
      await g.wait;
    }
  }
  const call = async (k, data) => {
    const r = await capture(() => p.enqueue(k, data));
    return r.threw ? { threw: r.threw } : { returned: await p.summarize(r.value) };
  };
  const waitRuns = async (k, n, ms) => waitFor(() => seen(k).length >= n, ms);

  await p.setup();
  const out = { kind: 'guarantees', peer: p.name, version: p.version, variant: p.variant, settings: p.settings };

  // (a) pending duplicate
  const A = 'order-a';
  const a1 = await call(A, { v: 1 });
  const a2 = await call(A, { v: 2 });
  await p.startWorker(handler);
  await waitRuns(A, 1, 10000);
  await waitFor(() => p.idle(A), 10000);
  await sleep(p.pollWaitMs);
  out.pending_duplicate = { first: a1, second: a2, runs: seen(A).length, data_run: seen(A) };

  // (b) after completion
  const b = await call(A, { v: 3 });
  await waitRuns(A, seen(A).length + 1, p.pollWaitMs + 2000);
  await waitFor(() => p.idle(A), 10000);
  await sleep(p.pollWaitMs);
  out.after_completion = { third: b, runs_total: seen(A).length, data_run: seen(A) };

  // (a2) duplicate while the first job is running
  const B = 'order-b';
  let started, release;
  const startedP = new Promise((r) => (started = r));
  const wait = new Promise((r) => (release = r));
  gates.set(B, { started, wait });
  const c1 = await call(B, { v: 1, block: true });
  await Promise.race([startedP, sleep(10000)]);
  const c2 = await call(B, { v: 2 });
  await sleep(p.pollWaitMs);
  const runsWhileActive = seen(B).length;
  release();
  await waitRuns(B, 2, p.pollWaitMs + 2000);
  await waitFor(() => p.idle(B), 10000);
  await sleep(p.pollWaitMs);
  out.active_duplicate = { first: c1, second: c2, runs_while_first_active: runsWhileActive, runs_total: seen(B).length, data_run: seen(B) };

  if (p.extra) Object.assign(out, await p.extra({ call, seen, waitRuns }));
  process.stdout.write(JSON.stringify(out) + '\n');
  await p.teardown();
  return out;
}
