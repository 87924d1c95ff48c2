//! The Lua scripts: each conditional write (a record, a ledger entry),
//! the tick's start and end, and the layout check, one atomic script
//! each. Apart so that all the Lua the store runs reads in one place;
//! the records, the ledger and the tick index pass their keys and
//! arguments.

use super::*;

/// The conditional write of a record: checks the stored version and
/// writes the record, its version and its entry in the wake index, or
/// answers the record that is there.
///
/// KEYS: the record, the wake index, the name index. ARGV: job, expected
/// version (`''`: none may exist), new version, record text, wake
/// (microseconds, `''`: none), the wake channel. Every write, not only the
/// first, puts the name in the name index (a no-op when it is there), so a
/// record first written by a cronslot of layout 1 joins it at its next
/// write too. A write whose wake is at or before the server's `TIME` (a
/// record due now: an enqueued run, a trigger, a redrive; not a claim,
/// whose wake is its lease's expiry) publishes on the wake channel, so
/// that runners subscribed to it tick at once.
const PUT: &str = r"
local cur = redis.call('HMGET', KEYS[1], 'v', 's')
local v = cur[1]
if ARGV[2] == '' then
  if v then return {'conflict', v, cur[2] or ''} end
elseif v ~= ARGV[2] then
  if v then return {'conflict', v, cur[2] or ''} end
  return {'conflict'}
end
redis.call('HSET', KEYS[1], 'v', ARGV[3], 's', ARGV[4])
if ARGV[5] == '' then
  redis.call('ZADD', KEYS[2], '+inf', ARGV[1])
else
  redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
end
redis.call('ZADD', KEYS[3], 0, ARGV[1])
if ARGV[5] ~= '' then
  local t = redis.call('TIME')
  if tonumber(ARGV[5]) <= tonumber(t[1]) * 1000000 + tonumber(t[2]) then
    redis.call('PUBLISH', ARGV[6], '')
  end
end
return {'written', ARGV[3]}
";

/// The delete of a record at the version read, with its entries in the
/// wake and name indexes.
///
/// KEYS: the record, the wake index, the name index. ARGV: job, expected
/// version. Answers 1 when it deleted, 0 when the record is at another
/// version (or gone).
const DELETE: &str = r"
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
";

/// A page of the name index and each record on it, read at one instant:
/// the names from a start to an end of a prefix's range (`ZRANGEBYLEX` forms:
/// `[NAME` inclusive, `(NAME` exclusive, `+` the last), at most a limit,
/// and for each its version and text.
///
/// KEYS: the name index. ARGV: the store's prefix (a record's key is
/// `{PREFIX:NAME}:state`), the start, the end, the limit. Answers the
/// names, versions and texts in turn (`''` for a record that is gone).
const PAGE: &str = r"
local names = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[2], ARGV[3], 'LIMIT', 0, ARGV[4])
local out = {}
for _, name in ipairs(names) do
  local r = redis.call('HMGET', '{' .. ARGV[1] .. ':' .. name .. '}:state', 'v', 's')
  out[#out + 1] = name
  out[#out + 1] = r[1] or ''
  out[#out + 1] = r[2] or ''
end
return out
";

/// The conditional write of a ledger entry: writes it and its expiry if
/// the entry is still at the expected revision.
///
/// KEYS: the entry. ARGV: expected revision (`''`: none may exist), new
/// revision, entry text, expiry in milliseconds.
const EFFECT_PUT: &str = r"
local rev = redis.call('HGET', KEYS[1], 'rev')
if ARGV[1] == '' then
  if rev then return 0 end
elseif rev ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'rev', ARGV[2], 'r', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
";

/// The start of a tick: the instant it plans up to (the caller's, or the
/// server's `TIME` when `''`), the mark, the woken jobs, earliest wake
/// first, and the earliest wake after the instant (`''`: none; a record
/// without a wake sits in the index at `inf`).
///
/// KEYS: the tick mark, the wake index. ARGV: the caller's instant
/// (microseconds) or `''`, the limit.
const TICK_START: &str = r"
local now = ARGV[1]
if now == '' then
  local t = redis.call('TIME')
  now = t[1] .. string.format('%06d', tonumber(t[2]))
end
local mark = redis.call('GET', KEYS[1]) or ''
local woken = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, ARGV[2])
local after = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local next = after[2] or ''
if next == 'inf' then next = '' end
return {now, mark, woken, next}
";

/// Moves the tick mark forward, never back.
///
/// KEYS: the tick mark. ARGV: the new mark (microseconds).
const TICK_END: &str = r"
local m = redis.call('GET', KEYS[1])
if (not m) or tonumber(m) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
return 0
";

/// The layout version, written first when absent and creation is asked,
/// and the one migration: a store of layout 1 gets its name index, filled
/// from the wake index (which holds every record), and becomes layout 2,
/// in one script so no write falls between. Answers the version (`''`:
/// none) and whether it was written now.
///
/// KEYS: the layout key, the wake index, the name index. ARGV: this
/// layout, whether to create (`1`/`0`).
const LAYOUT: &str = r"
local v = redis.call('GET', KEYS[1])
if v == '1' and ARGV[1] == '2' then
  local all = redis.call('ZRANGE', KEYS[2], 0, -1)
  for i = 1, #all, 1000 do
    local args = {}
    for j = i, math.min(i + 999, #all) do
      args[#args + 1] = 0
      args[#args + 1] = all[j]
    end
    redis.call('ZADD', KEYS[3], unpack(args))
  end
  redis.call('SET', KEYS[1], ARGV[1])
  return {ARGV[1], '0'}
end
if v then return {v, '0'} end
if ARGV[2] == '1' then
  redis.call('SET', KEYS[1], ARGV[1])
  return {ARGV[1], '1'}
end
return {'', '0'}
";

pub(super) struct Scripts {
    pub(super) put: Script,
    pub(super) delete: Script,
    pub(super) effect_put: Script,
    pub(super) tick_start: Script,
    pub(super) tick_end: Script,
    pub(super) layout: Script,
    pub(super) page: Script,
}

impl Scripts {
    pub(super) fn new() -> Scripts {
        Scripts {
            put: Script::new(PUT),
            delete: Script::new(DELETE),
            effect_put: Script::new(EFFECT_PUT),
            tick_start: Script::new(TICK_START),
            tick_end: Script::new(TICK_END),
            layout: Script::new(LAYOUT),
            page: Script::new(PAGE),
        }
    }
}
