-- The dispatch sgl-kernel-npu main ships on Ascend910_93 (ops/deepep/dispatch_hccl.lua:
-- notify_dispatch.h over the HCCL window, then cam_moe_dispatch_normal.h): its
-- tables equal the host layout's on 2-8 PEs, every row lands in the host's
-- receive layout with its (rank, token, k) triple; its UB plans at EP128 x 256
-- experts (the goal's case) fit where the SHMEM notify's does not; the magic and
-- the data state move on each launch; a block on the wrong status half is a
-- deadlock report; exact virtual times of one small case, and of the hybrid
-- (ops/deepep/dispatch_hybrid.lua: the same notify, the SHMEM data kernel);
-- --tool all names the source's three unordered pairs and its unwritten pad.

local runner = require("shmemlab.runner")
local moe = require("shmemlab.moe")
local deepep = require("shmemlab.deepep")

local HCCL = "ops/deepep/dispatch_hccl.lua"

local function run(opts, path)
  opts.warmup, opts.iters, opts.baseline = opts.warmup or 0, opts.iters or 1, "none"
  return runner.run(path or HCCL, opts)
end

-- each launch's span on PE 0 and the latency, "notify data latency"
local function spans(r)
  local t = r.shmem.machine:tasks(0)
  local notify, data = t[#t - 1], t[#t]
  assert.are.equal("notify_dispatch", notify.name)
  assert.is_true(data.start_us >= notify.stop_us)
  return string.format("%.3f %.3f %.3f", notify.stop_us - notify.start_us,
                       data.stop_us - data.start_us, r.metrics.summary.latency_us), data.name
end

local function assert_exact(r, what)
  require("spec.helpers.ops").assert_landed(r, what)
  assert.is_nil(r.frames.error, what .. ": frame report: " .. tostring(r.frames.error))
end

describe("DeepEP dispatch as main ships it (ops/deepep/dispatch_hccl.lua)", function()
  it("host tables: put_offset is expert_global_offset + srcrank_in_expert_offset", function()
    local R = moe.routes(moe.config({ pes = 4, local_tokens = 23, topk = 3, experts = 16,
                                      routing = "zipf" }))
    local L = deepep.layout(R)
    local T = deepep.hccl_notify_tables(L, R)
    local n, le = 4, 4
    for e = 0, 15 do
      local d, l = e // le, e % le
      for src = 0, n - 1 do
        assert.are.equal(L.put_offset[e * n + src + 1], T[d].expert_global_offset[l + 1]
                         + T[d].srcrank_in_expert_offset[l * n + src + 1])
      end
    end
    for d = 0, n - 1 do assert.are.equal(R.recv[d], T[d].total) end
  end)

  for _, case in ipairs({ { 2, "uniform", 4 }, { 4, "zipf", 8 }, { 8, "lognormal", 24 } }) do
    local pes, routing, E = case[1], case[2], case[3]
    it(string.format("notify tables and rows exact on %d PEs (%s, %d experts)", pes, routing, E),
       function()
      local r = run({ pes = pes, routing = routing, local_tokens = 13, hidden = 32, topk = 3,
                      experts = E, dtype = "bf16" })
      assert_exact(r, "dispatch_hccl")
      assert.are.equal(2, r.shmem.launches)
    end)
  end

  it("rows, tables and triples exact on 4 PEs with the hybrid (the SHMEM data kernel)", function()
    local r = run({ pes = 4, routing = "zipf", local_tokens = 13, hidden = 32, topk = 3,
                    experts = 8, dtype = "bf16" }, "ops/deepep/dispatch_hybrid.lua")
    assert_exact(r, "dispatch_hybrid")
  end)

  it("a wrong expand_idx triple is caught at its row and PE", function()
    local r = run({ pes = 2, local_tokens = 9, hidden = 32, topk = 2, experts = 4 })
    local res, s = r.shmem, r.shmem.state
    s.expand_idx:on(1):sub(7, 1):fill({ 5 })                  -- row 2's k
    local wrong, at, pe = res.op.check(res.machine, r.config, s)
    assert.are.same({ 1, 7, 1 }, { wrong, at, pe })
  end)

  it("a block on the other status half (its data state flipped) is a deadlock report", function()
    local r = run({ pes = 2, local_tokens = 16, hidden = 256, topk = 2, experts = 4 })
    local res, s = r.shmem, r.shmem.state
    assert.are.equal(1, s.cword:on(1):read(0))                 -- after one launch: half 1 next
    s.cword:on(1):sub(0, 1):fill({ 0 })                        -- PE 1 block 0 would use half 0
    local ok, err = pcall(res.op.run, res.machine, r.config, s)
    assert.is_false(ok)
    assert.matches("deadlock", tostring(err))
    assert.matches("PE 1 block 0 %(at [%d.]+ us%): wait_signal_value%(hccl_window_status%[", tostring(err))
  end)

  it("outputs start as -1 (at::empty): a table the kernel leaves unwritten is caught", function()
    local r = run({ pes = 2, local_tokens = 9, hidden = 32, topk = 2, experts = 4 })
    local res, s = r.shmem, r.shmem.state
    assert.are.equal(0, r.shmem.check.wrong)
    s.r_in_srcrank_offset:on(1):fill("const", -1)          -- as if block 7 had not run
    local wrong, at, pe = res.op.check(res.machine, r.config, s)
    assert.are.same({ 4, 0, 1 }, { wrong, at, pe })
  end)

  it("a wrong notify table is caught", function()
    local r = run({ pes = 4, local_tokens = 9, hidden = 32, topk = 2, experts = 8 })
    local res, s = r.shmem, r.shmem.state
    s.srcrank_in_expert_offset:on(2):sub(5, 1):fill({ 99 })
    local wrong, at, pe = res.op.check(res.machine, r.config, s)
    assert.are.same({ 1, 5, 2 }, { wrong, at, pe })
  end)

  it("UB plan at EP128 x 256 experts: the ping-pong halves, 194688 of 196608 bytes", function()
    local ub, what, phases = deepep.hccl_notify_ub_bytes(128, 256, 1)
    assert.are.equal(194688, ub)
    assert.matches("ping%-pong", what)
    local by = {}
    for _, ph in ipairs(phases) do by[ph[1]] = ph[2] end
    assert.are.equal(4096 + 1024 + 1024 + 1024 + 32, by.BuildRInSrcrankOffset)
    assert.are.equal(1024 + 3072 + 1024 + 32, by.AssembleSendData)
    assert.is_true(ub <= require("shmemlab.socs.Ascend910_93").ub_bytes)
    -- DEEPEP_NORMAL_LONG_SEQ_ROUND > 1: batchRounds 32 at 256 experts, still in the UB
    assert.are.equal(32, deepep.hccl_batch_rounds(2, 256, 2))
    local _, _, long = deepep.hccl_notify_ub_bytes(128, 256, 2)
    assert.are.equal(98304 + 32768 + 1024 + 32768 + 32, long[#long][2])
    assert.is_true(deepep.notify_ub_bytes(128, 256) > 196608)   -- the SHMEM notify's does not
  end)

  it("the data kernel's UB plan at EP128 x 4096 x 7168 bf16: InputToShare, 35328 bytes", function()
    local ub, what, share, out = deepep.cam_dispatch_ub_bytes(128, 256, 4096 * 8, 48, 7168, 2)
    -- xQueue 2 x align32(14336 + 32 + 12); E send offsets; 683 expert ids, 683 indices
    assert.are.same({ 35328, "InputToShare", 35328 }, { ub, what, share })
    assert.are.equal(2 * 14400 + 1024 + 2 * 2752, share)
    assert.are.equal(256 + 1024 + 96 + 2 * 14400 + 2 * 1024 + 32 + 2 * 1024, out)
  end)

  it("each launch takes the next magic and data state: the halves and flags move on", function()
    local r = run({ pes = 4, local_tokens = 16, hidden = 256, topk = 2, experts = 8,
                    warmup = 1, iters = 2 })
    assert_exact(r, "three launches")
    for pe = 0, 3 do
      assert.are.equal(4, r.shmem.state.hstate:on(pe):read(47 * 8))
      assert.are.equal(1, r.shmem.state.cword:on(pe):read(47 * 8))   -- 0, 1, 0: then 1
    end
  end)

  it("exact virtual times of one small case (Ascend910_93, 4 PEs)", function()
    local r = run({ soc = "Ascend910_93", pes = 4, local_tokens = 16, hidden = 256, topk = 2,
                    experts = 8, dtype = "bf16" })
    assert_exact(r, "dispatch_hccl")
    local got, name = spans(r)
    assert.are.same({ "16.289 13.376 30.470", "cam_moe_dispatch_normal" }, { got, name })
    r = run({ soc = "Ascend910_93", pes = 4, local_tokens = 16, hidden = 256, topk = 2,
              experts = 8, dtype = "bf16" }, "ops/deepep/dispatch_hybrid.lua")
    got, name = spans(r)
    assert.are.same({ "16.289 12.122 28.412", "shmem_moe_dispatch_normal" }, { got, name })
  end)

  it("--tool all names the source's unordered pairs and the scale bytes it sends unwritten",
     function()
    local r = run({ soc = "Ascend910_93", pes = 2, local_tokens = 16, hidden = 256,
                    dtype = "bf16", check = "all" })
    assert_exact(r, "dispatch_hccl under --tool all")
    local text = r.shmem.sanitizer.text
    assert.matches("4 distinct", text)
    -- InputToShare sends hScaleIdxSize bytes: the row (512), the scale's 32 (written only
    -- by DynamicQuant) and the triple (12)
    assert.matches("read of 556 bytes.-first uninitialised byte at %+512", text)
    assert.matches("write of 24 bytes unordered with an earlier write", text)   -- V, then MTE2
    assert.matches("read of 4 bytes unordered with an earlier write", text)     -- S, then MTE3
  end)

  it("refuses what the host refuses: more than one round's 8192 tokens", function()
    local ok, err = pcall(run, { pes = 2, local_tokens = 8193, hidden = 32, topk = 1,
                                 timing_only = true })
    assert.is_false(ok)
    assert.matches("per_round_tokens 8192", tostring(err))
    ok, err = pcall(run, { pes = 2, local_tokens = 8, hidden = 32, topk = 1,
                           dispatch_dtype = "int8" })
    assert.is_false(ok)
    assert.matches("DynamicQuant path is not ported", tostring(err))
  end)
end)
