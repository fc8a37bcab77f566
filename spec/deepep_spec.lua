-- The DeepEP-Ascend normal-mode ports (ops/deepep/dispatch.lua, combine.lua;
-- shmemlab.deepep): data lands exactly (DeepEP's per-expert windows) on 2, 8
-- and 16 PEs under every routing; exact virtual times of one small case; the
-- structure that matters: the notify kernel runs, and ends, before the data
-- kernel starts; DeepEP's dispatch bandwidth falls as EP grows at the same
-- tokens per rank where the lab's flat dispatch stays flat; the layout tables;
-- UB plans that do not fit are refused as the shipping kernels would fail.

local runner = require("shmemlab.runner")
local moe = require("shmemlab.moe")
local deepep = require("shmemlab.deepep")

local DISPATCH, COMBINE = "ops/deepep/dispatch.lua", "ops/deepep/combine.lua"

local function run(path, opts)
  opts.warmup, opts.iters, opts.baseline = opts.warmup or 0, opts.iters or 1, "none"
  return runner.run(path, opts)
end

local function assert_exact(r, what)
  require("spec.helpers.ops").assert_landed(r, what)
  assert.is_nil(r.frames.error, what .. ": frame report: " .. tostring(r.frames.error))
end

describe("DeepEP layout (shmemlab.deepep.layout)", function()
  for _, pes in ipairs({ 2, 8, 16 }) do
    it("per-expert windows on " .. pes .. " PEs: every row in its expert's window, once", function()
      local R = moe.routes(moe.config({ pes = pes, local_tokens = 23, topk = 3, experts = 4 * pes,
                                        routing = "zipf" }))
      local L = deepep.layout(R)
      local used, per = {}, R.per_pe
      for p = 0, pes - 1 do
        for i = 1, 23 * 3 do
          local e, d, slot = R.expert[p][i], R.dest[p][i], L.routes.slot[p][i]
          local lo = L.put_offset[e * pes + p + 1]
          assert.is_true(slot >= lo and slot < lo + L.count[p][e])
          assert.is_true(slot >= 0 and slot < R.recv[d])
          assert.is_nil(used[d * 100000 + slot])
          used[d * 100000 + slot] = true
          assert.are.equal(d, e // per)
        end
      end
      for d = 0, pes - 1 do                   -- the windows tile the receive buffer
        assert.are.equal(0, L.put_offset[d * per * pes + 1])
      end
    end)
  end

  it("counts each PE's rows per expert; send_token_idx numbers them, made when first read",
     function()
    local R = moe.routes(moe.config({ pes = 4, local_tokens = 19, topk = 3, experts = 16,
                                      routing = "lognormal" }))
    local L = deepep.layout(R)
    assert.is_nil(rawget(L, "idx"))
    for p = 0, 3 do
      local c = {}
      for e = 0, 15 do c[e] = 0 end
      for i = 1, 19 * 3 do
        local e = R.expert[p][i]
        assert.are.equal(c[e], L.idx[p][i])
        c[e] = c[e] + 1
      end
      assert.are.same(c, L.count[p])
    end
    assert.is_not_nil(rawget(L, "idx"))
  end)

  it("SplitCoreCal gives the first total % blocks blocks one more", function()
    assert.are.same({ 3, 0 }, { deepep.split(10, 4, 0) })
    assert.are.same({ 3, 3 }, { deepep.split(10, 4, 1) })
    assert.are.same({ 2, 6 }, { deepep.split(10, 4, 2) })
    assert.are.same({ 2, 8 }, { deepep.split(10, 4, 3) })
    assert.are.same({ 0, 5 }, { deepep.split(5, 48, 47) })
  end)
end)

describe("DeepEP-Ascend normal dispatch and combine (ops/deepep/)", function()
  for _, path in ipairs({ DISPATCH, COMBINE }) do
    for _, pes in ipairs({ 2, 8, 16 }) do
      for _, routing in ipairs({ "uniform", "lognormal", "zipf" }) do
        it(path .. " is exact on " .. pes .. " PEs, " .. routing, function()
          local r = run(path, { pes = pes, routing = routing, local_tokens = 19, hidden = 64,
                                topk = 3, experts = 2 * pes, dtype = "bf16" })
          assert_exact(r, path .. " " .. pes .. " " .. routing)
        end)
      end
    end

    it(path .. " is exact in fp16 on the A3 profile with topk 8, warm", function()
      local r = run(path, { soc = "Ascend910_93", pes = 4, local_tokens = 9, hidden = 48,
                            topk = 8, experts = 32, dtype = "fp16", routing = "lognormal",
                            warmup = 1, iters = 2 })
      assert_exact(r, path .. " fp16")
    end)

    it(path .. " catches a corrupted element", function()
      local r = run(path, { pes = 3, local_tokens = 5, hidden = 32, topk = 2 })
      local res = r.shmem
      local s = res.state
      local out = s.recv or s.output
      local v = out:on(1):read(17)
      out:on(1):sub(17, 1):fill({ v + 1 })
      local wrong, at, pe = res.op.check(res.machine, r.config, s)
      assert.are.same({ 1, 17, 1 }, { wrong, at, pe })
    end)
  end

  for _, pes in ipairs({ 2, 8, 16 }) do
    it("INT8 dispatch (DynamicQuant) is exact, rows and scales, on " .. pes .. " PEs", function()
      local r = run(DISPATCH, { pes = pes, local_tokens = 13, hidden = 48, topk = 3,
                                experts = 2 * pes, dtype = "bf16", dispatch_dtype = "int8",
                                routing = pes == 8 and "zipf" or "uniform" })
      assert_exact(r, "int8 " .. pes)
      assert.are.equal("int8", r.shmem.state.recv.dtype)
      assert.are.equal(64, r.shmem.state.wire.row)           -- hUBAlignSize: 48 -> 64 bytes
    end)
  end

  it("INT8 dispatch: a corrupted scale is caught", function()
    local r = run(DISPATCH, { pes = 3, local_tokens = 5, hidden = 32, topk = 2,
                              dispatch_dtype = "int8" })
    local res = r.shmem
    local s = res.state
    local v = s.scales:on(2):read(3)
    s.scales:on(2):sub(3, 1):fill({ v * 2 })
    local wrong, at, pe = res.op.check(res.machine, r.config, s)
    assert.are.same({ 1, 3, 2 }, { wrong, at, pe })
  end)

  it("rows that are not whole 32-byte blocks: dispatch pads its windows' pitch", function()
    for _, path in ipairs({ DISPATCH, COMBINE }) do
      for _, dd in ipairs({ "bf16", "int8" }) do
        if path == DISPATCH or dd == "bf16" then
          local r = run(path, { pes = 3, local_tokens = 7, hidden = 20, topk = 2,
                                dispatch_dtype = dd })
          assert_exact(r, path .. " hidden 20 " .. dd)
          if path == DISPATCH then
            assert.are.equal(32, r.shmem.state.wire.row)      -- 40 -> 64 bytes, 20 -> 32
          end
        end
      end
    end
  end)

  for _, soc in ipairs({ "Ascend910B", "Ascend910_93" }) do
    for _, dd in ipairs({ "bf16", "int8" }) do
      it("runs clean under --tool all on " .. soc .. ", " .. dd .. " dispatch and its combine",
         function()
        for _, path in ipairs({ DISPATCH, COMBINE }) do
          local r = run(path, { soc = soc, pes = 2, local_tokens = 16, hidden = 256,
                                dtype = "bf16", dispatch_dtype = dd, check = "all" })
          assert_exact(r, path)
          assert.are.equal(0, r.shmem.sanitizer.errors, path .. ": " .. r.shmem.sanitizer.text)
        end
      end)
    end
  end

  it("exact virtual times of one small case (Ascend910_93, 4 PEs)", function()
    local function small()
      return { soc = "Ascend910_93", pes = 4, local_tokens = 16, hidden = 256, topk = 2,
               experts = 8, dtype = "bf16" }
    end
    local d, c = run(DISPATCH, small()), run(COMBINE, small())
    assert_exact(d, "dispatch"); assert_exact(c, "combine")
    assert.are.equal("26.050 13.381", string.format("%.3f %.3f", d.metrics.summary.latency_us,
                                           c.metrics.summary.latency_us))
  end)

  it("dispatch: the notify kernel ends before the data kernel starts, on every PE", function()
    local r = run(DISPATCH, { pes = 8, local_tokens = 17, hidden = 64, topk = 2 })
    assert.are.equal(2, r.shmem.launches)
    for pe = 0, 7 do
      local tasks = r.shmem.machine:tasks(pe)
      local a, b = tasks[#tasks - 1], tasks[#tasks]
      assert.are.equal("shmem_notify_dispatch", a.name)
      assert.are.equal("shmem_moe_dispatch_normal", b.name)
      assert.is_true(b.start_us >= a.stop_us)
    end
    local c = run(COMBINE, { pes = 8, local_tokens = 17, hidden = 64, topk = 2 })
    assert.are.equal(1, c.shmem.launches)
  end)

  it("dispatch: DeepEP's bandwidth falls as EP grows; the lab's flat dispatch stays flat",
     function()
    local bw = { deepep = {}, lab = {} }
    for _, pes in ipairs({ 8, 16, 32 }) do
      local opts = { soc = "Ascend910_93", pes = pes, local_tokens = 64, hidden = 1024, topk = 8,
                     experts = 64, dtype = "bf16", timing_only = true }
      bw.deepep[pes] = run(DISPATCH, opts).metrics.summary.deepep_bandwidth_GBps
      bw.lab[pes] = run("dispatch", opts).metrics.summary.deepep_bandwidth_GBps
    end
    assert.is_true(bw.deepep[16] < 0.8 * bw.deepep[8], "deepep 8 -> 16")
    assert.is_true(bw.deepep[32] < 0.8 * bw.deepep[16], "deepep 16 -> 32")
    assert.is_true(bw.lab[32] > 0.9 * bw.lab[16], "lab 16 -> 32")
  end)

  it("refuses UB plans the shipping kernels cannot hold", function()
    local ok, err = pcall(run, COMBINE, { soc = "Ascend910_93", pes = 128, local_tokens = 1,
                                          hidden = 7168, topk = 8, experts = 256,
                                          dtype = "bf16", timing_only = true })
    assert.is_false(ok)
    assert.matches("shipping combine kernel needs %d+ UB bytes per block at 128 PEs",
                   tostring(err))
    ok, err = pcall(run, DISPATCH, { soc = "Ascend910_93", pes = 128, local_tokens = 1,
                                     hidden = 7168, topk = 8, experts = 256, dtype = "bf16",
                                     timing_only = true })
    assert.is_false(ok)
    assert.matches("shipping notify kernel needs %d+ UB bytes per block at 128 PEs", tostring(err))
  end)

  -- shmem_notify_dispatch.h's block blocks / 2: after ReloadRecvData's pipe reset
  -- the n x E int32 counts, BuildMaxBs's five E rows, BuildBalanceMatrix's n x 2n
  -- int32 matrix (the port charged 8 E + 1024 bytes for the rows: 265216 at EP128)
  -- the dispatch's data kernel alone (the EP128 case of bench/scale.lua): its rows land
  -- exactly with put_offset from the host, and it is the dispatch's second launch
  it("runs the dispatch's data kernel alone, exact, one launch", function()
    local r = run("ops/deepep/dispatch_data.lua", { pes = 8, routing = "zipf", local_tokens = 19,
                                                    hidden = 64, topk = 3, experts = 16,
                                                    dtype = "bf16" })
    assert_exact(r, "dispatch_data")
    assert.are.equal(1, r.shmem.iter_launches)
  end)

  it("judges the notify's UB as the source's BuildMaxBs block holds it", function()
    assert.are.same({ 267264, 131072, 5120, 131072 }, { deepep.notify_ub_bytes(128, 256) })
    assert.are.same({ 103424, 65536, 5120, 32768 }, { deepep.notify_ub_bytes(64, 256) })
    assert.are.equal(199168, (deepep.notify_ub_bytes(128, 128)))   -- E >= n: no E fits at 128
    local ok, err = pcall(run, DISPATCH, { soc = "Ascend910_93", pes = 128, local_tokens = 1,
                                           hidden = 7168, topk = 8, experts = 128, dtype = "bf16",
                                           timing_only = true })
    assert.is_false(ok)
    assert.matches("notify kernel needs 199168 UB bytes", tostring(err))
    assert.matches("balance matrix 131072", tostring(err))
  end)
end)
