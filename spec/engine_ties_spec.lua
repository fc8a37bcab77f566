-- The event queue's order and the run-ahead (doc/scale.md, "Events a block
-- never needed"): keys of equal time run in the order (time, block, the
-- block's count of keys), whatever order they were made in; a block runs ahead
-- of other blocks' wake-ups through primitives that only queue to its own
-- pipes, with the same virtual times and data as without (run_ahead = false)
-- and fewer wake-ups; a run repeated gives the same figures.

local H = require("spec.helpers.engine")
local lab = H.lab
local runner = require("shmemlab.runner")

-- the timing-only allgather (ops/allgather.lua) of 64 KiB per PE at 4 PEs x 8
-- blocks: virtual times and events by kind of one launch
local function allgather(run_ahead)
  local op = runner.load_op("allgather")
  local c = runner.config(op, { pes = 4, block_dim = 8, timing_only = true, count = 16384,
                                warmup = 0, iters = 1, baseline = "none" })
  local m = lab.machine{ profile = c.profile, pes = c.pes, prof_pe = -1, data = false,
                         run_ahead = run_ahead }
  local s = op.setup(m, c)
  local e0, k0 = m:events(), m:event_kinds()
  local r = op.run(m, c, s)
  local k1 = m:event_kinds()
  local kinds = {}
  for name, n in pairs(k1) do kinds[name] = n - k0[name] end
  return { now = m:now(), events = m:events() - e0, kinds = kinds, r = r }
end

-- the determinism spec's shape in data mode: puts, signals, flags, a vector
-- op, atomics and a barrier; times, events and checksums
local function mixed(run_ahead)
  local m = lab.machine{ pes = 4, run_ahead = run_ahead }
  local n = 2048
  local input = m:alloc("fp32", n, "input"):fill("random", -50, 50, 7)
  local ring = m:malloc("fp32", 4 * n, "ring")
  local sig = m:malloc("int64", 1, "sig")
  local scaled = m:alloc("fp32", n, "scaled")
  local r = m:launch(function(k)
    local per = n // k.block_num
    local u = k:ub("fp32", 512)
    local win = input:sub(k.block * per, per)
    k:mte_put_nbi(ring:sub(k.pe * n + k.block * per, per), win, u, 1024, per,
                  (k.pe + 1) % k.n_pes, k.block)
    k:quiet()
    k:signal_op(sig, 1, lab.SIGNAL_ADD, (k.pe + 1) % k.n_pes)
    k:signal_wait_until(sig, lab.CMP_GE, k.block_num)
    local x, y = k:ub("fp32", per), k:ub("fp32", per)
    k:data_copy_pad(x, win, per)
    H.sync(k, "MTE2_V")
    k:muls(y, x, 0.5 + k.pe, per)
    H.sync(k, "V_MTE3")
    k:data_copy_pad(scaled:sub(k.block * per, per), y, per)
    k:barrier_all()
  end, 4)
  return { now = m:now(), kernel_us = r.kernel_us, wake = m:event_kinds().wake,
           ring = ring:checksum(), scaled = scaled:checksum() }
end

-- a ring of signals (timing-only, 2 PEs x 8 blocks): each block takes its UB,
-- then four times signals the next PE and puts 4 KiB there, then waits for its
-- own four signals; times and wake-ups
local function ring(run_ahead)
  local m = lab.machine{ pes = 2, data = false, run_ahead = run_ahead }
  local sig = m:malloc("int64", 8, "sig", "backed")
  local dst = m:malloc("fp32", 8 * 4096, "dst")
  local src = m:malloc("fp32", 8 * 1024, "src")
  local w0 = m:event_kinds().wake
  local r = m:launch(function(k)
    local u = k:ub("fp32", 1024)
    local peer = (k.pe + 1) % k.n_pes
    for i = 0, 3 do
      k:signal_op(sig:sub(k.block, 1), 1, lab.SIGNAL_ADD, peer)
      k:mte_put_nbi(dst:sub(k.block * 4096 + i * 1024, 1024), src:sub(k.block * 1024, 1024),
                    u, 1024, 1024, peer, 0)
    end
    k:signal_wait_until(sig:sub(k.block, 1), lab.CMP_GE, 4)
  end, 8)
  return { now = m:now(), kernel_us = r.kernel_us, wake = m:event_kinds().wake - w0 }
end

describe("engine ties and run-ahead", function()
  it("wake-ups of equal time resume in block order, not in the order they were made", function()
    -- block 0 runs a cost A then B, block 1 B then A (A > B; A: a pipe_barrier with
    -- empty pipes, B: a set_value): block 1 reaches A + B first, block 0 after it,
    -- both yield there, and block 0 resumes first
    local m = lab.machine{ pes = 1 }
    local p = m:state().profile
    assert.is_true(p.pipe_barrier_ns > p.scalar_ns)
    local order, at = {}, {}
    m:launch(function(k)
      local u = k:ub("int32", 8, "backed")
      if k.block == 0 then k:pipe_barrier(); k:set_value(u, 0, 1)
      else k:set_value(u, 0, 1); k:pipe_barrier() end
      order[#order + 1] = k.block
      at[k.block] = k:system_cycle()
    end, 2)
    assert.are.equal(at[0], at[1])                   -- the same virtual time
    assert.are.same({ 0, 1 }, order)
  end)

  it("the allgather runs ahead: the same times, fewer wake-ups and events", function()
    local on, off = allgather(true), allgather(false)
    assert.are.equal(off.now, on.now)
    assert.are.same(off.r, on.r)
    for _, kind in ipairs({ "copy", "signal", "flow" }) do
      assert.are.equal(off.kinds[kind], on.kinds[kind])
    end
    print(string.format("allgather 64 KiB/PE, 4 PEs x 8 blocks: events %d -> %d, wake-ups %d -> "
                        .. "%d, pipe events %d -> %d", off.events, on.events, off.kinds.wake,
                        on.kinds.wake, off.kinds.pipe, on.kinds.pipe))
    assert.is_true(on.kinds.wake * 3 < off.kinds.wake * 2)
    assert.is_true(on.events < off.events)
  end)

  it("a data-mode launch gives the same times and bytes with and without run-ahead", function()
    local on, off = mixed(true), mixed(false)
    assert.are.equal(off.now, on.now)
    assert.are.same(off.kernel_us, on.kernel_us)
    assert.are.equal(off.ring, on.ring)
    assert.are.equal(off.scaled, on.scaled)
    assert.is_true(on.wake <= off.wake)
  end)

  it("a block runs ahead through k:ub and signal_op: the same times, fewer wake-ups", function()
    -- both only make keys of the block's own (a signal's landing) at its clock, so
    -- neither yields to another block due before it; the signal wait catches up
    local on, off = ring(true), ring(false)
    assert.are.equal(off.now, on.now)
    assert.are.same(off.kernel_us, on.kernel_us)
    print(string.format("signal ring, 2 PEs x 8 blocks: wake-ups %d -> %d", off.wake, on.wake))
    assert.are.equal(48, on.wake)               -- 16 starts, 16 catch-ups, 16 waits
  end)

  it("a run repeated gives the same times and events", function()
    local a, b = allgather(true), allgather(true)
    assert.are.equal(a.now, b.now)
    assert.are.equal(a.events, b.events)
    assert.are.same(a.kinds, b.kinds)
  end)

  it("run_ahead must be a boolean", function()
    assert.has_error(function() lab.machine{ pes = 1, run_ahead = 1 } end,
                     "bad argument #1 to 'machine' (run_ahead must be a boolean, got number)")
  end)
end)
