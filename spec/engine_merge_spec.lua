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

-- the row loop of DeepEP's cam_moe_dispatch_normal port (spec/engine_row_ahead_spec.lua):
-- times, checksums, events and EV_PIPEs of the launch
local function rows(run_ahead)
  local m = lab.machine{ pes = 2, run_ahead = run_ahead }
  local n, h, blocks = 24, 64, 4
  local x = m:alloc("int32", blocks * n * h, "x", "backed"):fill("random", 1, 1000, 7)
  local slot = m:alloc("int32", blocks * n, "slot", "backed"):fill("iota")
  local out = m:alloc("int32", blocks * n * (h + 8), "out", "backed"):fill("zero")
  local e0, p0 = m:events(), m:event_kinds().pipe
  local r = m:launch(function(k)
    local cnt, R = n - 4 * k.block, h + 8
    local q, idx = k:ub("int32", 2 * R), k:ub("int32", n, "backed")
    k:data_copy_pad(idx, slot:sub(k.block * n, n), n)
    H.sync(k, "MTE2_S")
    for j = 0, cnt - 1 do
      local b, s = j % 2, k:get_value(idx, j)
      local row = q:sub(b * R, R)
      if j >= 2 then k:wait_flag("MTE3_MTE2", b) end
      k:data_copy_pad(row, x:sub((k.block * n + j) * h, h), h)
      k:set_flag("MTE2_MTE3", b); k:wait_flag("MTE2_MTE3", b)
      H.sync(k, "MTE3_S")
      k:set_value(row, h, k.pe); k:set_value(row, h + 1, s)
      H.sync(k, "S_MTE3")
      k:data_copy_pad(out:sub(s * R, R), row, R)
      k:set_flag("MTE3_MTE2", b)
    end
    for b = 0, math.min(cnt, 2) - 1 do k:wait_flag("MTE3_MTE2", (cnt - 1 - b) % 2) end
  end, blocks)
  return { now = m:now(), kernel_us = r.kernel_us, out = { out:on(0):checksum(), out:on(1):checksum() },
           events = m:events() - e0, pipe = m:event_kinds().pipe - p0 }
end

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
end)
