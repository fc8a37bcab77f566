-- The HCCL task plans (shmemlab.hccl_levels, --baseline hccl beyond one server and
-- hccl-sdma everywhere) compute their collective: each plan at small counts is
-- checked exactly by the runner's checker, in several dtypes and reduce ops, its
-- kernel time the same as the timing-only plan's; a plan with a wrong offset or a
-- lost reduction is caught. The executors of large sizes are reached at small
-- counts by lowering hccl_algo's named thresholds for the test.
local runner = require("shmemlab.runner")
local A = require("shmemlab.hccl_algo")
local values = require("shmemlab.hccl_values")

-- one baseline run through the runner's measure and check; max kernel us
local function baseline(name, o)
  local bop = runner.load_op("ops/hccl/" .. name .. ".lua")
  local opts = { warmup = 0, iters = 1, baseline = o.baseline or "hccl-sdma" }
  for k, v in pairs(o) do opts[k] = v end
  local r = runner.measure(bop, runner.config(bop, opts))
  local t = 0
  for _, p in ipairs(r.per_pe) do t = math.max(t, p.kernel_us) end
  local out = { check = r.check, us = t, algorithm = r.describe.algorithm,
                line = runner.check_text("baseline", r.check), sanitizer = r.sanitizer }
  runner.release(r)
  return out
end

-- the thresholds of hccl_algo set for a test, then restored
local function with(consts, f)
  local old = {}
  for k, v in pairs(consts) do old[k] = A[k]; A[k] = v end
  local ok, err = pcall(f)
  for k, v in pairs(old) do A[k] = v end
  if not ok then error(err, 0) end
end

-- checked exact, and timed as the timing-only plan
local function exact(name, o, plan)
  local r = baseline(name, o)
  local where = string.format("%s %s %d PEs %s: %s", name, o.soc or "Ascend910B", o.pes,
                              o.dtype or "", r.algorithm)
  assert.is_nil(r.check.unchecked, where)
  assert.are.equal(0, r.check.wrong, where)
  assert.matches(plan, r.algorithm, 1, true)
  local tim = {}
  for k, v in pairs(o) do tim[k] = v end
  tim.timing_only = true
  assert.are.equal(r.us, baseline(name, tim).us, where .. ": data run timed as timing-only")
end

describe("HCCL task plans computed and checked (Atlas A2)", function()
  it("allgather: mesh, level-1 ring (2 servers), NHR (5 servers), pipeline", function()
    exact("allgather", { pes = 8, count = 96 }, "level0 mesh allgather")
    exact("allgather", { pes = 16, count = 33, dtype = "int16" }, "level1 ring allgather")
    exact("allgather", { pes = 40, count = 7, dtype = "fp16" }, "level1 NHR allgather")
    with({ PIPELINE_MIN = 64 }, function()
      exact("allgather", { pes = 24, count = 64, dtype = "int8" }, "level1 pipeline allgather")
    end)
  end)

  it("reduce_scatter: mesh, ring + mesh, NHR (5 servers) + mesh, pipeline; sum, max, min", function()
    exact("reduce_scatter", { pes = 8, count = 17, reduce = "max" }, "level0 mesh reduce-scatter")
    exact("reduce_scatter", { pes = 24, count = 9, dtype = "bf16" }, "level1 ring reduce-scatter")
    exact("reduce_scatter", { pes = 40, count = 5, dtype = "int8", reduce = "min" },
          "level1 NHR reduce-scatter")
    with({ PIPELINE_MIN = 64 }, function()
      exact("reduce_scatter", { pes = 24, count = 16, dtype = "fp32" }, "level1 pipeline reduce-scatter")
    end)
  end)

  it("allreduce: mesh RS + AG with a level-1 ring (3 servers) or NHR (5 servers); pipeline", function()
    exact("allreduce", { pes = 8, count = 24, dtype = "fp32" }, "level0 mesh allgather")
    exact("allreduce", { pes = 24, count = 48, dtype = "int8", reduce = "max" }, "level1 ring allreduce")
    exact("allreduce", { pes = 40, count = 80, dtype = "fp16" }, "level1 NHR allreduce")
    with({ PIPELINE_MIN = 8 }, function()
      exact("allreduce", { pes = 24, count = 48, reduce = "min" }, "level1 pipeline allgather")
    end)
  end)

  it("broadcast: scatter + allgather, with a level-1 chain or RHD tree, from any root", function()
    exact("broadcast", { pes = 8, count = 40, root = 5 }, "level0 mesh scatter")
    exact("broadcast", { pes = 16, count = 24, root = 11, dtype = "int64" }, "level1 ring broadcast")
    exact("broadcast", { pes = 32, count = 16, root = 19 }, "level1 RHD broadcast")
  end)

  it("alltoall in one server", function()
    exact("alltoall", { pes = 8, count = 7, dtype = "uint8" }, "level0 mesh alltoall")
  end)

  it("runs one launch per CCL buffer's worth, each staged in and out", function()
    exact("allgather", { pes = 16, count = 64, overrides = { hccl_buffer_bytes = 1024 } },
          "level1 ring allgather")
    exact("allreduce", { pes = 24, count = 144, overrides = { hccl_buffer_bytes = 256 } },
          "level1 ring allreduce")
  end)
end)

