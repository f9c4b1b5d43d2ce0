-- hermes-admin fleet: one atomic update of one key's fleet state (a mark or a clear).
-- Ordering uses this server's clock (TIME), never a host's: a host passes its
-- observation time already converted to server time, and it is clamped to now.
--
-- KEYS: 1 benches zset (score = observed time, member = entry id)
--       2 entry details hash (id -> json)   3 summary hash   4 version counter
--       5 set of known fingerprints
-- ARGV: 1 op (mark|clear)  2 fp  3 host  4 observed (server epoch s, or "" = now)
--       5 until (server epoch s, or "")  6 until relative to now (s, or "")
--       7 status (exhausted|dead)  8 code  9 reason  10 message  11 channel  12 eps
--       13 the furthest an until may lie ahead of now (s)
--
-- What the keys hold is outside data too (anyone who reaches the server can write it):
-- a key of the wrong type is deleted and rebuilt (the fleet owns its namespace), a
-- version counter that is not a counter starts over (hosts then publish again), and a
-- bench entry that does not decode to finite times and a known status is dropped. So a
-- forged key costs at most the state it held, and the next good update lands.
--
-- Rules (a state-based CRDT, so the order in which hosts arrive does not matter):
--   state = {benches, cleared_at}; a clear at T drops every bench observed before T
--   and raises cleared_at to T; a mark observed before cleared_at is stale; the key
--   is benched until the latest `until` among the surviving benches (re-cooling
--   extends), dead (until = DEAD) beats any exhausted.
local DEAD = 1e18
if redis.replicate_commands then pcall(redis.replicate_commands) end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local zkey, dkey, skey, vkey, fkey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local op, fp, host = ARGV[1], ARGV[2], ARGV[3]
local ahead = tonumber(ARGV[13]) or (366 * 86400)

-- A finite number, or nil (tonumber accepts "nan" and "inf").
local function fin(x)
  x = tonumber(x)
  if x and x == x and x > -math.huge and x < math.huge then return x end
  return nil
end

for key, kind in pairs({[zkey] = 'zset', [dkey] = 'hash', [skey] = 'hash', [vkey] = 'string', [fkey] = 'set'}) do
  local got = redis.call('TYPE', key).ok
  if got ~= kind and got ~= 'none' then redis.call('DEL', key) end
end
local vraw = redis.call('GET', vkey)
-- At most 12 digits: the readers take a counter up to 1e12 (store/outside.py MAX_COUNT), so a
-- forged counter past it (which INCR would only carry further) starts over here, not wedges them.
if vraw and not (string.match(vraw, '^%d+$') and #vraw <= 12) then redis.call('DEL', vkey) end

-- A bench entry, decoded and checked; nil for anything else.
local function entry(raw)
  if not raw then return nil end
  local ok, d = pcall(cjson.decode, raw)
  if not ok or type(d) ~= 'table' then return nil end
  d.u, d.o = fin(d.u), fin(d.o)
  if not d.u or not d.o or d.o > now + 1 then return nil end
  if d.s == 'dead' then d.u = DEAD
  elseif d.s ~= 'exhausted' or d.u > now + ahead then return nil end
  for _, f in ipairs({'h', 'c', 'r', 'm'}) do
    if type(d[f]) ~= 'string' then d[f] = '' end
  end
  return d
end

local obs = fin(ARGV[4])
if (not obs) or obs > now then obs = now end
local eps = fin(ARGV[12]) or 0.25
local cleared = fin(redis.call('HGET', skey, 'cleared_at'))
if (not cleared) or cleared > now + 1 then cleared = -1 end
local result = 'applied'

if op == 'mark' then
  local status = ARGV[7]
  local untilv
  if status == 'dead' then untilv = DEAD
  else
    status = 'exhausted'
    untilv = fin(ARGV[5])
    local rel = fin(ARGV[6])
    if rel then untilv = now + rel end
  end
  if obs < cleared then
    result = 'stale'
  elseif status ~= 'dead' and untilv and untilv > now + ahead then
    result = 'invalid'
  elseif (not untilv) or (untilv <= now) then
    result = 'expired'
  else
    local near = redis.call('ZRANGEBYSCORE', zkey, obs - eps, obs + eps)
    for _, id in ipairs(near) do
      local d = entry(redis.call('HGET', dkey, id))
      if d and d.s == status and math.abs(d.u - untilv) <= eps then result = 'duplicate' end
    end
    if result ~= 'duplicate' then
      local id = host .. '@' .. string.format('%.3f', obs) .. '/' .. string.format('%.3f', untilv)
      redis.call('ZADD', zkey, obs, id)
      -- Times as strings: cjson would round numbers to 14 significant digits.
      redis.call('HSET', dkey, id, cjson.encode({u = string.format('%.6f', untilv), s = status, h = host,
        o = string.format('%.6f', obs),
        c = ARGV[8], r = ARGV[9], m = ARGV[10]}))
    end
  end
elseif op == 'clear' then
  if obs > cleared then
    redis.call('HSET', skey, 'cleared_at', string.format('%.6f', obs), 'cleared_by', host)
    local gone = redis.call('ZRANGEBYSCORE', zkey, '-inf', '(' .. string.format('%.6f', obs))
    for _, id in ipairs(gone) do
      redis.call('ZREM', zkey, id)
      redis.call('HDEL', dkey, id)
    end
  else
    result = 'duplicate'
  end
else
  return redis.error_reply('unknown op ' .. tostring(op))
end

-- Keep only the benches that can still matter: not expired, and not dominated by a
-- bench observed later that lasts at least as long (any clear that drops the later
-- one drops the earlier one too).
local best = nil
local runmax = -1
local ids = redis.call('ZREVRANGE', zkey, 0, -1)
for _, id in ipairs(ids) do
  local d = entry(redis.call('HGET', dkey, id))
  if (not d) or (d.u <= now) or (d.u <= runmax) then
    redis.call('ZREM', zkey, id)
    redis.call('HDEL', dkey, id)
  else
    runmax = d.u
    best = d
  end
end

local new = {}
if best then
  new.status = (best.s == 'dead') and 'dead' or 'exhausted'
  new['until'] = (new.status == 'dead') and '' or string.format('%.6f', best.u)
  new.since = string.format('%.6f', math.min(best.o, now))
  new.host = best.h
  new.code = best.c
  new.reason = best.r
  new.message = best.m
else
  new.status = 'ok'
  new['until'] = ''
  new.since = ''
  new.host = ''
  new.code = ''
  new.reason = ''
  new.message = ''
end
local changed = 0
for k, v in pairs(new) do
  if (redis.call('HGET', skey, k) or '') ~= v then changed = 1 end
end
if result == 'applied' and op == 'clear' then changed = 1 end
local version = fin(redis.call('HGET', skey, 'version')) or 0
if changed == 1 then
  version = redis.call('INCR', vkey)
  redis.call('HSET', skey, 'status', new.status, 'until', new['until'], 'since', new.since,
    'host', new.host, 'code', new.code, 'reason', new.reason, 'message', new.message,
    'version', version, 'updated_at', string.format('%.6f', now))
  redis.call('SADD', fkey, fp)
  local state = redis.call('HGETALL', skey)
  local msg = {fp = fp}
  for i = 1, #state, 2 do msg[state[i]] = state[i + 1] end
  redis.call('PUBLISH', ARGV[11], cjson.encode(msg))
end
return {result, changed, version, string.format('%.6f', now)}
