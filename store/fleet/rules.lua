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
local obs = tonumber(ARGV[4])
if (not obs) or obs > now then obs = now end
local eps = tonumber(ARGV[12]) or 0.25
local cleared = tonumber(redis.call('HGET', skey, 'cleared_at') or '') or -1
local result = 'applied'

if op == 'mark' then
  local status = ARGV[7]
  local untilv
  if status == 'dead' then untilv = DEAD
  else
    untilv = tonumber(ARGV[5])
    local rel = tonumber(ARGV[6])
    if rel then untilv = now + rel end
  end
  if obs < cleared then
    result = 'stale'
  elseif (not untilv) or (untilv <= now) then
    result = 'expired'
  else
    local near = redis.call('ZRANGEBYSCORE', zkey, obs - eps, obs + eps)
    for _, id in ipairs(near) do
      local raw = redis.call('HGET', dkey, id)
      if raw then
        local d = cjson.decode(raw)
        d.u = tonumber(d.u)
        if d.s == status and math.abs(d.u - untilv) <= eps then result = 'duplicate' end
      end
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
  local raw = redis.call('HGET', dkey, id)
  local d = raw and cjson.decode(raw)
  if d then d.u = tonumber(d.u); d.o = tonumber(d.o) end
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
  new.status = (best.s == 'dead' or best.u >= DEAD) and 'dead' or 'exhausted'
  new['until'] = (new.status == 'dead') and '' or string.format('%.6f', best.u)
  new.since = string.format('%.6f', best.o)
  new.host = best.h
  new.code = best.c or ''
  new.reason = best.r or ''
  new.message = best.m or ''
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
local version = tonumber(redis.call('HGET', skey, 'version') or '0') or 0
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
