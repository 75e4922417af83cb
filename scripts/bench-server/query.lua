-- GET of one filtered page; reports throughput, p50/p99 and any answer that is not 200.
-- Usage: wrk -t T -c C -d 10s -s query.lua "URL?$filter=..." -- NAME
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  name = args[1] or "query"
  bad = 0
  full = 0
end

function response(status, headers, body)
  if status ~= 200 then bad = bad + 1 end
  if headers["Link"] then full = full + 1 end
end

function done(summary, latency, requests)
  local bad_total, full_total = 0, 0
  for _, thread in ipairs(threads) do
    bad_total = bad_total + thread:get("bad")
    full_total = full_total + thread:get("full")
  end
  io.write(string.format("RESULT %s %.0f req/s, p50 %.2f ms, p99 %.2f ms; not 200: %d, full pages (Link): %d\n",
    threads[1]:get("name"), summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, bad_total, full_total))
end
