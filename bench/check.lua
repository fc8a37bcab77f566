-- bench/check.lua: the wall-clock cost of each check mode against an unchecked
-- run of the same operator (one process, best of 3 each). Run with `make bench`.
local runner = require("shmemlab.runner")

local cases = {
  { op = "allgather", opts = { pes = 8, count = 64 * 1024 } },
  { op = "allreduce", opts = { pes = 8, count = 64 * 1024 } },
  { op = "alltoall", opts = { pes = 8, count = 16 * 1024 } },
}
local modes = { "none", "memcheck", "synccheck", "initcheck", "racecheck", "all" }

-- best wall time of n measured runs of op with the check mode
local function time_of(op, opts, mode)
  local best = math.huge
  for _ = 1, 3 do
    local o = { warmup = 1, iters = 10, baseline = "none", check = mode }
    for k, v in pairs(opts) do o[k] = v end
    local t0 = os.clock()
    local r = runner.run(op, o)
    local dt = os.clock() - t0
    assert(r.shmem.check.wrong == 0, op .. " wrong under " .. mode)
    if dt < best then best = dt end
  end
  return best
end

print("check-mode slowdown (wall clock of warm-up 1 + 10 measured launches, best of 3)")
print(string.format("%-10s %-22s %10s %9s", "op", "mode", "seconds", "slowdown"))
for _, c in ipairs(cases) do
  local base
  for _, mode in ipairs(modes) do
    local t = time_of(c.op, c.opts, mode)
    base = base or t
    print(string.format("%-10s %-22s %10.3f %8.2fx", c.op, mode, t, t / base))
  end
end
