-- PATCH with If-Match: each thread updates its own pool of records, one request per record at a
-- time, sending the version it got back last time (the first PATCH of a record has no If-Match).
-- Usage: wrk -t T -c C -d 10s -s patch.lua URL -- POOL_SIZE
local next_tid = 1
local threads = {}

function setup(thread)
  thread:set("tid", next_tid)
  next_tid = next_tid + 1
  table.insert(threads, thread)
end

function init(args)
  pool = tonumber(args[1]) or 100
  ready = {}
  for i = 1, pool do ready[#ready + 1] = i end
  versions = {}
  counter = 0
  ok = 0
  stale = 0
  other = 0
end

function request()
  local n = table.remove(ready, 1) or math.random(pool)
  counter = counter + 1
  local headers = { ["Content-Type"] = "application/json" }
  if versions[n] then headers["If-Match"] = '"' .. versions[n] .. '"' end
  return wrk.format("PATCH", string.format("/tables/items/s%d-%d", tid, n), headers,
    string.format('{"text":"patch %d","n":%d}', counter, counter))
end

function response(status, headers, body)
  if status == 200 then ok = ok + 1 elseif status == 412 then stale = stale + 1 else other = other + 1 end
  local n = tonumber(body:match('"id":"s%d+%-(%d+)"') or "")
  if n then
    versions[n] = body:match('"version":"([^"]+)"')
    table.insert(ready, n)
  end
end

function done(summary, latency, requests)
  local counts = { ok = 0, stale = 0, other = 0 }
  for _, thread in ipairs(threads) do
    for name, _ in pairs(counts) do counts[name] = counts[name] + thread:get(name) end
  end
  io.write(string.format("RESULT patch %.0f req/s, p50 %.2f ms, p99 %.2f ms; 200: %d, 412: %d, other: %d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    counts.ok, counts.stale, counts.other))
end
