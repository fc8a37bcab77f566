-- The engine's per-event bookkeeping (issue 10): a shadow read (a profiling
-- frame of a PE that is not the profiled one) waits in each busy pipe for
-- the instruction S issued last there; it is read when that one is done, and
-- a stuck block's text counts it among the pipe's queued instructions.
local lab = require("shmemlab")
local H = require("spec.helpers.engine")

local UB = 49152                                   -- int32: the whole 192 KiB UB

describe("engine: shadow reads waiting in a pipe", function()
  it("count as queued instructions in a stuck block's text", function()
    local m = lab.machine{ pes = 2, time_limit_us = 1, prof_pe = 0 }
    local d = m:malloc("int32", UB):fill("zero")
    local ok, e = pcall(m.launch, m, function(k)
      if k.pe ~= 1 then return end
      k:data_copy(k:ptr(d, 0), k:ub("int32", UB), UB)
      k:prof_start(lab.frames.REMOTE_PUT_GET)       -- MTE3 busy: both wait there
      k:prof_end(lab.frames.REMOTE_PUT_GET)
      k:quiet()
    end, 1)
    m:close()
    assert.is_false(ok)
    H.contains(e, "virtual-time limit of 1 us reached", "PE 1 block 0",
               "pipe_barrier or quiet: its pipes to drain (V 0, MTE2 0, MTE3 3 queued)")
  end)

  it("are read when the pipe has landed what S issued before them", function()
    local m = lab.machine{ pes = 2, prof_pe = 0 }
    local p = m:params()
    local d = m:malloc("int32", UB):fill("zero")
    m:launch(function(k)
      if k.pe ~= 1 then return end
      local u, g = k:ub("int32", UB), k:ptr(d, 0)
      k:prof_start(lab.frames.COPY_IN)              -- idle pipes: read at once
      k:data_copy(g, u, UB)
      k:prof_end(lab.frames.COPY_IN)                -- once MTE3 landed the copy
      k:prof_start(lab.frames.FINALIZE)
      k:data_copy(g, u, UB)
      k:data_copy(g, u, UB)
      k:prof_end(lab.frames.FINALIZE)               -- once both landed
    end, 1)
    local rows = {}
    for _, r in ipairs(m:shadow_rows()) do
      if r.pe == 1 then rows[r.frame] = r end
    end
    m:close()
    -- one copy streams UB * 4 bytes at the core's MTE3 rate (below HBM's here)
    local rate = math.min(p.mte3_bytes_per_cycle * p.core_ghz, p.hbm_GBps)   -- bytes per ns
    local ticks = math.floor(UB * 4 / rate * p.cycle2us / 1000)
    local one, two = rows[lab.frames.COPY_IN], rows[lab.frames.FINALIZE]
    assert.equals(1, one.count)
    assert.equals(1, two.count)
    assert.is_true(one.cycles >= ticks, one.cycles .. " < " .. ticks)
    assert.is_true(two.cycles >= 2 * ticks, two.cycles .. " < " .. 2 * ticks)
  end)
end)