describe("HCCL task plans computed and checked (Atlas A3)", function()
  local A3 = "Ascend910_93"
  it("allgather: mesh, ring, RHD and NHR over every die, ring + NHR", function()
    exact("allgather", { soc = A3, pes = 16, count = 5 }, "level0 mesh allgather")
    exact("allgather", { soc = A3, pes = 32, count = 6, dtype = "bf16" }, "level0 RHD allgather")
    exact("allgather", { soc = A3, pes = 48, count = 3 }, "level0 NHR allgather")
    with({ A3_MESH_MAX = 8, A3_AG_SMALL_MAX = 8 }, function()
      exact("allgather", { soc = A3, pes = 16, count = 4 }, "level0 ring allgather")
      exact("allgather", { soc = A3, pes = 48, count = 4 }, "level1 NHR allgather")
    end)
  end)

  it("reduce_scatter: mesh, ring, NHR + ring (3 supernode servers)", function()
    exact("reduce_scatter", { soc = A3, pes = 16, count = 3, reduce = "min" }, "level0 mesh reduce-scatter")
    exact("reduce_scatter", { soc = A3, pes = 48, count = 5, dtype = "fp16" }, "level1 NHR reduce-scatter")
    with({ A3_MESH_MAX = 8 }, function()
      exact("reduce_scatter", { soc = A3, pes = 16, count = 4, reduce = "max" },
            "level0 ring reduce-scatter")
    end)
  end)

  it("allreduce: mesh, NHR over every die, ring + NHR + ring", function()
    exact("allreduce", { soc = A3, pes = 16, count = 32 }, "level0 mesh reduce-scatter")
    exact("allreduce", { soc = A3, pes = 48, count = 96, dtype = "int16", reduce = "max" },
          "level0 NHR allreduce")
    with({ A3_AR_COMM_PER_RANK = 0 }, function()
      exact("allreduce", { soc = A3, pes = 48, count = 96, dtype = "fp32" }, "level1 NHR allreduce")
    end)
  end)

  it("broadcast: in one server and with a level-1 NHR (3 servers)", function()
    exact("broadcast", { soc = A3, pes = 16, count = 16, root = 3 }, "level0 mesh scatter")
    exact("broadcast", { soc = A3, pes = 48, count = 96, root = 37 }, "level1 NHR broadcast")
  end)

  it("runs clean under --check all where a tree reads its padding (3 servers)", function()
    local r = baseline("broadcast", { soc = A3, pes = 48, count = 384, root = 20, check = "all" })
    assert.are.equal(0, r.check.wrong)
    assert.are.equal(0, r.sanitizer.errors, r.sanitizer.text)
    r = baseline("allreduce", { soc = A3, pes = 48, count = 384, check = "all" })
    assert.are.equal(0, r.sanitizer.errors, r.sanitizer.text)
  end)

  it("alltoall over every die", function()
    exact("alltoall", { soc = A3, pes = 32, count = 3 }, "level0 mesh alltoall")
  end)
end)

