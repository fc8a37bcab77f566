-- The CANN ops-transformer mc2 MoE kernels ported as baselines (ops/mc2/):
-- MoeDistributeDispatchV2 / CombineV2 on Ascend910_93, MoeDistributeDispatchA2 /
-- CombineA2 on Ascend910B. Their outputs exact in the mc2 receive layout, one
-- kernel per operation, the status blocks they leave, clear errors, and one
-- small case's virtual times pinned.

local runner = require("shmemlab.runner")
local moe = require("shmemlab.moe")
local mc2 = require("shmemlab.mc2")

local DISPATCH, COMBINE = "ops/mc2/dispatch.lua", "ops/mc2/combine.lua"
local SOCS = { "Ascend910_93", "Ascend910B" }
local SMALL = { local_tokens = 16, hidden = 256, topk = 4 }

local function run(path, opts)
  local o = { baseline = "none", warmup = opts.warmup or 1, iters = opts.iters or 1 }
  for k, v in pairs(SMALL) do o[k] = v end
  for k, v in pairs(opts) do o[k] = v end
  return runner.run(path, o)
end

local exact = require("spec.helpers.ops").assert_landed

-- kernel_us of every PE, to the picosecond, as text
local function times(r)
  local t = {}
  for i, row in ipairs(r.shmem.per_pe) do t[i] = string.format("%.6f", row.kernel_us) end
  return table.concat(t, " ")
end

describe("mc2 baselines", function()
  for _, soc in ipairs(SOCS) do
    for _, pes in ipairs({ 2, 8, 16 }) do
      for _, wire in ipairs({ "bf16", "int8" }) do
        local what = string.format("%s %d PEs dispatch %s", soc, pes, wire)
        it("land every row exactly: " .. what, function()
          local r = run(DISPATCH, { soc = soc, pes = pes, dispatch_dtype = wire })
          exact(r, what)
          assert.are.equal(wire, r.shmem.state.wire.dtype)
          assert.are.equal(1, r.shmem.launches, what .. ": one kernel per dispatch")
        end)
      end
      local what = string.format("%s %d PEs combine bf16", soc, pes)
      it("sum every token exactly: " .. what, function()
        local r = run(COMBINE, { soc = soc, pes = pes, dtype = "bf16" })
        exact(r, what)
        assert.are.equal(1, r.shmem.launches, what .. ": one kernel per combine")
      end)
    end
  end

  it("are clean under --tool all (memcheck, racecheck, synccheck, initcheck)", function()
    for _, soc in ipairs(SOCS) do
      for _, case in ipairs({ { DISPATCH, "int8" }, { DISPATCH, "bf16" }, { COMBINE } }) do
        local r = run(case[1], { soc = soc, pes = 4, dispatch_dtype = case[2], check = "all" })
        local what = soc .. " " .. case[1] .. " " .. tostring(case[2])
        exact(r, what)
        assert.is_not_nil(r.shmem.sanitizer, what .. ": not a checked run")
        assert.are.equal(0, r.shmem.sanitizer.errors, what .. ": " .. r.shmem.sanitizer.text)
      end
    end
  end)

  it("stay exact over launches (the window halves alternate)", function()
    for _, soc in ipairs(SOCS) do
      exact(run(DISPATCH, { soc = soc, pes = 3, dispatch_dtype = "int8", warmup = 2, iters = 3 }),
            soc .. " dispatch x5")
      exact(run(COMBINE, { soc = soc, pes = 3, warmup = 2, iters = 3 }), soc .. " combine x5")
    end
  end)

  it("order the received rows by local expert, then source PE, then (token, k)", function()
    local R = moe.routes(moe.config({ pes = 3, routing = "file", hidden = 64,
                                      routes_file = "spec/fixtures/routes_3pe.txt" }))
    local L = mc2.layout(R)
    for d = 0, R.n_pes - 1 do
      local last, total = nil, 0
      for _, row in ipairs(L.rows[d]) do
        local e = R.expert[row.p][row.i]
        assert.are.equal(d, e // R.per_pe)
        local key = ((e % R.per_pe) * R.n_pes + row.p) * 1e6 + row.i
        if last then assert.is_true(key > last) end
        last = key
      end
      for j = 0, R.n_pes * R.per_pe - 1 do
        total = total + L.counts[d][j]
        assert.are.equal(total, L.recv_counts[d][j])
      end
      assert.are.equal(R.recv[d], total)
    end
  end)

  it("write one status block per (local expert, source PE) with its count (A3)", function()
    local r = run(DISPATCH, { soc = "Ascend910_93", pes = 4, dispatch_dtype = "int8",
                              warmup = 0, iters = 1 })
    exact(r, "status")
    local s = r.shmem.state
    local n, per, L = 4, s.routes.per_pe, s.layout
    local rows = 0
    for d = 0, n - 1 do
      local st = s.state:on(d):read(s.half_state, s.state_half)
      for j = 0, n * per - 1 do
        assert.are.equal(0, st[j * mc2.STATE + 1], "flag cleared after the wait")
        assert.are.equal(L.counts[d][j], st[j * mc2.STATE + 2], "count of block " .. j)
        rows = rows + st[j * mc2.STATE + 2]
      end
    end
    assert.are.equal(n * s.routes.tokens * s.routes.topk, rows)
  end)

  it("refuse what the A2 kernel does not take, clearly", function()
    local ok, err = pcall(run, DISPATCH, { soc = "Ascend910B", pes = 2, experts = 64 })
    assert.is_false(ok)
    assert.matches("at most 24 experts per PE", err)
    ok, err = pcall(run, DISPATCH, { soc = "Ascend910B", pes = 2, hidden = 40,
                                     dispatch_dtype = "int8" })
    assert.is_false(ok)
    assert.matches("not a multiple of 32", err)
  end)

  it("time a small case exactly (16 tokens x 256, topk 4, 2 PEs, one launch)", function()
    local got = {}
    for _, soc in ipairs(SOCS) do
      local o = { soc = soc, pes = 2, warmup = 0, iters = 1 }
      o.dispatch_dtype = "int8"
      got[#got + 1] = soc .. " dispatch int8 " .. times(run(DISPATCH, o))
      o.dispatch_dtype = nil
      got[#got + 1] = soc .. " combine bf16 " .. times(run(COMBINE, o))
    end
    assert.are.same({
      "Ascend910_93 dispatch int8 18.211330 17.473793",
      "Ascend910_93 combine bf16 11.524794 10.044191",
      "Ascend910B dispatch int8 46.158098 44.540620",
      "Ascend910B combine bf16 43.772714 43.502714",
    }, got)
  end)
end)
