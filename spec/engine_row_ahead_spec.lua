-- A block runs ahead through a double-buffered row loop (doc/scale.md, "Events
-- a block never needed"): a scalar access of UB bytes none of its pending
-- copies or vector ops touches runs ahead while other work is pending, and a
-- wait_flag of S runs ahead too (parked ahead, it resumes as a caught-up wait
-- would). The row loop of DeepEP's cam_moe_dispatch_normal port: the row's
-- slot by scalar reads of index tables, GM -> UB, MTE3_S, a triple by
-- set_value into the row, S_MTE3, UB -> GM. Virtual times and data are those
-- of run_ahead = false.

local H = require("spec.helpers.engine")
local lab = H.lab

-- the row loop (spec/helpers/engine.lua): times, checksums, events, wake-ups
local rows = H.dispatch_rows

-- block 0 copies u[0, 32) to GM and, without waiting for it, runs a scalar
-- loop on u[32, 64) long enough for the copy to land, then writes u[0] and
-- reads u[40]; block 1 runs scalar loops alone (the other blocks' wake-ups
-- block 0 runs ahead of). The loop runs ahead (no pending copy touches its
-- bytes); the write catches up (the pending copy reads u[0]: caught up, the
-- copy lands the old value first)
local function overlap(run_ahead)
  local m = lab.machine{ pes = 1, run_ahead = run_ahead }
  local out = m:alloc("int32", 32, "out", "backed"):fill("zero")
  local seen = {}
  local r = m:launch(function(k)
    local u = k:ub("int32", 64, "backed")
    if k.block == 0 then
      for i = 0, 63 do k:set_value(u, i, i + 1) end
      H.sync(k, "S_MTE3")
      k:data_copy_pad(out, u, 32)
    end
    for i = 0, 199 do k:set_value(u, 32 + i % 16, i) end
    if k.block == 0 then k:set_value(u, 0, -1) end
    seen[k.block] = { k:get_value(u, 40), k:get_value(u, 0) }
  end, 2)
  return { now = m:now(), kernel_us = r.kernel_us, seen = seen, out = out:on(0):checksum(),
           first = out:on(0):read(0) }
end

describe("a block runs ahead through a double-buffered row loop", function()
  it("the same times and data, an eighth of the wake-ups", function()
    local on, off = rows(true), rows(false)
    assert.are.equal(off.now, on.now)
    assert.are.same(off.kernel_us, on.kernel_us)
    assert.are.same(off.out, on.out)
    print(string.format("row loop, 2 PEs x 4 blocks: events %d -> %d, wake-ups %d -> %d",
                        off.events, on.events, off.wake, on.wake))
    assert.is_true(on.wake * 8 < off.wake)
  end)

  it("a scalar access of bytes a pending copy reads catches up", function()
    local on, off = overlap(true), overlap(false)
    assert.are.equal(off.now, on.now)
    assert.are.same(off.kernel_us, on.kernel_us)
    assert.are.same(off.seen, on.seen)
    assert.are.equal(off.out, on.out)
    assert.are.equal(1, on.first)                    -- the copy landed u[0] before the write
  end)
end)
