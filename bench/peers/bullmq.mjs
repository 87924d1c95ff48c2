// BullMQ (Redis). Usage: node bullmq.mjs bench|probe
//
// Concurrency knob: the Worker's `concurrency` option, the number of jobs
// one Worker instance runs at once.
//
// Warning: every run starts with FLUSHDB on the database of REDIS_URL.
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { params, pkgVersion, key, runBench, runProbe } from './lib.mjs';

const REDIS_URL = process.env.REDIS_URL;
if (!REDIS_URL) throw new Error('REDIS_URL is required');
const QUEUE = 'bench';
const PREFIX = 'bench';
// The docs' "keep a handful of completed jobs, many more failed ones".
const KEEP_COMPLETED = Number(process.env.BULLMQ_KEEP_COMPLETED ?? 1000);
const KEEP_FAILED = 5000;
const version = pkgVersion('bullmq');

async function flush() {
  const r = new Redis(REDIS_URL);
  await r.flushdb();
  await r.quit();
}

// As the "going to production" guide advises: producers fail fast
// (no offline queue), workers retry forever (maxRetriesPerRequest: null).
function producerConnection() {
  return new Redis(REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
}
function workerConnection() {
  return new Redis(REDIS_URL, { maxRetriesPerRequest: null });
}

async function newQueue() {
  const q = new Queue(QUEUE, { connection: producerConnection(), prefix: PREFIX });
  q.on('error', (e) => process.stderr.write(`bullmq queue error: ${e.message}\n`));
  await q.waitUntilReady();
  return q;
}

function newWorker(processor, opts) {
  const w = new Worker(QUEUE, processor, { connection: workerConnection(), prefix: PREFIX, ...opts });
  w.on('error', (e) => process.stderr.write(`bullmq worker error: ${e.message}\n`));
  return w;
}

async function bench() {
  let queue, worker;
  await runBench({
    name: 'bullmq',
    version,
    settings: {
      dedup: 'add(..., {jobId: key})',
      concurrency: params.concurrency,
      removeOnComplete: { count: KEEP_COMPLETED },
      removeOnFail: { count: KEEP_FAILED },
      producer_connection: { enableOfflineQueue: false },
      worker_connection: { maxRetriesPerRequest: null },
      redis: 'maxmemory-policy noeviction, no persistence (--save "" --appendonly no)',
      other: 'Worker defaults (drainDelay 5 s, stalledInterval 30 s, lockDuration 30 s)',
    },
    async setup() {
      await flush();
      queue = await newQueue();
    },
    async startWorkers(handle) {
      worker = newWorker(async (job) => handle(job.data.i), {
        concurrency: params.concurrency,
        removeOnComplete: { count: KEEP_COMPLETED },
        removeOnFail: { count: KEEP_FAILED },
      });
      await worker.waitUntilReady();
    },
    async enqueue(i) {
      const job = await queue.add('run', { i }, { jobId: key(i) });
      return job?.id ?? null;
    },
    async settled() {
      const c = await queue.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'waiting-children');
      return Object.values(c).every((n) => n === 0);
    },
    async teardown() {
      await worker.close();
      await queue.close();
    },
  });
}

const VARIANTS = {
  // Job ids are kept in Redis while the job sits in the completed set.
  'jobId, completed jobs kept (default)': { worker: {}, add: (k) => ({ jobId: k }) },
  // Job removed on completion: its id is free again.
  'jobId, removeOnComplete {count: 0}': { worker: { removeOnComplete: { count: 0 } }, add: (k) => ({ jobId: k }) },
  // The separate deduplication option (simple mode: no ttl).
  'deduplication {id: key}, completed jobs kept': { worker: {}, add: (k) => ({ deduplication: { id: k } }) },
};

async function probe(variant) {
  const v = VARIANTS[variant];
  let queue, worker;
  await runProbe({
    name: 'bullmq',
    version,
    variant,
    settings: { concurrency: params.concurrency, worker: v.worker, add_options: v.add('KEY') },
    pollWaitMs: 500,
    async setup() {
      await flush();
      queue = await newQueue();
    },
    enqueue(k, data) {
      return queue.add('run', { k, ...data }, v.add(k));
    },
    async summarize(job) {
      if (!job) return job;
      // What the call returned, next to what Redis holds under that id.
      const stored = await queue.getJob(job.id);
      return {
        id: job.id,
        data: job.data,
        stored_data: stored ? stored.data : null,
        stored_state: await queue.getJobState(job.id),
      };
    },
    async startWorker(handler) {
      worker = newWorker(async (job) => {
        const { k, ...data } = job.data;
        await handler(k, data);
      }, { concurrency: params.concurrency, ...v.worker });
      await worker.waitUntilReady();
    },
    async idle() {
      const c = await queue.getJobCounts('wait', 'active', 'delayed', 'prioritized');
      return Object.values(c).every((n) => n === 0);
    },
    async teardown() {
      await worker.close();
      await queue.close();
    },
  });
}

const cmd = process.argv[2] || 'bench';
if (cmd === 'bench') await bench();
else if (cmd === 'probe') {
  for (const v of Object.keys(VARIANTS)) await probe(v);
} else throw new Error(`unknown command ${cmd}`);
process.exit(0);