describe("a wrong HCCL task plan", function()
  local place = values.place
  after_each(function() values.place = place end)

  it("is caught by the check when one transfer lands one region off", function()
    local hit = false
    values.place = function(ctx, d, ...)
      local pl = place(ctx, d, ...)
      if pl and not hit and d.lay == "desc" then
        hit = true
        return { pl[1], pl[2] + ctx.R, pl[3] }
      end
      return pl
    end
    local r = baseline("allgather", { pes = 32, count = 8 })
    assert.is_true(hit)
    assert.is_true(r.check.wrong > 0)
    assert.matches("^check baseline: %d+ wrong", r.line)
  end)

  it("is caught when a reduction is dropped", function()
    values.place = function(...)
      local pl = place(...)
      if pl then pl[3] = nil end
      return pl
    end
    assert.is_true(baseline("reduce_scatter", { pes = 16, count = 8 }).check.wrong > 0)
  end)

  it("says why where a plan cannot carry its values", function()
    local r = baseline("alltoall", { pes = 16, count = 8 })
    assert.matches("staged alltoall sends a block list per pairwise step", r.check.unchecked)
    assert.matches("not checked", r.line)
    r = baseline("allreduce", { pes = 16, count = 16, overrides = {}, baseline = "hccl" })
    assert.is_nil(r.check.unchecked)
  end)
end)

describe("HCCL on PEs that are not a whole number of servers", function()
  -- HCCL's levels take the same ranks on every server; a plan over 8 + 4 PEs read
  -- past its groups (a crash in the schedule): the baseline runs the AIV kernels and
  -- the header says why
  it("runs the AIV kernels, checked, and names the reason", function()
    for _, case in ipairs({ { "Ascend910B", 12 }, { "Ascend910_93", 20 } }) do
      for _, name in ipairs({ "allgather", "broadcast", "reduce_scatter" }) do
        local r = baseline(name, { soc = case[1], pes = case[2], count = 240,
                                   baseline = "hccl" })
        local where = string.format("%s %s %d PEs", name, case[1], case[2])
        assert.are.equal(0, r.check.wrong, where)
        local bop = runner.load_op("ops/hccl/" .. name .. ".lua")
        local c = runner.config(bop, { soc = case[1], pes = case[2], count = 240 })
        assert.matches("not a whole number of servers", bop.plan_text(c), 1, true)
      end
    end
  end)
end)

describe("sdma_reduce_nbi / roce_reduce_nbi (a descriptor that reduces as it lands)", function()
  local lab = require("shmemlab")
  local N = 64

  -- PE 0 puts (or reduces) its x into PE 1's y; y on PE 1 starts at 100 + i
  local function run(call, dtype)
    local m = lab.machine({ soc = "Ascend910B", pes = 2, check = "racecheck" })
    local x = m:malloc(dtype, N, "x"):fill("iota")
    local y = m:malloc(dtype, N, "y"):fill("iota", 100)
    local r = m:launch(function(k)
      local ub = k:ub("int32", 16)
      if k.pe == 0 then
        call(k, y, x, ub)
        if call.rdma then k:roce_quiet(1, ub, 0) else k:sdma_quiet(ub, 0) end
      end
    end, 1)
    return y:on(1), r.kernel_us[1], m
  end
  local function put(eng, opn)
    return setmetatable({ rdma = eng == "roce" }, { __call = function(_, k, y, x, ub)
      if opn and eng == "roce" then k:roce_reduce_nbi(y, x, ub, N, 1, opn)
      elseif opn then k:sdma_reduce_nbi(y, x, ub, N, 1, opn)
      elseif eng == "roce" then k:roce_put_nbi(y, x, ub, N, 1)
      else k:sdma_put_nbi(y, x, ub, N, 1, 0) end
    end })
  end

  it("lands dst op src in dst's dtype, timed exactly as the put", function()
    for _, eng in ipairs({ "sdma", "roce" }) do
      local y, t_put = run(put(eng), "fp16")
      assert.are.equal(5, y:read(5))
      for opn, want in pairs({ add = 105 + 5, max = 105, min = 5 }) do
        local yr, t, m = run(put(eng, opn), "fp16")
        assert.are.equal(want, yr:read(5), eng .. " " .. opn)
        assert.are.equal(t_put, t, eng .. " " .. opn .. ": timed as the put")
        assert.same({}, m:check_reports())
      end
    end
  end)

  it("refuses an unknown op and mixed dtypes", function()
    local m = lab.machine({ soc = "Ascend910B", pes = 2 })
    local x, y = m:malloc("int32", N, "x"), m:malloc("fp32", N, "y")
    assert.has_error(function()
      m:launch(function(k) k:sdma_reduce_nbi(x, x, k:ub("int32", 16), N, 1, "prod") end, 1)
    end)
    local ok, err = pcall(m.launch, m, function(k)
      k:sdma_reduce_nbi(y, x, k:ub("int32", 16), N, 1, "add")
    end, 1)
    assert.is_false(ok)
    assert.matches("one dtype", tostring(err))
  end)
end)
