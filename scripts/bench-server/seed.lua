-- Seeds the benchmark table: each wrk thread POSTs its share of records, ids s<thread>-<n>.
-- One connection per thread (-c equal to -t), so each request follows the previous answer and
-- n = answers so far + 1 numbers the records 1...N without gaps (wrk may call request() once
-- more to check the script; such a call must not use up a number).
-- Usage: wrk -t T -c T -d 600s -s seed.lua URL -- RECORDS_PER_THREAD
local next_tid = 1
local threads = {}

function setup(thread)
  thread:set("tid", next_tid)
  next_tid = next_tid + 1
  table.insert(threads, thread)
end

function init(args)
  per_thread = tonumber(args[1])
  answered = 0
  created = 0
end

function request()
  local n = answered + 1
  local body = string.format(
    '{"id":"s%d-%d","category":"c%d","n":%d,"price":%d.%02d,"text":"record %d of thread %d","done":%s}',
    tid, n, n % 20, n, n % 100, n % 97, n, tid, (n % 3 == 0) and "true" or "false")
  return wrk.format("POST", "/tables/items", { ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
  answered = answered + 1
  if status == 201 then created = created + 1 end
  if answered >= per_thread then wrk.thread:stop() end
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do total = total + thread:get("created") end
  io.write(string.format("seeded %d records in %.1f s\n", total, summary.duration / 1e6))
end
