-- tests/bench/mixed.lua - wrk script for the soak test: a mix of the
-- service's calls, each request drawn at random from lines of the file
-- named by MIXED: "METHOD PATH [BODY]" (the body is JSON, may be absent).
-- Formatted once, in init.
local requests = {}
function init(args)
  for line in io.lines(os.getenv("MIXED")) do
    local method, path, body = line:match("^(%S+) (%S+) ?(.*)$")
    if body == "" then body = nil end
    local headers = {}
    if body then headers["Content-Type"] = "application/json" end
    requests[#requests + 1] = wrk.format(method, path, headers, body)
  end
end
function request()
  return requests[math.random(#requests)]
end
