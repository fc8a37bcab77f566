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

  -- core/lshmemlab.c kdone raised a failed primitive's error at once; the
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

  -- core/lshmemlab.c blocking_prim / k_put_signal: the first putmem, getmem
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
