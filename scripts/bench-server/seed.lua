-- Seeds the benchmark table: each wrk thread POSTs its share of records, ids s<thread>-<n>.
-- Usage: wrk -t T -c C -d 300s -s seed.lua URL -- RECORDS_PER_THREAD
local next_tid = 1
local threads = {}

function setup(thread)
  thread:set("tid", next_tid)
  next_tid = next_tid + 1
  table.insert(threads, thread)
end

function init(args)
  per_thread = tonumber(args[1])
  sent = 0
  answered = 0
  created = 0
end

function request()
  if sent >= per_thread then
    return wrk.format("GET", "/health")
  end
  sent = sent + 1
  local n = sent
  local body = string.format(
    '{"id":"s%d-%d","category":"c%d","n":%d,"price":%d.%02d,"text":"record %d of thread %d","done":%s}',
    tid, n, n % 20, n, n % 100, n % 97, n, tid, (n % 3 == 0) and "true" or "false")
  return wrk.format("POST", "/tables/items", { ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
  if status ~= 200 then
    answered = answered + 1
    if status == 201 then created = created + 1 end
  end
  if answered >= per_thread then wrk.thread:stop() end
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do total = total + thread:get("created") end
  io.write(string.format("seeded %d records in %.1f s\n", total, summary.duration / 1e6))
end
