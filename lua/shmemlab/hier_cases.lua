-- shmemlab.hier_cases: the cases of doc/hier.md's efficiency table ("Where each op
-- stands at 16 MiB a PE"), each computed here for bench/hier_table.lua (`make
-- hier-table`, which writes the table into the doc) and spec/hier_table_spec.lua
-- (which recomputes the cheap cells and fails when the doc's row is not the one
-- this module formats). A cell is one timing-only run of an op on a SoC and a PE
-- count, 16 MiB a PE (count 4194304 int32), one launch, no warm-up, PE profiling
-- off, no baseline: `lua run_op.lua OP --soc SOC --pes N --count 4194304
-- --timing-only -w 0 -n 1 --prof-pe -1 --baseline none`. Virtual time: the same
-- figures on any machine.
local runner = require("shmemlab.runner")
local T = require("shmemlab.doc_table")

local M = {}

M.COUNT = 4194304
M.PES = { 16, 32, 64, 128 }
-- the table's rows in order: op, SoC, and the design the op runs beyond one server
-- or card (text of the doc, kept with its case)
M.ROWS = {
  { "allgather", "Ascend910B", "server relay" },
  { "reduce_scatter", "Ascend910B", "server relay (pushed from 32 PEs)" },
  { "allreduce", "Ascend910B", "server relays, two launches" },
  { "broadcast", "Ascend910B", "server relay (scatter, then allgather)" },
  { "alltoall", "Ascend910B", "one step" },
  { "allgather", "Ascend910_93", "card relay; card ring from 64 dies" },
  { "reduce_scatter", "Ascend910_93", "card relay; card ring at 128 dies" },
  { "allreduce", "Ascend910_93", "card relays, two launches (by owner from 32 dies)" },
  { "broadcast", "Ascend910_93", "card relay (below)" },
  { "alltoall", "Ascend910_93", "one step; 16 MiB a pair (below)" },
}

-- the table in the doc (shmemlab.doc_table): its name, target and header
M.TABLE = T.new("hier-table", "hier-table",
                "| op | SoC | 16 | 32 | 64 | 128 | design beyond one server or card |\n"
                  .. "| --- | --- | --- | --- | --- | --- | --- |")

-- the table of the same cases' HCCL baselines (ops/hccl/), in the doc below the first
M.BASE_TABLE = T.new("hier-baselines", "hier-table",
                     "| op | SoC | 16 | 32 | 64 | 128 |\n| --- | --- | --- | --- | --- | --- |")

-- the options of one cell's run (the header's command line)
local function opts(soc, pes)
  return { soc = soc, pes = pes, count = M.COUNT, timing_only = true, warmup = 0, iters = 1,
           prof_pe = -1, baseline = "none" }
end

-- one cell's run: {bound, kernel} in us (the kernel time is the max over PEs)
function M.run(op, soc, pes)
  local s = runner.run(op, opts(soc, pes), true).metrics.summary
  return { bound = s.bound_us, kernel = s.latency_us }
end

-- the kernel time (us) of op's HCCL baseline in one cell: the operator the op's own
-- runs measure beside it (`--baseline hccl`), run alone
function M.run_baseline(op, soc, pes)
  local path = runner.baseline_path(runner.load_op(op), "hccl")
  return runner.run(path, opts(soc, pes), true).metrics.summary.latency_us
end

-- a baseline cell's text: its kernel time in us, as the efficiency cells print theirs
function M.base_cell(kernel) return string.format("%.3f", kernel) end

-- nil when a baseline cell's text is a kernel time in us, else why not
function M.base_cell_error(text)
  if text:match("^%d+%.%d%d%d$") then return nil end
  return "not a time in us: " .. text
end

-- a cell's text from its bound and kernel time: "86.9 (10068.330 / 11581.285)", the
-- efficiency in per cent computed from the two figures as printed, so a reader (and
-- the spec) recomputes it from the cell
function M.cell(bound, kernel)
  local b, k = string.format("%.3f", bound), string.format("%.3f", kernel)
  return string.format("%.1f (%s / %s)", tonumber(b) / tonumber(k) * 100, b, k)
end

-- nil when a cell's text is well formed and its per cent recomputes from its
-- figures, else why not
function M.cell_error(text)
  local pct, b, k = text:match("^(%d+%.%d) %((%d+%.%d%d%d) / (%d+%.%d%d%d)%)$")
  if not pct then return "not of the form 'P.P (BOUND / KERNEL)': " .. text end
  local want = M.cell(tonumber(b), tonumber(k))
  if want ~= text then return "its per cent does not recompute: " .. text .. ", want " .. want end
  return nil
end

-- a row's text from its case (M.ROWS[i]) and its cells' texts (one a PE count);
-- base: a row of the baselines' table (no design column)
function M.row(case, cells, base)
  local row = string.format("| %s | %s | %s |", case[1], case[2], table.concat(cells, " | "))
  return base and row or string.format("%s %s |", row, case[3])
end

-- the cells of a row's text: op, SoC, the cells (one a PE count) and the design
function M.split(line)
  local parts = {}
  for p in line:gsub("^|%s*", ""):gsub("%s*|%s*$", ""):gmatch("[^|]+") do
    parts[#parts + 1] = p:match("^%s*(.-)%s*$")
  end
  local cells = table.move(parts, 3, 2 + #M.PES, 1, {})
  return parts[1], parts[2], cells, parts[3 + #M.PES]
end


return M
