// Graphile Worker (PostgreSQL). Usage: node graphile.mjs bench|probe
//
// Concurrency knob: `concurrency` of run() (preset.worker.concurrentJobs),
// the number of jobs one worker pool runs at once. New jobs are announced
// by LISTEN/NOTIFY, so pollInterval only matters for future jobs and retries.
import { run, makeWorkerUtils, Logger } from 'graphile-worker';
import pg from 'pg';
import { params, pkgVersion, key, runBench, runProbe, waitFor } from './lib.mjs';

const PG_URL = process.env.PG_URL;
if (!PG_URL) throw new Error('PG_URL is required');
const SCHEMA = process.env.GRAPHILE_SCHEMA || 'bench_graphile';
const TASK = 'bench';
const POLL_MS = Number(process.env.GRAPHILE_POLL_MS || 2000); // the default
// The runner's pool: the docs advise max(10, concurrentJobs + 2). The
// enqueuers use a WorkerUtils pool of their own (ENQUEUERS + 2).
const POOL_MAX = Number(process.env.GRAPHILE_POOL_MAX || Math.max(10, params.concurrency + 2));
const UTILS_POOL_MAX = params.enqueuers + 2;
// The batching settings the Graphile Worker performance guide gives as a
// starting point for high-throughput queues.
const LOCAL_QUEUE = Number(process.env.GRAPHILE_LOCAL_QUEUE || params.concurrency + 1);
const BATCH_DELAY = Number(process.env.GRAPHILE_BATCH_DELAY_MS ?? 250);
const JOB_KEY_MODE = process.env.GRAPHILE_JOB_KEY_MODE || 'replace'; // the default mode
const version = pkgVersion('graphile-worker');

// Warnings and errors only.
const logger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') process.stderr.write(`graphile-worker ${level}: ${message}\n`);
});

async function freshSchema() {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await c.end();
}

function preset(batching) {
  return {
    worker: batching
      ? { localQueue: { size: LOCAL_QUEUE }, completeJobBatchDelay: BATCH_DELAY, failJobBatchDelay: BATCH_DELAY }
      : {},
  };
}

function runnerOptions(taskList, batching) {
  return {
    connectionString: PG_URL,
    schema: SCHEMA,
    concurrency: params.concurrency,
    pollInterval: POLL_MS,
    maxPoolSize: POOL_MAX,
    noHandleSignals: true,
    logger,
    taskList,
    preset: preset(batching),
  };
}

async function bench() {
  let runner, utils;
  await runBench({
    name: 'graphile-worker',
    version,
    settings: {
      dedup: `addJob(..., {jobKey: key, jobKeyMode: '${JOB_KEY_MODE}'})`,
      concurrency: params.concurrency,
      pollInterval_ms: POLL_MS,
      maxPoolSize: POOL_MAX,
      enqueue_pool_max: UTILS_POOL_MAX,
      localQueue_size: LOCAL_QUEUE,
      completeJobBatchDelay_ms: BATCH_DELAY,
      failJobBatchDelay_ms: BATCH_DELAY,
      enqueue_via: 'WorkerUtils.addJob',
    },
    async setup() {
      await freshSchema();
      utils = await makeWorkerUtils({ connectionString: PG_URL, schema: SCHEMA, maxPoolSize: UTILS_POOL_MAX, logger });
      await utils.migrate();
    },
    async startWorkers(handle) {
      runner = await run(runnerOptions({ [TASK]: async (payload) => handle(payload.i) }, true));
    },
    async enqueue(i) {
      const job = await utils.addJob(TASK, { i }, { jobKey: key(i), jobKeyMode: JOB_KEY_MODE });
      return job?.id ?? null;
    },
    async settled() {
      const { rows } = await utils.withPgClient((c) => c.query(`SELECT count(*)::int AS n FROM ${SCHEMA}._private_jobs`));
      return rows[0].n === 0;
    },
    async teardown() {
      await runner.stop();
      await utils.release();
    },
  });
}

async function probe(mode) {
  let runner, utils;
  await runProbe({
    name: 'graphile-worker',
    version,
    variant: `jobKeyMode=${mode}`,
    settings: { concurrency: params.concurrency, pollInterval_ms: POLL_MS, batching: 'off (defaults)' },
    pollWaitMs: 1000,
    async setup() {
      await freshSchema();
      utils = await makeWorkerUtils({ connectionString: PG_URL, schema: SCHEMA, logger });
      await utils.migrate();
    },
    enqueue(k, data) {
      return utils.addJob(TASK, { k, ...data }, { jobKey: k, jobKeyMode: mode });
    },
    summarize(job) {
      if (!job) return job;
      return { id: job.id, key: job.key, payload: job.payload, attempts: job.attempts, max_attempts: job.max_attempts, locked: job.locked_at !== null };
    },
    async startWorker(handler) {
      runner = await run(
        runnerOptions({ [TASK]: async ({ k, ...data }) => handler(k, data) }, false),
      );
    },
    async idle(k) {
      const { rows } = await utils.withPgClient((c) =>
        c.query(`SELECT count(*)::int AS n FROM ${SCHEMA}._private_jobs WHERE payload->>'k' = $1`, [k]),
      );
      return rows[0].n === 0;
    },
    async teardown() {
      await runner.stop();
      await utils.release();
    },
  });
}

const cmd = process.argv[2] || 'bench';
if (cmd === 'bench') await bench();
else if (cmd === 'probe') {
  for (const m of ['replace', 'unsafe_dedupe']) await probe(m);
} else throw new Error(`unknown command ${cmd}`);
process.exit(0);
