#!/usr/bin/env bash
# Side-by-side throughput of job queues doing keyed one-off runs:
# pg-boss and Graphile Worker on PostgreSQL, BullMQ on Redis, and cronslot
# on both (tests/benches/keyed_run_throughput.rs, built by cargo bench).
#
# JSON lines (one per peer and workload, then one per guarantees probe) go to
# stdout; readable tables go to stderr.
#
# Environment:
#   RUNS         keyed jobs per run (default 10000)
#   CONCURRENCY  worker concurrency (default 8)
#   WORKLOADS    comma list of noop,sleep10 (default noop,sleep10)
#   PEERS        comma list of pgboss,graphile,bullmq,cronslot (default all
#                four; cronslot runs on PostgreSQL and on Redis)
#   WORKERS      cronslot's claim loops, worker threads (default CONCURRENCY)
#   ENQUEUERS    concurrent enqueue loops (default 8)
#   MODE         concurrent (default: workers run while jobs are enqueued)
#                or prefill (enqueue everything, then start the workers)
#   PROBE        1 (default) to run the guarantees probes, 0 to skip
#   TIMEOUT_S    per (peer, workload) limit in seconds (default 240)
#   PG_URL       use this PostgreSQL instead of a private one (schemas
#                bench_pgboss and bench_graphile in it are dropped and recreated)
#   REDIS_URL    use this Redis instead of a private one (its db is FLUSHED)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODE="${NODE:-/usr/bin/node}"
NPM="${NPM:-/usr/bin/npm}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

export RUNS="${RUNS:-10000}"
export CONCURRENCY="${CONCURRENCY:-8}"
export ENQUEUERS="${ENQUEUERS:-8}"
export MODE="${MODE:-concurrent}"
WORKLOADS="${WORKLOADS:-noop,sleep10}"
PEERS="${PEERS:-pgboss,graphile,bullmq,cronslot}"
PROBE="${PROBE:-1}"

log() { echo "[peers] $*" >&2; }

free_port() {
  "$NODE" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

WORK="$(mktemp -d /tmp/cronslot-peers.XXXXXX)"
PG_STARTED=""
REDIS_PORT=""
cleanup() {
  set +e
  if [ -n "$PG_STARTED" ]; then
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/pg/data" -m fast -w stop >/dev/null 2>&1
  fi
  if [ -n "$REDIS_PORT" ]; then
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# --- servers ---------------------------------------------------------------
need_pg=0; need_redis=0
case ",$PEERS," in *,pgboss,*|*,graphile,*|*,cronslot,*) need_pg=1 ;; esac
case ",$PEERS," in *,bullmq,*|*,cronslot,*) need_redis=1 ;; esac

if [ "$need_pg" = 1 ] && [ -z "${PG_URL:-}" ]; then
  if [ ! -x "$PGBIN/initdb" ]; then
    log "PostgreSQL not found at $PGBIN: apt-get install -y postgresql"
    exit 1
  fi
  PG_PORT="$(free_port)"
  mkdir -p "$WORK/pg"
  chown postgres:postgres "$WORK" "$WORK/pg"
  runuser -u postgres -- "$PGBIN/initdb" -D "$WORK/pg/data" -A trust -U postgres >"$WORK/pg/initdb.log" 2>&1
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/log" -w \
    -o "-p $PG_PORT -k $WORK/pg -c listen_addresses=127.0.0.1" start >/dev/null
  PG_STARTED=1
  "$PGBIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres bench
  export PG_URL="postgres://postgres@127.0.0.1:$PG_PORT/bench"
  log "private PostgreSQL 15 on 127.0.0.1:$PG_PORT (default settings)"
fi

if [ "$need_redis" = 1 ] && [ -z "${REDIS_URL:-}" ]; then
  if ! command -v redis-server >/dev/null; then
    log "redis-server not found: apt-get install -y redis-server"
    exit 1
  fi
  REDIS_PORT="$(free_port)"
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --maxmemory-policy noeviction --daemonize yes \
    --pidfile "$WORK/redis.pid" --logfile "$WORK/redis.log" --dir "$WORK"
  for _ in $(seq 50); do
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  export REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
  log "private Redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$REDIS_PORT (no persistence, noeviction)"
fi

# --- node modules and cronslot's bench --------------------------------------
case ",$PEERS," in
  *,cronslot,*)
    log "building cronslot's bench (cargo bench --no-run)"
    (cd "$HERE/../.." && cargo bench -q -p cronslot-tests --bench keyed_run_throughput --no-run >&2)
    ;;
esac
if [ ! -d "$HERE/node_modules" ]; then
  log "installing node_modules (npm ci)"
  (cd "$HERE" && "$NPM" ci --no-audit --no-fund >&2)
fi

# --- runs ------------------------------------------------------------------
OUT="$WORK/results.jsonl"
: >"$OUT"
IFS=',' read -r -a peer_list <<<"$PEERS"
IFS=',' read -r -a workload_list <<<"$WORKLOADS"
for peer in "${peer_list[@]}"; do
  if [ "$peer" = cronslot ]; then
    # Both stores, both workloads, the same knobs (CONCURRENCY is its
    # Runner::max_running); its own schema and key prefix per run.
    log "cronslot $WORKLOADS on postgres and redis: RUNS=$RUNS CONCURRENCY=$CONCURRENCY WORKERS=${WORKERS:-$CONCURRENCY}"
    (cd "$HERE/../.." && STORES=postgres,redis WORKLOADS="$WORKLOADS" \
      cargo bench -q -p cronslot-tests --bench keyed_run_throughput) | tee -a "$OUT"
    continue
  fi
  for wl in "${workload_list[@]}"; do
    log "$peer $wl: RUNS=$RUNS CONCURRENCY=$CONCURRENCY MODE=$MODE"
    WORKLOAD="$wl" "$NODE" "$HERE/$peer.mjs" bench | tee -a "$OUT"
  done
done
if [ "$PROBE" = 1 ]; then
  for peer in "${peer_list[@]}"; do
    # cronslot's guarantees are its tests (conformance, simulation).
    [ "$peer" = cronslot ] && continue
    log "$peer guarantees probe"
    "$NODE" "$HERE/$peer.mjs" probe | tee -a "$OUT"
  done
fi

"$NODE" "$HERE/report.mjs" <"$OUT" >&2
