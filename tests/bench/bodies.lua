-- tests/bench/bodies.lua - wrk script: POSTs JSON bodies read from the file
-- named by the BODIES environment variable (one per line), each request a
-- random one of them, with keep-alive. The requests are formatted once, in
-- init, so the load generator spends its time sending, not building.
local requests = {}
function init(args)
  for line in io.lines(os.getenv("BODIES")) do
    requests[#requests + 1] = wrk.format("POST", nil, { ["Content-Type"] = "application/json" }, line)
  end
end
function request()
  return requests[math.random(#requests)]
end
