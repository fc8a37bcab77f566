-- Hardening of the flow / pipe-queue timing core (core/flow.c, core/pipe.c):
-- each case is a defect a review or the fuzz found; the comment above it says
-- how it went wrong. Expected figures come from the profile, not from pasted
-- engine output.
--
-- The invariant most of them guard: a block's code never runs while an event
-- its clock has passed is still pending (README, "The timing model"), or a
-- transfer starts "in the future" and a later, earlier event settles the
-- shared rates back in time.

local H = require("spec.helpers.engine")
local lab = H.lab

-- streaming time in us of bytes on a pipe alone (no resource binds)
local function stream_us(p, pipe, bytes)
  local bpc = pipe == "MTE2" and p.mte2_bytes_per_cycle or p.mte3_bytes_per_cycle
  return bytes / (bpc * p.core_ghz * 1000)
end

describe("engine hardening: clocks and pending events", function()
  -- core/pipe.c sli_landed woke a block parked on a full queue at the landing
  -- time t, earlier than its own clock; sl_step then resumed it at t with
  -- events before its clock still pending, and get_value read a UB whose copy
  -- had landed (by the block's clock) but was not applied yet.
  it("a block woken from a full queue resumes at its own clock: get_value sees the landed copy",
     function()
    -- one queue slot; a 5 us issue cost so the first copy lands inside the
    -- second copy's issue
    local m = lab.machine{ pes = 1, queue_depth = 1, issue_ns = 5000, mte_setup_ns = 1000,
                           local_alpha_ns = 500, mte2_bytes_per_cycle = 1 }
    local p = m:params()
    local g = m:alloc("int32", 1848):fill("const", 7)
    local got
    m:launch(function(k)
      local u1, u2 = k:ub("int32", 1848), k:ub("int32", 8)
      k:data_copy(u1, g, 1848)   -- lands inside the next issue
      k:data_copy(u2, g, 8)      -- a second instruction: S parks until the first lands
      got = k:get_value(u2, 0)
    end, 1)
    -- the premise: the first copy lands after the second was issued and before
    -- S has paid its issue, and the second one lands before S reads
    local t_issue2 = 3 * p.issue_ns / 1000    -- two k:ub, one data_copy
    local land1 = 2 * p.issue_ns / 1000 + stream_us(p, "MTE2", 1848 * 4)
                  + (p.mte_setup_ns + p.local_alpha_ns) / 1000
    local land2 = t_issue2 + stream_us(p, "MTE2", 32) + (p.mte_setup_ns + p.local_alpha_ns) / 1000
    assert.is_true(land1 > t_issue2 and land1 < land2)
    assert.is_true(land2 < t_issue2 + p.issue_ns / 1000)
    assert.equals(7, got)
  end)

  -- core/lshmemlab_kernel.c kdone raised a failed primitive's error at once; the
  -- call had paid its issue cost, so a kernel that caught the error ran on
  -- ahead of events its clock had passed (200 failed wait_flags = 2 us while
  -- the copy landed after 0.5 us: get_value read 0).
  it("a failed primitive caught by the kernel does not let the block run ahead of pending events",
     function()
    local m = lab.machine{ pes = 1 }
    local p = m:params()
    local g = m:alloc("int32", 8):fill("const", 7)
    local got, err
    m:launch(function(k)
      local u = k:ub("int32", 8)
      k:data_copy(u, g, 8)
      for _ = 1, 200 do
        local ok
        ok, err = pcall(k.wait_flag, k, "MTE2_S", 0)   -- no set_flag: an error, after its issue
        assert(not ok)
      end
      got = k:get_value(u, 0)
    end, 1)
    -- the premise: the failed calls took the clock past the landing
    assert.is_true(200 * p.issue_ns > p.mte_setup_ns + p.local_alpha_ns + 1000)
    H.contains(err, "wait_flag(MTE2_S, 0) on PE 0 block 0 without a matching set_flag")
    assert.equals(7, got)
  end)

  -- the error of a failed call that had to yield first (kdone's kraise) is
  -- the one it raises at once: same text, same argument position
  it("a failed primitive raises the same error whether or not it yielded first", function()
    local m = lab.machine{ pes = 2 }
    local d = m:malloc("int32", 64):fill("zero")
    local f = m:malloc("fp32", 8)
    local function fault(block_dim)
      local errs = {}
      m:launch(function(k)
        if k.block == 1 then
          for _ = 1, 50 do k:set_atomic_none() end     -- a block due at every issue
          return
        end
        local ok, e = pcall(k.put_signal, k, d, d, 8, f, 1, lab.SIGNAL_SET, 1 - k.pe)
        assert(not ok)
        errs[k.pe] = e
        k:quiet()
      end, block_dim)
      return errs[0]
    end
    local alone, shared = fault(1), fault(2)
    H.contains(alone, "signal must be an integer element, got fp32")
    assert.equals(alone, shared)
  end)

  -- core/lshmemlab_kernel.c staged_body / k_put_signal: the first putmem, getmem
  -- or put_signal of a block carves its scratch UB (an issue on S) and then
  -- started its transfer at the later clock without yielding; another block
  -- still at the earlier clock then started a flow, the rates were settled
  -- back in time, and a third block's copy through the same HBM ended early
  -- (0.11 us for 1.11 us of bytes).
  it("the first putmem's scratch UB does not start its transfer ahead of other blocks", function()
    local m = lab.machine{ pes = 2, issue_ns = 1000 }
    local p = m:params()
    local g = m:alloc("int32", 16384):fill("const", 7)
    local s = m:malloc("int32", 64):fill("zero")
    m:trace(100)
    m:launch(function(k)
      if k.pe ~= 0 then return end
      if k.block == 0 then k:data_copy(k:ub("int32", 16384), g, 16384)
      elseif k.block == 1 then k:ub("int32", 8); k:putmem(s, s, 64, 1)
      else k:data_copy(k:ub("int32", 8), g, 8) end
    end, 3)
    local dur
    for _, r in ipairs(m:trace_records()) do
      if r.kind == "mte" and r.pe == 0 and r.block == 0 then dur = r.dur end
    end
    -- alone on its HBM (the others' caps add up to far less than hbm_GBps):
    -- the core's MTE2 rate, rounded up to a whole picosecond
    assert.is_true(3 * p.mte2_bytes_per_cycle * p.core_ghz < p.hbm_GBps)
    assert.near(stream_us(p, "MTE2", 65536), dur, 1.01e-6)
  end)
end)

describe("engine hardening: a full queue, then a drain in the same call", function()
  -- putmem is sl_mte (which may leave S parked on a full queue) then quiet:
  -- the drain must take over the park, so S goes on only when every chunk has
  -- landed -- whatever queue_depth is
  it("a blocking put over a full queue ends when its last chunk landed", function()
    local function put(depth)
      local m = lab.machine{ pes = 2, queue_depth = depth }
      local src = m:malloc("int32", 65536):fill("iota_pe", 1)
      local dst = m:malloc("int32", 65536):fill("zero")
      local last
      local r = m:launch(function(k)
        if k.pe ~= 0 then return end
        local u = k:ub("int32", 8)
        k:putmem(dst, src, 65536, 1)               -- 16 chunks of the 16 KiB scratch
        k:data_copy(u, k:ptr(dst, 1):sub(65528, 8), 8)   -- S goes on only now: read it back
        k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
        last = k:get_value(u, 7)
      end, 1)
      assert.equals(src:on(0):read(65535, 1)[1], last)
      return r.kernel_us[1], dst:on(1):checksum(), src:on(0):checksum()
    end
    local t1, got1, want = put(1)
    local t16, got16 = put(16)
    assert.equals(want, got1)
    assert.equals(want, got16)
    assert.equals(t16, t1)
  end)
end)

-- ---------------------------------------------------------------- determinism
-- a nontrivial launch of the new timing core: every block of a PE puts
-- through the one link to the next PE (shared flows), queues over
-- queue_depth, flags between the pipes in every direction (and to S while
-- its pipe is busy), profiling frames on the profiled PE and the others, a
-- get from the peer while the puts run, barrier_all
local PES, BLOCKS, N = 4, 4, 6144

local function world(opts)
  local o = { pes = PES, queue_depth = 3, prof_pe = 1, time_limit_us = 400 }
  for k, v in pairs(opts or {}) do o[k] = v end
  local m = lab.machine(o)
  local w = { m = m, src = m:malloc("int32", N, "src"):fill("iota_pe", 1),
              dst = m:malloc("int32", BLOCKS * N, "dst"),
              out = m:malloc("fp32", BLOCKS * 256, "out") }
  w.kernel = function(k)
    local b, peer = k.block, (k.pe + 1) % k.n_pes
    local u, x, y = k:ub("int32", 1024), k:ub("fp32", 256), k:ub("fp32", 256)
    k:prof_start(b % 3)
    k:mte_put_nbi(w.dst:sub(b * N, N), w.src, u, 4096, N, peer, b)   -- 6 chunks, full queues
    k:data_copy(x, k:ptr(w.out, peer):sub(b * 256, 256), 256)        -- a remote get
    k:set_flag("MTE2_V", b); k:wait_flag("MTE2_V", b)
    k:muls(y, x, 1.5, 256)
    k:set_flag("V_MTE2", 0); k:wait_flag("V_MTE2", 0)
    k:set_flag("V_MTE3", 1); k:wait_flag("V_MTE3", 1)
    k:data_copy(w.out:sub(b * 256, 256), y, 256)
    k:set_flag("MTE3_S", 2); k:wait_flag("MTE3_S", 2)                 -- S waits on a busy pipe
    k:set_flag("MTE3_V", 3); k:wait_flag("MTE3_V", 3)
    k:set_flag("S_MTE2", 4); k:wait_flag("S_MTE2", 4)
    k:set_flag("MTE2_MTE3", 5); k:wait_flag("MTE2_MTE3", 5)
    k:set_flag("MTE3_MTE2", 6); k:wait_flag("MTE3_MTE2", 6)
    k:set_flag("V_S", 7); k:wait_flag("V_S", 7)
    k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
    k:set_flag("S_V", 1); k:wait_flag("S_V", 1)
    k:set_flag("S_MTE3", 2); k:wait_flag("S_MTE3", 2)
    k:prof_end(b % 3)
    k:putmem(w.dst:sub(b * N, 64), w.src, 64, peer)
    k:barrier_all()
  end
  return w
end

-- a run's figures, times taken from the launch start (to compare machines
-- whose clocks differ), in whole picoseconds
local function run(w)
  w.dst:fill("zero"); w.out:fill("const", 1)
  w.m:reset_prof()
  w.m:trace(100000)
  w.m:trace_records(true)
  local r = w.m:launch(w.kernel, BLOCKS)
  local trace = {}
  for i, t in ipairs(w.m:trace_records(true)) do
    local c = {}
    for k, v in pairs(t) do c[k] = v end
    c.ts = math.floor((t.ts - r.start_us) * 1e6 + 0.5)
    c.dur = math.floor(t.dur * 1e6 + 0.5)
    trace[i] = c
  end
  return { kernel_us = r.kernel_us, trace = trace, prof = w.m:prof_rows(),
           shadow = w.m:shadow_rows(), dst = w.dst:checksum(), out = w.out:checksum() }
end

describe("engine hardening: determinism of the flow and queue core", function()
  local ref
  setup(function() ref = run(world()) end)

  it("two fresh machines give the same kernel times, trace and counters", function()
    local again = run(world())
    assert.same(ref, again)
    -- and the launch did what it should: work on every PE, frames counted
    assert.equals(PES, #ref.kernel_us)
    for pe = 1, PES do assert.is_true(ref.kernel_us[pe] > 0) end
    assert.is_true(#ref.trace > PES * BLOCKS * 8)
    assert.equals(BLOCKS, #ref.prof)
    for _, row in ipairs(ref.prof) do assert.equals(1, row.count) end
    assert.equals(PES * BLOCKS, #ref.shadow)
  end)

  -- a launch stopped at the virtual-time limit with flows in flight, full
  -- queues and parked blocks (it ends at the limit, a whole number of counter
  -- ticks: the counters compare exactly), then a kernel fault midway: the
  -- same machine then runs the launch exactly as a fresh one
  it("a launch after failed ones on the same machine equals a fresh machine", function()
    local w = world()
    local ok, e = pcall(w.m.launch, w.m, function(k)
      local u = k:ub("int32", 1024)
      if k.block == 0 then
        k:mte_put_nbi(w.dst, w.src, u, 4096, N, (k.pe + 1) % k.n_pes, 0)
        k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
      end
      while true do k:data_copy(w.dst:sub(k.block * 1024, 1024), u, 1024) end
    end, BLOCKS)
    assert.is_false(ok)
    H.contains(e, "virtual-time limit of 400 us reached")
    assert.same(ref, run(w))
    ok, e = pcall(w.m.launch, w.m, function(k)
      local u = k:ub("int32", 1024)
      k:mte_put_nbi(w.dst, w.src, u, 4096, N, (k.pe + 1) % k.n_pes, 0)
      if k.pe == 2 and k.block == 1 then k:data_copy(u, w.src, 1024); error("midway") end
      k:barrier_all()
    end, BLOCKS)
    assert.is_false(ok)
    H.contains(e, "midway")
    local after = run(w)
    assert.same(ref.kernel_us, after.kernel_us)
    assert.same(ref.trace, after.trace)
    assert.same(ref.dst, after.dst)
    for i, row in ipairs(ref.prof) do assert.equals(row.count, after.prof[i].count) end
  end)
end)

-- ---------------------------------------------------------------- stuck texts
describe("engine hardening: what a stuck block waits for", function()
  -- the four states of the queued pipes, caught by the time limit: a drain
  -- (quiet), a queue over queue_depth, wait_flag to S, the end of the code
  local function stuck(check)
    local m = lab.machine{ pes = 2, time_limit_us = 3, queue_depth = 1, check = check }
    local d = m:malloc("int32", 49152):fill("zero")
    local ok, e = pcall(m.launch, m, function(k)
      if k.pe ~= 0 then return end
      local u, r = k:ub("int32", 49152), k:ptr(d, 1)
      if k.block == 0 then k:mte_put_nbi(d, d, u, 196608, 49152, 1, 0); k:quiet()
      elseif k.block == 1 then k:data_copy(r, u, 49152); k:data_copy(r, u, 49152)
      elseif k.block == 2 then
        k:data_copy(r, u, 49152); k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
      else k:data_copy(r, u, 49152) end
    end, 4)
    return m, ok, e
  end
  local WANT = {
    "PE 0 block 0 (at 0.020 us): pipe_barrier or quiet: its pipes to drain (V 0, MTE2 2, "
      .. "MTE3 2 queued; MTE3 behind a wait_flag)",
    "PE 0 block 1 (at 0.030 us): a free slot in a pipe queue over queue_depth 1 (V 0, "
      .. "MTE2 0, MTE3 2 queued)",
    "PE 0 block 2 (at 0.040 us): wait_flag(MTE3_S, 0): its pipe has not reached the set_flag "
      .. "yet (V 0, MTE2 0, MTE3 2 queued)",
    "PE 0 block 3 (at 0.020 us): the end of its kernel: its pipes to drain (V 0, MTE2 0, "
      .. "MTE3 1 queued)",
  }

  it("the time-out text names the pipes, the queue, the flag or the act", function()
    local _, ok, e = stuck(nil)
    assert.is_false(ok)
    H.contains(e, "virtual-time limit of 3 us reached", table.unpack(WANT))
  end)

  it("a checked run's salvage reports the same, then the machine runs as a fresh one",
     function()
    local m, ok = stuck("synccheck")
    assert.is_true(ok)
    local msgs = {}
    for _, r in ipairs(m:check_reports(true)) do msgs[#msgs + 1] = r.what end
    assert.equals(4, #msgs)
    for i, want in ipairs(WANT) do
      assert.equals("block stopped at the virtual-time limit waiting for "
                    .. want:gsub("^PE %d block %d %(at [%d.]+ us%): ", ""), msgs[i])
    end
    local function good(mm)
      local s = mm:malloc("int32", 4096):fill("iota")
      return mm:launch(function(k) k:putmem(s, s, 4096, 1 - k.pe); k:barrier_all() end, 2)
                 .kernel_us
    end
    local fresh = lab.machine{ pes = 2, time_limit_us = 3, queue_depth = 1, check = "synccheck" }
    fresh:malloc("int32", 49152)
    assert.same(good(fresh), good(m))
  end)
end)

describe("engine hardening: argument positions of the calls built of others", function()
  -- core/lshmemlab_kernel.c staged_body / k_put_signal passed sl_mte's and
  -- sl_signal_op's argument numbers through: putmem's count was "#5" (sl_mte's
  -- elems), put_signal's signal "#1" (sl_signal_op's)
  local function fault(kernel)
    local m = lab.machine{ pes = 2 }
    local d = m:malloc("int32", 64):fill("zero")
    local f = m:malloc("fp32", 8)
    local e = H.err(m.launch, m, function(k) kernel(k, d, f) end, 1)
    return e:match("^[^\n]*")
  end
  it("putmem and getmem name their own count", function()
    H.contains(fault(function(k, d) k:putmem(d, d, 0, 1) end),
               "bad argument #3 to 'putmem' (element count must be positive)")
    H.contains(fault(function(k, d) k:getmem(d, d, -4, 1) end),
               "bad argument #3 to 'getmem' (element count must be positive)")
  end)
  it("put_signal names its signal and its count", function()
    H.contains(fault(function(k, d, f) k:put_signal(d, d, 8, f, 1, lab.SIGNAL_SET, 1) end),
               "bad argument #4 to 'put_signal' (signal must be an integer element, got fp32)")
    H.contains(fault(function(k, d) k:put_signal(d, d, 0, d, 1, lab.SIGNAL_SET, 1) end),
               "bad argument #3 to 'put_signal' (element count must be positive)")
  end)
end)

describe("engine hardening: profiling frames", function()
  -- core/pipe.c sli_mark read a shadow frame (the PEs not profiled) when the
  -- pipes reached it but not the signals in flight, which a PipeBarrier(ALL)
  -- waits for: a frame around a remote signal_op was 1 tick on PE 1 and 27 on
  -- the profiled PE 0 (signal_ns + alpha)
  it("a shadow frame waits for the signals in flight as the profiled PE's barrier does", function()
    local m = lab.machine{ pes = 2, prof_pe = 0 }
    local p = m:params()
    local s = m:malloc("int32", 8):fill("zero")
    m:launch(function(k)
      k:prof_start(1)
      k:signal_op(s, 1, lab.SIGNAL_SET, 1 - k.pe)
      k:prof_end(1)
    end, 1)
    local prof = m:prof_rows()[1].cycles
    local shadow
    for _, r in ipairs(m:shadow_rows()) do if r.pe == 1 then shadow = r.cycles end end
    local tick_ns = 1000 / p.cycle2us
    -- the signal lands signal_ns + alpha after it is sent
    assert.is_true(shadow >= math.floor((p.signal_ns + p.hccs_alpha_ns) / tick_ns))
    -- the profiled PE pays its two barriers on top (and a tick of rounding)
    assert.is_true(prof - shadow <= math.ceil(2 * p.pipe_barrier_ns / tick_ns) + 1)
  end)
end)

describe("engine hardening: the virtual-time limit", function()
  -- core/sim.c sl_must_yield looked at the limit only for a pending event due
  -- before the block's clock: a block spinning on S primitives with nothing
  -- pending (a get_value poll of a flag nobody writes) ran forever. In a child
  -- lua5.4 under `timeout 20`: a regression hangs that, not the suite.
  it("stops a block that spins on S with nothing pending", function()
    local out = H.subprocess([[
local lab = require("shmemlab")
local function spin(k)
  local flag = k:ub("int32", 8)
  k:set_value(flag, 0, 0)
  while k:get_value(flag, 0) == 0 do end
end
local m = lab.machine{ pes = 1, time_limit_us = 10 }
local ok, e = pcall(m.launch, m, spin, 1)
print(ok, (e:gsub("\n", "|")))
local c = lab.machine{ pes = 1, time_limit_us = 10, check = "synccheck" }
c:launch(spin, 1)                        -- a checked run ends it with a report
for _, r in ipairs(c:check_reports()) do print("report", r.what) end
]])
    H.contains(out, "false\tvirtual-time limit of 10 us reached; blocks still waiting:|"
               .. "  PE 0 block 0 (at 10.00",
               "report\tblock stopped at the virtual-time limit\n", "exit=0")
  end)
end)

describe("engine hardening: flags through a waiting pipe", function()
  -- core/pipe.c: a pipe's wait_flag raised when the pipe may go on but not
  -- "all its earlier work done": a set_flag behind it fired at the work before
  -- the wait, and a pipe_barrier on it let S go before the wait had passed.
  -- MTE2 -> V -> MTE3 then started MTE3 at MTE2's stream end, not when MTE2's
  -- bytes landed, and pipe_barrier(V) read the UB before they had.
  it("MTE2 -> V -> MTE3 waits for MTE2's bytes; pipe_barrier(V) waits for V's wait", function()
    local m = lab.machine{ pes = 1 }
    local p = m:params()
    local g = m:alloc("int32", 16384):fill("iota", 1)
    local out = m:alloc("int32", 8):fill("zero")
    local seen
    m:trace(100)
    m:launch(function(k)
      local u = k:ub("int32", 16384)
      k:data_copy(u, g, 16384)
      k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
      k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
      k:data_copy(out, u, 8)
      k:pipe_barrier("V")
      seen = k:get_value(u, 5)
    end, 1)
    assert.equals(6, seen)
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8 }, out:on(0):read(0, 8))
    local get, put
    for _, r in ipairs(m:trace_records()) do
      if r.kind == "mte" then if r.pipe == "MTE2" then get = r else put = r end end
    end
    -- MTE3 starts when MTE2's bytes have landed: stream end + setup + alpha
    local landed = get.ts + get.dur + (p.mte_setup_ns + p.local_alpha_ns) / 1000
    assert.near(landed, put.ts, 1e-6)
  end)
end)
