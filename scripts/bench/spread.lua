-- wrk script for scripts/bench-backends.sh: spreads wrk's threads over several `tsync serve`
-- instances (round robin, as a load balancer would), and either inserts new records or repeats
-- one GET.
--   BENCH_PORTS  loopback ports of the instances, e.g. "8081 8082"
--   BENCH_MODE   "insert" (POST BENCH_PATH with a unique id each time) or "get" (GET BENCH_PATH)
--   BENCH_PATH   e.g. /tables/bench
local ports = {}
for port in string.gmatch(os.getenv("BENCH_PORTS") or "", "%d+") do table.insert(ports, port) end
local addresses = {}
local threads = 0

function setup(thread)
  if #addresses == 0 then
    for _, port in ipairs(ports) do table.insert(addresses, wrk.lookup("127.0.0.1", port)[1]) end
  end
  thread.addr = addresses[(threads % #addresses) + 1]
  thread:set("thread_number", threads)
  threads = threads + 1
end

local mode = os.getenv("BENCH_MODE") or "get"
local path = os.getenv("BENCH_PATH") or "/"
local run = os.getenv("BENCH_RUN") or "r"
local counter = 0
local json = { ["Content-Type"] = "application/json" }

function request()
  if mode == "insert" then
    counter = counter + 1
    local body = string.format('{"id":"%s-%d-%d","n":%d,"text":"bench item %d","done":false}',
      run, thread_number, counter, counter, counter)
    return wrk.format("POST", path, json, body)
  end
  return wrk.format("GET", path)
end
