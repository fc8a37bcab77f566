-- bench/settle.lua: what a settle window (settle_ns, doc/scale.md) moves and what
-- it saves. Each case is one launch, PE profiling off, run exact and then at each
-- of its windows in this process: virtual time (m:now(), the same on every
-- machine) and its drift from the exact run, the flow solver's settled instants
-- (m:flow_stats()), the launch's events and CPU seconds (setup apart). Cases: the
-- flat allgather of 1 MiB a PE x 48 blocks on Ascend910B at 64-512 PEs, the
-- server relay at 16 and 64 PEs, the data-mode flat allgather of 1024 int32 a PE
-- at 256 PEs x 16 blocks, and DeepEP main's dispatch (ops/deepep/dispatch_hccl.lua)
-- at EP16 on Ascend910_93. Run with `make chain` (it writes doc/scale.md's block);
-- `--max-pes N` stops earlier (default 512).
local runner = require("shmemlab.runner")
local lab = require("shmemlab")

local ALL = { 10, 50, 100, 1000 }
local AG = "count = 262144, block_dim = 48, timing_only = true"
local CASES = {
  { "allgather flat 1 MiB 64 PEs", "allgather", "pes = 64, algo = 'flat', " .. AG, ALL },
  { "allgather flat 1 MiB 128 PEs", "allgather", "pes = 128, algo = 'flat', " .. AG, ALL },
  { "allgather flat 1 MiB 256 PEs", "allgather", "pes = 256, algo = 'flat', " .. AG, ALL },
  { "allgather flat 1 MiB 512 PEs", "allgather", "pes = 512, algo = 'flat', " .. AG, { 100, 1000 } },
  { "allgather relay 1 MiB 16 PEs", "allgather", "pes = 16, algo = 'hier', " .. AG, { 100, 1000 } },
  { "allgather relay 1 MiB 64 PEs", "allgather", "pes = 64, algo = 'hier', " .. AG, { 100, 1000 } },
  { "allgather flat data 256 x 16", "allgather", "pes = 256, algo = 'flat', count = 1024", { 10, 100 } },
  { "deepep dispatch_hccl EP16 x 1024", "deepep/dispatch_hccl", "soc = 'Ascend910_93', pes = 16, "
    .. "timing_only = true, local_tokens = 1024, hidden = 7168, topk = 8, experts = 256",
    { 10, 100, 1000 } },
}

-- one launch of the case at window ns: its figures
local function run(opname, opts_text, window)
  local file = opname:find("/") and string.format("%s/%s.lua", runner.ops_dir(), opname) or opname
  local op = runner.load_op(file)
  local opts = assert(load("return {" .. opts_text .. "}"))()
  opts.warmup, opts.iters, opts.baseline, opts.settle_ns = 0, 1, "none", window
  local c = runner.config(op, opts)
  local m = lab.machine{ profile = c.profile, pes = c.pes, prof_pe = -1,
                         data = not c.timing_only, chain_flow = c.chain_flow }
  local s = op.setup(m, c)
  local e0, f0, c0 = m:events(), m:flow_stats(), os.clock()
  op.run(m, c, s)
  local r = { now = m:now(), events = m:events() - e0, cpu = os.clock() - c0,
              settles = m:flow_stats().settles - f0.settles }
  m:close()
  collectgarbage()
  return r
end

-- n with thousands separators
local function group(n)
  local s = string.format("%d", n)
  return (s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end

-- one line of the table: the case (on its exact line), the window, the figures
local function line(name, window, r, exact)
  local drift = exact and string.format("%+.4f%%", (r.now - exact.now) / exact.now * 100) or "-"
  print(string.format("%-34s %-8s %15.6f %10s %12s %10s %8.2f", name, window, r.now, drift,
                      group(r.events), group(r.settles), r.cpu))
end

local max_pes = 512
for i = 1, #arg - 1 do
  if arg[i] == "--max-pes" then max_pes = assert(tonumber(arg[i + 1]), "--max-pes N") end
end
print(string.format("%-34s %-8s %15s %10s %12s %10s %8s", "case", "window", "virtual us",
                    "drift", "events", "settles", "CPU s"))
for _, cs in ipairs(CASES) do
  local name, opname, opts, windows = cs[1], cs[2], cs[3], cs[4]
  if tonumber(opts:match("pes = (%d+)")) <= max_pes then
    local exact = run(opname, opts, 0)
    line(name, "exact", exact)
    for _, w in ipairs(windows) do line("", w .. " ns", run(opname, opts, w), exact) end
  end
end
print("(drift: the windowed run's virtual time against the exact run's; settles: the flow "
      .. "solver's settled instants; events and CPU: the launch's, setup apart)")
