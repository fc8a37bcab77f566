-- A scalar access of a block's own UB runs ahead (doc/scale.md, "Events a
-- block never needed"): get_value / set_value do not catch up with other
-- blocks' wake-ups while the block has no V, MTE2 or MTE3 work pending, so a
-- kernel of scalar loops (DeepEP's get_dispatch_layout) makes few wake-ups;
-- with work pending they catch up and read what has landed. Virtual times and
-- data are those of run_ahead = false.

local H = require("spec.helpers.engine")
local lab = H.lab

-- blocks of scalar loops of unequal length on their own UB (a histogram of a
-- GM table, as the layout kernel counts rows per expert): times, the sums
-- each block wrote back, events and wake-ups of the launch
local function histogram(run_ahead)
  local m = lab.machine{ pes = 2, run_ahead = run_ahead }
  local n, bins, blocks = 96, 8, 4
  local ids = m:alloc("int32", blocks * n, "ids", "backed"):fill("random", 0, bins - 1, 3)
  local out = m:alloc("int32", blocks * bins, "out", "backed"):fill("zero")
  local e0, w0 = m:events(), m:event_kinds().wake
  local r = m:launch(function(k)
    local len = n - 16 * k.block                       -- unequal: the clocks interleave
    local t, h = k:ub("int32", n, "backed"), k:ub("int32", bins, "backed")
    k:data_copy_pad(t, ids:sub(k.block * n, len), len)
    H.sync(k, "MTE2_S")
    for b = 0, bins - 1 do k:set_value(h, b, 0) end
    for i = 0, len - 1 do
      local b = k:get_value(t, i)
      k:set_value(h, b, k:get_value(h, b) + 1)
    end
    H.sync(k, "S_MTE3")
    k:data_copy_pad(out:sub(k.block * bins, bins), h, bins)
  end, 4)
  return { now = m:now(), kernel_us = r.kernel_us, out = { out:on(0):checksum(), out:on(1):checksum() },
           events = m:events() - e0, wake = m:event_kinds().wake - w0 }
end

-- block 0 copies a GM row into UB and, without waiting for it, reads it by
-- scalar after a scalar loop long enough for it to land (a race the kernel
-- takes on purpose); block 1 runs scalar loops alone. The read catches up:
-- the copy is pending when it is issued
local function pending(run_ahead)
  local m = lab.machine{ pes = 1, run_ahead = run_ahead }
  local src = m:alloc("int32", 64, "src", "backed"):fill("random", 1, 1000, 5)
  local seen = {}
  local r = m:launch(function(k)
    local u, s = k:ub("int32", 64, "backed"), k:ub("int32", 4, "backed")
    if k.block == 0 then k:data_copy_pad(u, src, 64) end
    for i = 0, 199 do k:set_value(s, i % 4, i) end
    seen[k.block] = { k:get_value(u, 63), k:get_value(s, 3) }
  end, 2)
  return { now = m:now(), kernel_us = r.kernel_us, seen = seen }
end

describe("a scalar access of the block's UB runs ahead", function()
  it("scalar loops: the same times and data, a tenth of the wake-ups", function()
    local on, off = histogram(true), histogram(false)
    assert.are.equal(off.now, on.now)
    assert.are.same(off.kernel_us, on.kernel_us)
    assert.are.same(off.out, on.out)
    print(string.format("scalar histogram, 2 PEs x 4 blocks: events %d -> %d, wake-ups %d -> %d",
                        off.events, on.events, off.wake, on.wake))
    assert.is_true(on.wake * 10 < off.wake)
    assert.is_true(on.events * 2 < off.events)
  end)

  it("with a copy into its UB pending it catches up and reads what landed", function()
    local on, off = pending(true), pending(false)
    assert.are.equal(off.now, on.now)
    assert.are.same(off.kernel_us, on.kernel_us)
    assert.are.same(off.seen, on.seen)
    assert.are_not.equal(0, on.seen[0][1])          -- the copy landed before the read
  end)
end)
