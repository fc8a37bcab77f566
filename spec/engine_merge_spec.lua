-- A block running ahead queues a wait_flag alone on an MTE pipe, its flag
-- already set, then a transfer behind it: the wait's EV_PIPE (K1) would pop
-- the wait and schedule the transfer's start at its issue (K2). The two are
-- one key (core/pipe.c merge): K1 is not made, the merged key starts the
-- transfer where K2 would, with K2's count taken where K1 would have been
-- handled; a key of the block at the start time between K1's tie and K2's
-- sends the merged key to K2's tie. Virtual times and data are those of
-- run_ahead = false (no block runs ahead: no EV_PIPE at all).

local H = require("spec.helpers.engine")
local lab = H.lab
local runner = require("shmemlab.runner")

-- the row loop of DeepEP's cam_moe_dispatch_normal port (spec/helpers/engine.lua):
-- times, checksums, events and EV_PIPEs of the launch
local rows = H.dispatch_rows

-- each of three blocks: a vector op of n elements (its landing a key of the
-- block made when V starts it), a scalar writes, S_MTE3, a copy UB -> GM. At
-- some n the vector op lands at the copy's start, a key of the block made
-- between the wait's EV_PIPE and the start's: the merged key goes behind it
local function vec_then_copy(run_ahead, n, a)
  local m = lab.machine{ pes = 1, run_ahead = run_ahead }
  local out = m:alloc("int32", 3 * 64, "out", "backed"):fill("zero")
  local e0, p0 = m:events(), m:event_kinds().pipe
  local r = m:launch(function(k)
    local u, row = k:ub("int32", 4096, "backed"), k:ub("int32", 64, "backed")
    k:duplicate(u, 0, n)
    for i = 1, a do k:set_value(row, i % 8, i) end
    H.sync(k, "S_MTE3")
    k:data_copy_pad(out:sub(k.block * 64, 64), row, 64)
  end, 3)
  return { now = m:now(), kernel_us = r.kernel_us, out = out:on(0):checksum(),
           events = m:events() - e0, pipe = m:event_kinds().pipe - p0 }
end

-- DeepEP's dispatch as main ships it, timing-only, as bench/scale.lua --one runs it,
-- under a settle window of settle_ns: the virtual time (%.6f us) and the EV_PIPEs
local function deepep_windowed(tokens, settle_ns)
  local op, c, m = runner.one_launch("deepep/dispatch_hccl",
                                     { soc = "Ascend910_93", pes = 16, timing_only = true,
                                       local_tokens = tokens, hidden = 7168, topk = 8,
                                       experts = 256, settle_ns = settle_ns })
  local s = op.setup(m, c)
  local p0 = m:event_kinds().pipe
  op.run(m, c, s)
  return string.format("%.6f", m:now()), m:event_kinds().pipe - p0
end

describe("a wait_flag's EV_PIPE merged into its transfer's start", function()
  it("the row loop: the same times and data, 272 EV_PIPEs fewer", function()
    local on, off = rows(true), rows(false)
    assert.are.equal(off.now, on.now)
    assert.are.same(off.kernel_us, on.kernel_us)
    assert.are.same(off.out, on.out)
    -- 1018 EV_PIPEs (1529 events) before the merge: one a row and MTE pipe less
    assert.are.equal(746, on.pipe)
    assert.are.equal(1257, on.events)
  end)

  it("a landing of the block at the start between the two ties: the same times", function()
    for _, a in ipairs{ 0, 1 } do
      for n = 1096, 1784, 8 do
        local on, off = vec_then_copy(true, n, a), vec_then_copy(false, n, a)
        assert.are.equal(off.now, on.now)
        assert.are.same(off.kernel_us, on.kernel_us)
        assert.are.equal(off.out, on.out)
      end
    end
    -- the vector op's landing at the copy's start: two merged keys go to K2's
    -- tie (4 EV_PIPEs, 14 events before the merge, when K2 rode on that landing)
    local at = vec_then_copy(true, 1152, 0)
    assert.are.equal(6, at.pipe)
    assert.are.equal(16, at.events)
    assert.are.equal(4, vec_then_copy(true, 1160, 0).pipe)   -- no coincidence: merged
  end)

  -- a window is settled when a step looks at a key past its end (core/flow.c
  -- sli_flow_settle_due); a block catching up (sim.c must_yield) looks at the next
  -- key and then runs on at its clock, before that key. The merged key is at the
  -- transfer's start, where K1 was at the wait's issue: with K1 gone the key looked
  -- at can lie past the window's end where K1 did not, and the window settles
  -- before the block's flow starts inside it (EP16 x 64 at 10 ns: a flow of
  -- 196.509816 us opened after the settle at 196.514537 us; unmerged, the K1s at
  -- 196.511584 us stopped the block's look before the window's end). So the merge
  -- is made in exact runs alone: a windowed run takes the unmerged steps
  it("a settle window: DeepEP EP16's times are those of the unmerged steps", function()
    -- the unmerged steps' times and EV_PIPEs (the launches'; merged under the
    -- window: 264.399445 us and 53,663, 465.869346 us and 108,210)
    local now, pipe = deepep_windowed(64, 10)
    assert.are.equal("264.403615", now)
    assert.are.equal(68966, pipe)
    now, pipe = deepep_windowed(256, 1000)
    assert.are.equal("465.527788", now)
    assert.are.equal(172035, pipe)
  end)
end)
