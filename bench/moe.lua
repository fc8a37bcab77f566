-- bench/moe.lua: what DeepEP's normal-mode dispatch costs to emulate, and why
-- (doc/moe.md). "port" is sgl-kernel-npu main's dispatch
-- (ops/deepep/dispatch_hccl.lua), "hybrid" its notify with the SHMEM data kernel
-- (ops/deepep/dispatch_hybrid.lua). Each row is one run of the op, timing-only,
-- Ascend910_93, hidden 7168, top-8, 256 experts, uniform routing, exact
-- (settle_ns 0) and at a 1000 ns window: the notify's and the data launch's
-- virtual spans (each launch's e2e_us), the CPU seconds and events of both
-- launches (setup apart), the process's peak RSS, and the flow solver's counts
-- (m:flow_stats(): transfers started, the share that went on in their pipe's last
-- flow, settled instants, flows re-rated and filled per settle). Run with
-- `make scale` (it writes doc/moe.md's block; the goal's EP128 x 4096 run is in
-- doc/performance.md's); `--tokens N` sets the tokens per rank (default 1024).
local runner = require("shmemlab.runner")

local OPS = { port = "deepep/dispatch_hccl", hybrid = "deepep/dispatch_hybrid" }
local CASES = { { "port", 16 }, { "hybrid", 16 }, { "port", 32 }, { "hybrid", 32 }, { "port", 64 },
                { "port", 128 } }

-- peak resident bytes of this process (VmHWM), or 0
local function peak_rss()
  local f = io.open("/proc/self/status")
  if f == nil then return 0 end
  local kb = f:read("a"):match("VmHWM:%s*(%d+)")
  f:close()
  return kb and tonumber(kb) * 1024 or 0
end

-- one run of the op in a fresh process (its peak RSS its own): its line of figures
local function child(name, pes, tokens, window)
  local op, c, m = runner.one_launch(OPS[name], { soc = "Ascend910_93", pes = pes, timing_only = true,
                                                 local_tokens = tokens, hidden = 7168, topk = 8,
                                                 experts = 256, settle_ns = window })
  local s = op.setup(m, c)
  local e0, f0, c0 = m:events(), m:flow_stats(), os.clock()
  local r = op.run(m, c, s)
  local cpu, f1 = os.clock() - c0, m:flow_stats()
  local n = math.max(f1.settles - f0.settles, 1)
  print(string.format("%-7s %4d %6d %9.3f %10.3f %8.2f %11d %8.0f %9d %6.1f %9d %8.1f %7.1f",
                      name, pes, window, r[1].e2e_us, r[2].e2e_us, cpu, m:events() - e0,
                      peak_rss() / 2 ^ 20, f1.starts - f0.starts,
                      100 * (f1.continued - f0.continued) / math.max(f1.starts - f0.starts, 1),
                      f1.settles - f0.settles, (f1.rerated - f0.rerated) / n,
                      (f1.filled - f0.filled) / math.max(f1.rerated - f0.rerated, 1)))
end

if arg[1] == "--child" then
  child(arg[2], tonumber(arg[3]), tonumber(arg[4]), tonumber(arg[5]))
  return
end
local tokens = 1024
for i = 1, #arg - 1 do
  if arg[i] == "--tokens" then tokens = assert(math.tointeger(tonumber(arg[i + 1])), "--tokens N") end
end
print(string.format("%d tokens a rank (%d rows a rank)", tokens, tokens * 8))
print(string.format("%-7s %4s %6s %9s %10s %8s %11s %8s %9s %6s %9s %8s %7s", "op", "EP",
                    "window", "notify us", "data us", "CPU s", "events", "RSS MiB", "starts",
                    "cont%", "settles", "rerated", "filled"))
io.stdout:flush()
for _, cs in ipairs(CASES) do
  for _, window in ipairs({ 0, 1000 }) do
    local cmd = string.format("%s %q --child %s %d %d %d", arg[-1] or "lua5.4", arg[0], cs[1],
                              cs[2], tokens, window)
    assert(os.execute(cmd), "bench/moe.lua: " .. cmd .. " failed")
    io.stdout:flush()
  end
end
print("(notify us, data us: each launch's e2e_us; CPU s and events: both launches, setup "
      .. "apart; cont%: the starts that went on in their pipe's last flow; rerated: flows "
      .. "re-rated per settle; filled: flows filled per flow re-rated)")
