// pg-boss (PostgreSQL). Usage: node pgboss.mjs bench|probe
//
// Concurrency knob: pg-boss 10 has no per-worker concurrency option (v10
// removed teamSize/teamConcurrency); each work() call is one polling loop
// that fetches up to batchSize jobs per poll. CONCURRENCY = the number of
// work() loops; each loop runs its batch's jobs one after another, so at most
// CONCURRENCY handlers run at once, as with the other peers.
import { createHash } from 'node:crypto';
import PgBoss from 'pg-boss';
import pg from 'pg';
import { params, pkgVersion, key, runBench, runProbe, sleep, waitFor } from './lib.mjs';

const PG_URL = process.env.PG_URL;
if (!PG_URL) throw new Error('PG_URL is required');
const SCHEMA = process.env.PGBOSS_SCHEMA || 'bench_pgboss';
const QUEUE = 'bench';
const BATCH = Number(process.env.PGBOSS_BATCH_SIZE || 50);
const POLL_S = Number(process.env.PGBOSS_POLL_S || 0.5); // the minimum pg-boss accepts
// singletonKey (on a queue of policy `short`: one queued job per key) or id
// (a UUID derived from the key: the job table's primary key).
const DEDUP = process.env.PGBOSS_DEDUP || 'singletonKey';
const POOL_MAX = Number(process.env.PG_POOL_MAX || params.concurrency + params.enqueuers + 2);
const version = pkgVersion('pg-boss');

// RFC 4122 version 5 (name-based, SHA-1) UUID, so a business key maps to a
// stable job id.
const NS = Buffer.from('6ba7b8119dad11d180b400c04fd430c8', 'hex'); // the URL namespace
function uuidv5(name) {
  const h = createHash('sha1').update(NS).update(name).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

async function freshSchema() {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await c.end();
}

function newBoss(extra = {}) {
  const boss = new PgBoss({ connectionString: PG_URL, schema: SCHEMA, max: POOL_MAX, ...extra });
  boss.on('error', (e) => process.stderr.write(`pg-boss error: ${e.message}\n`));
  return boss;
}

function sendOptions(k, dedup) {
  return dedup === 'id' ? { id: uuidv5(k) } : { singletonKey: k };
}

async function bench() {
  let boss;
  const policy = DEDUP === 'id' ? 'standard' : 'short';
  await runBench({
    name: 'pg-boss',
    version,
    settings: {
      dedup: DEDUP === 'id' ? 'send(..., {id: uuidv5(key)})' : 'send(..., {singletonKey: key})',
      queue_policy: policy,
      work_loops: params.concurrency,
      batchSize: BATCH,
      pollingIntervalSeconds: POLL_S,
      batch_jobs_run: 'sequentially within a loop',
      pool_max: POOL_MAX,
      other: 'constructor defaults (supervise, schedule on)',
    },
    async setup() {
      await freshSchema();
      boss = newBoss();
      await boss.start();
      await boss.createQueue(QUEUE, { name: QUEUE, policy });
    },
    async startWorkers(handle) {
      for (let w = 0; w < params.concurrency; w++) {
        await boss.work(QUEUE, { batchSize: BATCH, pollingIntervalSeconds: POLL_S }, async (jobs) => {
          for (const job of jobs) await handle(job.data.i);
        });
      }
    },
    enqueue(i) {
      return boss.send(QUEUE, { i }, sendOptions(key(i), DEDUP));
    },
    async settled() {
      const { rows } = await boss.getDb().executeSql(
        `SELECT count(*)::int AS n FROM ${SCHEMA}.job WHERE name = $1 AND state = 'completed'`,
        [QUEUE],
      );
      return rows[0].n >= params.runs;
    },
    async teardown() {
      await boss.stop({ graceful: false, wait: true, timeout: 5000 });
    },
  });
}

async function probe(variant) {
  let boss;
  const [dedup, policy] = variant.split('/');
  const archiveAfter = 1;
  await runProbe({
    name: 'pg-boss',
    version,
    variant,
    settings: { dedup, queue_policy: policy, work_loops: params.concurrency, batchSize: 1, pollingIntervalSeconds: POLL_S, archiveCompletedAfterSeconds: dedup === 'id' ? archiveAfter : 'default (43200)' },
    pollWaitMs: 1500,
    async setup() {
      await freshSchema();
      boss = newBoss(dedup === 'id' ? { archiveCompletedAfterSeconds: archiveAfter } : {});
      await boss.start();
      await boss.createQueue(QUEUE, { name: QUEUE, policy });
    },
    enqueue(k, data) {
      return boss.send(QUEUE, { k, ...data }, sendOptions(k, dedup));
    },
    summarize(v) {
      return v;
    },
    async startWorker(handler) {
      // CONCURRENCY loops, as in the bench, so a second job for a key could
      // start while the first is still running if the policy allows it.
      for (let w = 0; w < params.concurrency; w++) {
        await boss.work(QUEUE, { pollingIntervalSeconds: POLL_S, batchSize: 1 }, async ([job]) => {
          const { k, ...data } = job.data;
          await handler(k, data);
        });
      }
    },
    async idle(k) {
      const { rows } = await boss.getDb().executeSql(
        `SELECT count(*)::int AS n FROM ${SCHEMA}.job WHERE name = $1 AND data->>'k' = $2 AND state < 'completed'`,
        [QUEUE, k],
      );
      return rows[0].n === 0;
    },
    async extra({ call, seen, waitRuns }) {
      if (dedup !== 'id') return {};
      // (c) once the completed job has been moved to the archive table.
      await sleep(archiveAfter * 1000 + 500);
      await boss.archive();
      const A = 'order-a';
      const before = seen(A).length;
      const r = await call(A, { v: 4 });
      await waitRuns(A, before + 1, 3500);
      await waitFor(() => this.idle(A), 5000);
      return { after_archive: { fourth: r, runs_total: seen(A).length, data_run: seen(A) } };
    },
    async teardown() {
      await boss.stop({ graceful: false, wait: true, timeout: 5000 });
    },
  });
}

const cmd = process.argv[2] || 'bench';
if (cmd === 'bench') await bench();
else if (cmd === 'probe') {
  for (const v of ['singletonKey/short', 'singletonKey/stately', 'singletonKey/standard', 'id/standard']) await probe(v);
} else throw new Error(`unknown command ${cmd}`);
process.exit(0);
