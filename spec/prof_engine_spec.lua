-- Cycle profiling in the engine (SHMEMI_PROF_START/END semantics): the PE gate,
-- the block and frame limits, accumulation and reset, the PipeBarrier cost,
-- and the printed table of a real run, with every number derived from the profile.
local lab = require("shmemlab")

-- picoseconds of a ns figure, as the engine rounds it
local function ps(ns) return math.floor(ns * 1000 + 0.5) end

-- the system counter at t picoseconds
local function ticks(p, t) return math.floor(t * p.cycle2us / 1e6) end

-- frame 0 around one 32-byte GM->UB copy
local function one_copy(k, src)
  k:prof_start(0)
  local ub = k:ub("int32", 8)
  k:data_copy(ub, src, 8)
  k:prof_end(0)
end

-- the expected cycles of one_copy on the profiled PE (kernel starts at t0 ps)
local function expected_cycles(p, t0)
  local t1 = t0 + ps(p.pipe_barrier_ns)                     -- prof_start: barrier
  local issue = t1 + ps(p.issue_ns)                          -- k:ub
  local copy_end = issue + ps(p.mte_setup_ns)
    + math.floor(32 * 1000 / (p.mte2_bytes_per_cycle * p.core_ghz) + 0.5)
    + ps(p.local_alpha_ns)
  local t2 = copy_end + ps(p.pipe_barrier_ns)                 -- prof_end waits the copy
  return ticks(p, t2) - ticks(p, t1), t2 - t0
end

describe("cycle profiling", function()
  it("records on the chosen PE only, with the counts and cycles of the real macros", function()
    local m = lab.machine{ pes = 2, prof_pe = 1 }
    local p = m:params()
    local src = m:alloc("int32", 8)
    m:launch(one_copy, 2, src)
    local data = m:get_prof(nil, false)
    assert.equal(1, data.pe)
    assert.equal(50, data.cycle2us)
    local cycles = expected_cycles(p, ps(p.launch_us * 1000))
    assert.same({ { block = 0, frame = 0, cycles = cycles, count = 1 },
                  { block = 1, frame = 0, cycles = cycles, count = 1 } }, data.rows)
  end)

  it("costs two PipeBarriers of virtual time on the profiled PE and nothing elsewhere", function()
    local m = lab.machine{ pes = 2, prof_pe = 1 }
    local p = m:params()
    local r = m:launch(one_copy, 1, m:alloc("int32", 8))
    local off = lab.machine{ pes = 2, prof_pe = -1 }
    local r0 = off:launch(one_copy, 1, off:alloc("int32", 8))
    assert.equal(r0.kernel_us[1], r.kernel_us[1])             -- PE 0 is not profiled
    assert.equal(r0.kernel_us[2], r0.kernel_us[1])
    local _, span = expected_cycles(p, 0)
    assert.near(span / 1e6, r.kernel_us[2], 1e-9)
    assert.near(2 * p.pipe_barrier_ns / 1000, r.kernel_us[2] - r0.kernel_us[2], 1e-9)
    assert.same({}, off:get_prof(nil, false).rows)            -- off: nothing recorded
  end)

  it("takes the PE from SHMEM_CYCLE_PROF_PE, the option winning, and rejects a non-PE", function()
    local cmd = [[SHMEM_CYCLE_PROF_PE=%s lua5.4 -e 'package.path="lua/?.lua;lua/?/init.lua;"..package.path
      package.cpath="build/?.so;"..package.cpath
      local lab = require("shmemlab")
      local ok, m = pcall(lab.machine, {pes = 4%s})
      print(ok and m:prof_pe() or m)' 2>&1]]
    local function run(env, opt)
      local f = io.popen(string.format(cmd, env, opt))
      local out = f:read("a")
      f:close()
      return out
    end
    assert.equal("2\n", run("2", ""))
    assert.equal("3\n", run("2", ", prof_pe = 3"))
    assert.equal("-1\n", run("''", ""))
    assert.matches("SHMEM_CYCLE_PROF_PE=x is not a PE number of this machine %(0..3%)", run("x", ""))
    assert.matches("SHMEM_CYCLE_PROF_PE=4 is not a PE number", run("4", ""))
    assert.has_error(function() lab.machine{ pes = 2, prof_pe = 2 } end,
      "option prof_pe=2 is not a PE number of this machine (0..1)")
  end)

  it("records frames below 1024 and blocks below 64 only", function()
    local m = lab.machine{ pes = 1, prof_pe = 0, aiv_cores = 70 }
    m:launch(function(k)
      k:prof_start(1023); k:prof_end(1023)
      k:prof_start(1024); k:prof_end(1024)
      k:prof_start(5000); k:prof_end(5000)
    end, 70)
    local blocks, frames = {}, {}
    for _, row in ipairs(m:get_prof(nil, false).rows) do
      blocks[row.block] = true
      frames[row.frame] = true
    end
    for b = 0, 63 do assert.is_true(blocks[b]) end
    for b = 64, 69 do assert.is_nil(blocks[b]) end
    assert.same({ [1023] = true }, frames)
  end)

  it("accumulates across launches until reset_prof", function()
    local m = lab.machine{ pes = 1, prof_pe = 0 }
    local p = m:params()
    local src = m:alloc("int32", 8)
    local function launch()
      local r = m:launch(one_copy, 1, src)
      return (expected_cycles(p, math.floor(r.start_us * 1e6 + 0.5)))
    end
    local c1 = launch()
    assert.same({ block = 0, frame = 0, cycles = c1, count = 1 }, m:get_prof(nil, false).rows[1])
    local c2 = launch()
    assert.same({ block = 0, frame = 0, cycles = c1 + c2, count = 2 }, m:get_prof(nil, false).rows[1])
    m:reset_prof()
    assert.same({}, m:get_prof(nil, false).rows)
    local c3 = launch()
    assert.same({ block = 0, frame = 0, cycles = c3, count = 1 }, m:get_prof(nil, false).rows[1])
  end)

  it("prints aclshmemx_get_prof's table for a real run", function()
    local m = lab.machine{ pes = 2, prof_pe = 0 }
    local p = m:params()
    m:launch(one_copy, 2, m:alloc("int32", 8))
    local printed = {}
    local write = io.write
    io.write = function(...) -- luacheck: ignore 122
      for _, s in ipairs({ ... }) do printed[#printed + 1] = s end
    end
    local ok, err = pcall(m.get_prof, m, nil, true)
    io.write = write -- luacheck: ignore 122
    assert(ok, err)
    local cycles = expected_cycles(p, ps(p.launch_us * 1000))
    local row = function(b)
      return string.format("%-10d%-10d%-15d%-15d%-15s\n", b, 0, cycles, 1,
                           string.format("%.3f", cycles / 1 / 50))
    end
    assert.equal(string.rep("=", 60) .. "\n"
      .. "BlockID   FrameID   Cycles         Count          AvgTime(us)    \n"
      .. string.rep("-", 60) .. "\n" .. row(0) .. row(1) .. string.rep("=", 60) .. "\n",
      table.concat(printed))
  end)
end)
