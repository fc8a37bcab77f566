-- shmemlab.hccl_cases: the cases of doc/hccl.md's two tables, each computed once
-- here for bench/hccl_tables.lua (`make hccl-tables`, which writes them into the
-- doc) and spec/hccl_plan_spec.lua (which pins each case and fails when the doc's
-- row is not the one this module formats): the gap inside one server (the AIV
-- kernels against the task plan) and every task plan against cann-hccl's
-- alpha-beta formula. Virtual time, timing-only: the same figures on any machine.
local lab = require("shmemlab")
local runner = require("shmemlab.runner")
local A = require("shmemlab.hccl_algo")
local op_mod = require("shmemlab.op")
local T = require("shmemlab.doc_table")

local M = {}

M.OPS = { "allgather", "reduce_scatter", "allreduce", "alltoall", "broadcast" }
M.SIZES = { 64 * 1024, 1024 * 1024, 16 * 1024 * 1024 }
M.SOCS = { "Ascend910B", "Ascend910_93" }
M.PES = { Ascend910B = { 8, 16, 32, 64, 128 }, Ascend910_93 = { 16, 32, 128 } }
-- the PEs of one server (A2) or of the one-server A3 case: the gap table's
M.ONE_SERVER = { Ascend910B = 8, Ascend910_93 = 16 }

-- the two blocks of doc/hccl.md: each its name, its table's header, and the marker
-- lines around it (first, last)
M.GAP = T.new("hccl-gap", "hccl-tables",
              "| SoC, PEs | op | size | AIV kernels (`hccl`) | task plan (`hccl-sdma`) "
                .. "| task / AIV |\n| --- | --- | --- | --- | --- | --- |")
M.PLANS = T.new("hccl-plans", "hccl-tables",
                "| SoC | op | PEs | size | emulated us | formula us | deviation | plan |\n"
                  .. "| --- | --- | --- | --- | --- | --- | --- | --- |")

-- emulated kernel time (max over PEs, us) and the plan of one baseline run; a
-- plan of several CCL-buffer loops runs one (its loops are identical launches:
-- hccl_plan_spec's "runs its CCL-buffer loops as identical launches" checks it)
-- unless all
function M.emulate(soc, name, pes, bytes, mode, all)
  local bop = runner.load_op("hccl/" .. name)
  local c = runner.config(bop, { soc = soc, pes = pes, count = bytes, dtype = "int8",
                                 baseline = mode, timing_only = true })
  local m = lab.machine({ soc = soc, pes = pes, data = false, prof_pe = false })
  local s = bop.setup(m, c)
  local loops = s.loops or 1
  if not all then s.loops = s.loops and 1 end
  local res = bop.run(m, c, s)
  local tot = op_mod.total(res, pes)
  local mx = 0
  for _, v in ipairs(tot.kernel_us) do mx = math.max(mx, v) end
  m:close()
  return all and mx or mx * loops, s.hccl_plan, c.profile, res
end

-- "Ascend910B allgather 8 65536": a case's name (the spec's findings use it)
function M.key(soc, name, pes, bytes)
  return string.format("%s %s %d %d", soc, name, pes, bytes)
end

-- every case of the plans table, in the table's order: {soc, name, pes, bytes, key}
function M.cases()
  local out = {}
  for _, soc in ipairs(M.SOCS) do
    for _, name in ipairs(M.OPS) do
      for _, pes in ipairs(M.PES[soc]) do
        for _, bytes in ipairs(M.SIZES) do
          out[#out + 1] = { soc = soc, name = name, pes = pes, bytes = bytes,
                            key = M.key(soc, name, pes, bytes) }
        end
      end
    end
  end
  return out
end

-- one case of the task plan (mode hccl-sdma) against the formula: the case with
-- emulated and formula (us), dev (%) and plan (its text)
function M.run(c)
  local t, plan, prof = M.emulate(c.soc, c.name, c.pes, c.bytes, "hccl-sdma")
  local f = A.plan_formula(prof, plan)
  return { soc = c.soc, name = c.name, pes = c.pes, bytes = c.bytes, key = c.key,
           emulated = t, formula = f, dev = (t - f) / f * 100, plan = plan.text }
end

-- "64 KiB", "16 MiB"
function M.size(bytes)
  if bytes >= 1024 * 1024 then return string.format("%d MiB", bytes // (1024 * 1024)) end
  return string.format("%d KiB", bytes // 1024)
end

-- the plans table's row of a case M.run computed
function M.plan_row(r)
  return string.format("| %s | %s | %d | %s | %.1f | %.1f | %+.1f%% | %s |", r.soc, r.name,
                       r.pes, M.size(r.bytes), r.emulated, r.formula, r.dev, r.plan)
end

-- the gap table's row of a one-server case r (M.run) with the AIV kernels' time aiv_us
function M.gap_row(r, aiv_us)
  return string.format("| %s, %d | %s | %s | %.1f | %.1f | %.2f |", r.soc, r.pes, r.name,
                       M.size(r.bytes), aiv_us, r.emulated, r.emulated / aiv_us)
end

-- the AIV kernels' time (mode hccl) of a one-server case
function M.aiv(r)
  return (M.emulate(r.soc, r.name, r.pes, r.bytes, "hccl"))
end

-- a block of doc text (doc_table.block), and the rows of block b in text
M.block, M.rows = T.block, T.rows

return M
