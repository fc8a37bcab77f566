-- HCCL's baselines beyond one server (issue 23 items 1 and 2): the plan HCCL
-- selects (shmemlab.hccl_algo, from cann-hccl's SelectAlgfor910B / 91093 and the
-- level-1 cost comparison) and the emulated task plan (shmemlab.hccl_levels)
-- against cann-hccl's documented alpha-beta formulas with the profile's alpha
-- and beta, in timing-only mode. Cases the emulation cannot bring within 15%
-- are pinned as findings (doc/hccl.md says why), never fitted away. The cases
-- and their rows are shmemlab.hccl_cases', which bench/hccl_tables.lua (`make
-- hccl-tables`) writes into doc/hccl.md: each case here fails when its row
-- there (the plans table, and inside one server the gap table) is stale.
local lab = require("shmemlab")
local runner = require("shmemlab.runner")
local A = require("shmemlab.hccl_algo")
local H = require("shmemlab.hccl_cases")
local docs = require("spec.helpers.docs")

-- the deviation (emulated - formula) / formula in % of every case outside 15%:
-- the emulation's per-step engine costs (two descriptors' task time, setup,
-- the notify's latency, the poll) that the formula's alpha leaves out, and the
-- cases doc/hccl.md lists as not yet decomposed
local FINDINGS = {
  ["Ascend910B allgather 8 65536"] = 135.0,
  ["Ascend910B allgather 16 65536"] = 24.2,
  ["Ascend910B reduce_scatter 8 65536"] = 135.0,
  ["Ascend910B reduce_scatter 16 65536"] = 24.2,
  ["Ascend910B allreduce 8 65536"] = 600.0,
  ["Ascend910B allreduce 8 1048576"] = 78.1,
  ["Ascend910B allreduce 16 65536"] = 320.8,
  ["Ascend910B allreduce 16 1048576"] = 75.6,
  ["Ascend910B allreduce 32 65536"] = 219.7,
  ["Ascend910B allreduce 32 1048576"] = 65.5,
  ["Ascend910B allreduce 64 65536"] = 176.5,
  ["Ascend910B allreduce 64 1048576"] = 61.9,
  ["Ascend910B allreduce 128 65536"] = 152.4,
  ["Ascend910B allreduce 128 1048576"] = 59.2,
  ["Ascend910B alltoall 8 65536"] = 135.0,
  ["Ascend910B alltoall 16 65536"] = 21.6,
  ["Ascend910B broadcast 8 65536"] = 379.6,
  ["Ascend910B broadcast 8 1048576"] = 48.8,
  ["Ascend910B broadcast 16 65536"] = 216.9,
  ["Ascend910B broadcast 16 1048576"] = 38.1,
  ["Ascend910B broadcast 32 65536"] = 165.8,
  ["Ascend910B broadcast 32 1048576"] = 32.4,
  ["Ascend910B broadcast 64 65536"] = 135.9,
  ["Ascend910B broadcast 64 1048576"] = 28.2,
  ["Ascend910B broadcast 128 65536"] = 117.9,
  ["Ascend910B broadcast 128 1048576"] = 25.4,
  ["Ascend910_93 allgather 16 65536"] = 114.9,
  ["Ascend910_93 allgather 32 65536"] = 45.6,
  ["Ascend910_93 allgather 128 65536"] = 17.7,
  ["Ascend910_93 reduce_scatter 16 65536"] = 114.9,
  ["Ascend910_93 reduce_scatter 32 65536"] = 111.3,
  ["Ascend910_93 reduce_scatter 128 65536"] = 41.4,
  ["Ascend910_93 allreduce 16 65536"] = 1009.2,
  ["Ascend910_93 allreduce 16 1048576"] = 118.7,
  ["Ascend910_93 allreduce 32 65536"] = 271.1,
  ["Ascend910_93 allreduce 32 1048576"] = 87.8,
  ["Ascend910_93 allreduce 32 16777216"] = 19.6,
  ["Ascend910_93 allreduce 128 65536"] = 287.4,
  ["Ascend910_93 allreduce 128 1048576"] = 105.0,
  ["Ascend910_93 alltoall 16 65536"] = 114.9,
  ["Ascend910_93 alltoall 32 65536"] = 111.2,
  ["Ascend910_93 alltoall 128 65536"] = 117.3,
  ["Ascend910_93 broadcast 16 65536"] = 575.7,
  ["Ascend910_93 broadcast 16 1048576"] = 65.9,
  ["Ascend910_93 broadcast 32 65536"] = 532.0,
  ["Ascend910_93 broadcast 32 1048576"] = 86.3,
  ["Ascend910_93 broadcast 128 65536"] = 472.3,
  ["Ascend910_93 broadcast 128 1048576"] = 114.9,
}

describe("HCCL plan selection (cann-hccl SelectAlg)", function()
  local A2, A3 = lab.soc("Ascend910B"), lab.soc("Ascend910_93")
  local function text(prof, name, n, bytes, mode) return assert(A.select(prof, name, n, bytes, mode)).text end

  it("keeps the AIV kernels inside one server by default, the task plan beyond", function()
    assert.are.equal("level0 mesh (AIV)", text(A2, "allgather", 8, 1 << 20))
    assert.are.equal("level0 mesh allgather (SDMA)", text(A2, "allgather", 8, 1 << 20, "sdma"))
    assert.are.equal("level0 mesh allgather (SDMA), level1 ring allgather (RDMA)",
                     text(A2, "allgather", 16, 1 << 20))
  end)

  it("picks level 1 by the static-delay comparison: ring up to 3 servers, NHR beyond", function()
    assert.are.equal("ring", A.level1_rs_ag(2))
    assert.are.equal("ring", A.level1_rs_ag(3))     -- 2 x 60 us either way: a tie keeps ring
    assert.are.equal("nhr", A.level1_rs_ag(4))
    assert.are.equal("nhr", A.level1_rs_ag(16))
    assert.matches("level1 NHR reduce%-scatter %(RDMA%)", text(A2, "reduce_scatter", 32, 1 << 20))
  end)

  it("switches allgather and reduce_scatter to the pipeline from 2 MiB (no RDMA Lite)", function()
    assert.are.equal("level0 mesh allgather (SDMA), level1 ring allgather (RDMA)",
                     text(A2, "allgather", 16, 2 * 1024 * 1024 - 1))
    assert.are.equal("level1 pipeline allgather (RDMA)", text(A2, "allgather", 16, 2 * 1024 * 1024))
  end)

  it("runs broadcast's level 1 as ring on 2 servers and RHD on 4 or more, alltoall pairwise", function()
    assert.matches("level1 ring broadcast", text(A2, "broadcast", 16, 1 << 20))
    assert.matches("level1 RHD broadcast", text(A2, "broadcast", 32, 1 << 20))
    assert.matches("level1 pairwise alltoall %(RDMA%)", text(A2, "alltoall", 64, 1 << 20))
  end)

  it("follows SelectAlgfor91093 on an A3 supernode", function()
    assert.are.equal("level0 RHD allgather (SDMA)", text(A3, "allgather", 128, 1 << 20))
    assert.are.equal("level0 ring allgather (SDMA), level1 NHR allgather (SDMA)",
                     text(A3, "allgather", 128, 16 << 20))
    assert.are.equal("level0 mesh alltoall (SDMA)", text(A3, "alltoall", 128, 1 << 20))
  end)

  it("refuses what it does not model with a message", function()
    local plan, err = A.select(A3, "allgather", 1600, 1024)
    assert.is_nil(plan)
    assert.matches("span supernodes of 768 dies", err)
    plan, err = A.select(lab.soc("Ascend950"), "allgather", 16, 1024)
    assert.is_nil(plan)
    assert.matches("no HCCL selection table for allgather on Ascend950", err)
    local fallback = require("shmemlab.hccl_levels").plan(
      { profile = lab.soc("Ascend950"), pes = 16, count = 1024, dtype = "int8", baseline = "hccl-sdma" },
      "allgather")
    assert.is_true(fallback.aiv)                     -- the AIV kernels, as before
    assert.matches("no HCCL selection table", fallback.note)
  end)
end)

-- nil when row i of block b's rows is row, else why not
local function stale(b, path, rows, i, row)
  if rows[i] == row then return nil end
  return string.format("%s: row %d of the %s table is stale (make hccl-tables rewrites it)"
    .. "\n  doc: %s\n  now: %s", path, i, b.name, tostring(rows[i]), row)
end

describe("HCCL task plans against cann-hccl's alpha-beta formulas", function()
  local plans_path, plans_rows = docs.table_rows(H.PLANS)
  local gap_path, gap_rows = docs.table_rows(H.GAP)
  local cases = H.cases()
  local plan_i, gap_i, gaps, by_op, order = {}, {}, 0, {}, {}
  for i, c in ipairs(cases) do      -- each case's row in each table, the cases by SoC and op
    plan_i[c] = i
    if H.ONE_SERVER[c.soc] == c.pes then gaps = gaps + 1; gap_i[c] = gaps end
    local group = c.soc .. " " .. c.name
    if not by_op[group] then by_op[group] = {}; order[#order + 1] = group end
    table.insert(by_op[group], c)
  end

  for _, group in ipairs(order) do
    local soc = group:match("^%S+")
    it(group .. " on " .. table.concat(H.PES[soc], ", ") .. " PEs, as doc/hccl.md shows it", function()
      for _, c in ipairs(by_op[group]) do
        local r = H.run(c)
        local where = string.format("%s: emulated %.1f us, formula %.1f us (%s)", c.key,
                                    r.emulated, r.formula, r.plan)
        if FINDINGS[c.key] then
          assert.are.equal(string.format("%.1f", FINDINGS[c.key]), string.format("%.1f", r.dev), where)
          assert.is_true(math.abs(r.dev) > 15, where .. ": now within 15%, drop the finding")
        else
          assert.is_true(math.abs(r.dev) <= 15, string.format("%s: %+.1f%%", where, r.dev))
        end
        local why = stale(H.PLANS, plans_path, plans_rows, plan_i[c], H.plan_row(r))
        assert.is_nil(why, why)
        if gap_i[c] then
          why = stale(H.GAP, gap_path, gap_rows, gap_i[c], H.gap_row(r, H.aiv(r)))
          assert.is_nil(why, why)
        end
      end
    end)
  end

  it("shows a row for every case and no other", function()
    assert.are.equal(#cases, #plans_rows, plans_path .. ": the " .. H.PLANS.name .. " table's rows")
    assert.are.equal(gaps, #gap_rows, gap_path .. ": the " .. H.GAP.name .. " table's rows")
  end)

  it("fails a row edited by hand, missing or not yet written", function()
    local r = { soc = "Ascend910B", name = "allgather", pes = 8, bytes = 65536, emulated = 8.6,
                formula = 3.7, dev = 135, plan = "level0 mesh allgather (SDMA)" }
    local row = H.plan_row(r)
    assert.are.equal("| Ascend910B | allgather | 8 | 64 KiB | 8.6 | 3.7 | +135.0% | "
                     .. "level0 mesh allgather (SDMA) |", row)
    local function doc(rows) return "prose\n\n" .. H.block(H.PLANS, rows) .. "\n\nprose\n" end
    assert.same({ row, "| x |" }, H.rows(H.PLANS, doc({ row, "| x |" })))
    assert.is_nil(stale(H.PLANS, "doc", H.rows(H.PLANS, doc({ row })), 1, row))
    local edited = row:gsub("| 8%.6 |", "| 8.7 |")
    assert.matches("doc: row 1 of the hccl%-plans table is stale",
                   stale(H.PLANS, "doc", H.rows(H.PLANS, doc({ edited })), 1, row))
    assert.is_not_nil(stale(H.PLANS, "doc", H.rows(H.PLANS, doc({})), 1, row))
    assert.is_nil(H.rows(H.PLANS, "prose\n" .. row .. "\n"))
  end)
end)

describe("HCCL's CCL-buffer loops", function()
  it("runs its CCL-buffer loops as identical launches", function()
    for _, name in ipairs({ "allgather", "reduce_scatter", "alltoall" }) do
      local t, _, _, res = H.emulate("Ascend910B", name, 16, 16 * 1024 * 1024, "hccl-sdma", true)
      assert.are.equal(2, #res, name)
      for pe = 1, 16 do assert.are.equal(res[1].kernel_us[pe], res[2].kernel_us[pe], name) end
      assert.are.equal(string.format("%.6f", t), string.format("%.6f", H.emulate("Ascend910B", name, 16,
                       16 * 1024 * 1024, "hccl-sdma")), name)
    end
  end)
end)

describe("--baseline hccl-aiv / hccl-sdma", function()
  it("names the plan that ran and checks its values", function()
    local r = runner.run("allgather", { pes = 16, count = 4096, baseline = "hccl-sdma",
                                        warmup = 0, iters = 1 })
    assert.are.equal("HCCL sdma mode, AllGatherMeshExecutor: level0 mesh allgather (SDMA), "
                     .. "level1 ring allgather (RDMA)", r.baseline.describe.algorithm)
    assert.is_nil(r.baseline.check.unchecked)
    assert.are.equal(0, r.baseline.check.wrong)
    assert.are.equal(0, r.shmem.check.wrong)
  end)

  it("runs its task plans clean under --tool all beyond one server", function()
    for _, name in ipairs(H.OPS) do
      for _, case in ipairs({ { "Ascend910B", 32 }, { "Ascend910_93", 32 } }) do
        local r = runner.run(name, { soc = case[1], pes = case[2], count = 512, warmup = 0,
                                     iters = 1, check = "all" })
        assert.equal(0, r.baseline.sanitizer.errors, name .. ": " .. r.baseline.sanitizer.text)
      end
    end
  end)

  it("keeps the AIV kernels inside one server in AIV mode", function()
    local r = runner.run("allgather", { pes = 8, count = 4096, baseline = "hccl-aiv",
                                        warmup = 0, iters = 1 })
    assert.are.equal(0, r.baseline.check.wrong)
    assert.matches("hcomm AIV AllGather", r.baseline.describe.algorithm)
  end)
end)
