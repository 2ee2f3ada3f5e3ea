-- tests/bench/paths.lua - wrk script: GETs the request's URL path with a
-- query string read at random from the file named by QUERIES (one per
-- line), with keep-alive. Formatted once, in init.
local requests = {}
function init(args)
  for line in io.lines(os.getenv("QUERIES")) do
    requests[#requests + 1] = wrk.format("GET", wrk.path .. "?" .. line)
  end
end
function request()
  return requests[math.random(#requests)]
end
