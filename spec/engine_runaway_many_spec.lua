-- Runaway kernels of many blocks (issue 26, defect 1; doc/guard.md). The spin
-- count was per block and restarted whenever the machine clock moved, which
-- every wake-up of another spinning block did: a poll that never succeeds on
-- 8 PEs x 16 blocks, a put loop on 8 x 48 and a system_cycle spin on 8 x 16
-- ran until primitive_limit per block (minutes to hours). The count is now the
-- launch's (primitives of all blocks since the last progress), and the error
-- names the blocks, their line and the primitive they were calling. A loop
-- whose first copies were new stops spin_limit primitives after the last of
-- them landed: within twice spin_limit calls here.
--
-- Every kernel here counts its own calls and stops itself past a bound (an
-- error that is not the guard's): before the fix these launches fail that way
-- in about a second instead of running for minutes. The bounds are counts,
-- never wall time; the virtual time of each stop is exact.

local H = require("spec.helpers.engine")
local lab = H.lab

local SRC = "spec/engine_runaway_many_spec.lua"

-- a launch of kernel(k, a, tick) on a machine of opts with block_dim blocks;
-- a = setup(m) (buffers); tick() counts one primitive call and raises past
-- bound. Returns the launch's error and the calls counted
local function run(opts, block_dim, bound, setup, kernel)
  local m = lab.machine(opts)
  local a = setup and setup(m) or {}
  local calls = 0
  local function tick()
    calls = calls + 1
    if calls > bound then error("not stopped by the runaway guard after " .. bound .. " calls") end
  end
  local ok, err = pcall(m.launch, m, function(k) kernel(k, a, tick) end, block_dim)
  m:close()
  assert.is_false(ok)
  return tostring(err), calls
end

-- the kernels: each marks the line of its loop's primitive in at[1]
local at = {}

local function spin(k, _, tick)
  at.spin = H.line() + 1
  while true do tick(); k:system_cycle() end
end

local function poll(k, a, tick)
  local u = k:ub("int32", 8)
  at.poll = H.line() + 2
  repeat
    tick(); k:data_copy(u, a.flag, 8)
    tick(); k:set_flag("MTE2_S", 0); tick(); k:wait_flag("MTE2_S", 0)
    tick()
  until k:get_value(u, 0) == 1
end

local function put(k, a, tick)
  local u = k:ub("int32", 64)
  local peer = (k.pe + 1) % k.n_pes
  local dst, src = a.dst:sub(k.block * 64, 64), a.src:sub(k.block * 64, 64)
  at.put = H.line() + 1
  while true do tick(); k:mte_put_nbi(dst, src, u, 256, 64, peer, 0) end
end

local function poll_setup(m) return { flag = m:malloc("int32", 8, "flag"):fill("const", 0) } end
local function put_setup(m)
  return { src = m:malloc("int32", 48 * 64, "src"):fill("const", 1),
           dst = m:malloc("int32", 48 * 64, "dst") }
end

describe("runaway kernels of many blocks stop after the launch's count, named", function()
  it("a system_cycle spin on 8 PEs x 16 blocks", function()
    local err, calls = run({ pes = 8, spin_limit = 20000 }, 16, 100000, nil, spin)
    H.contains(err, "kernel fault on PE 2 block 0 at 0.780 us: ",
               "runaway kernel: the launch's blocks called more than 20000 primitives in a row "
               .. "with nothing new", "the machine option spin_limit",
               string.format("128 blocks at %s:%d: system_cycle (PE 0 block 0 to PE 7 block 15)",
                             SRC, at.spin))
    assert.equal(20001, calls)
  end)

  it("a poll of a flag no one writes (copy, flag, get_value) on 8 PEs x 16 blocks", function()
    local err, calls = run({ pes = 8, spin_limit = 20000 }, 16, 100000, poll_setup, poll)
    H.contains(err, "runaway kernel: the launch's blocks called more than 20000 primitives in a row",
               -- each block's first get_value of the flag is progress (a read of a
               -- new place), its repeats are not
               "kernel fault on PE 0 block 8 at 21.132 us: ",
               string.format("120 blocks at %s:%d: get_value (PE 0 block 0 to PE 7 block 15)",
                             SRC, at.poll + 3),
               string.format("7 blocks at %s:%d: wait_flag (PE 0 block 1 to PE 0 block 7)",
                             SRC, at.poll + 1),
               string.format("1 block at %s:%d: data_copy (PE 0 block 8)", SRC, at.poll))
    assert.truthy(calls <= 2 * 20000, calls)
  end)

  it("a put loop on 8 PEs x 48 blocks", function()
    local err, calls = run({ pes = 8, spin_limit = 20000 }, 48, 100000, put_setup, put)
    H.contains(err, "runaway kernel: the launch's blocks called more than 20000 primitives in a row",
               string.format("384 blocks at %s:%d: mte_put_nbi (PE 0 block 0 to PE 7 block 47)",
                             SRC, at.put))
    assert.truthy(calls <= 2 * 20000, calls)
  end)

  it("a put loop on 256 PEs x 48 blocks", function()
    local err, calls = run({ pes = 256, spin_limit = 100000 }, 48, 400000, put_setup, put)
    -- a block runs ahead through its k:ub and its puts until its queue is full
    -- (engine_ties_spec): the guard stops the launch before the last blocks ran
    H.contains(err, "runaway kernel: the launch's blocks called more than 100000 primitives in a row",
               string.format("5556 blocks at %s:%d: mte_put_nbi (PE 0 block 0 to PE 115 "
                             .. "block 35), 100003 primitives", SRC, at.put))
    assert.is_nil(err:find(": ub (", 1, true))
    assert.truthy(calls <= 2 * 100000, calls)
  end)

  it("the default spin_limit stops a spin of 8 PEs x 48 blocks after 1 M primitives", function()
    local err, calls = run({ pes = 8 }, 48, 2000000, nil, spin)
    H.contains(err, "runaway kernel: the launch's blocks called more than 1000000 primitives in a row",
               "384 blocks at ")
    assert.equal(1000001, calls)
  end)
end)

describe("a runaway in the command line", function()
  -- a checked run whose blocks are reported (initcheck), then spin: the reports
  -- and the configuration stay on stdout, the runaway goes to stderr, exit 3
  it("keeps the configuration and the checked run's reports", function()
    local C = require("spec.helpers.cli")
    local op = "spec/fixtures/runaway/report_then_spin.lua"
    local status, out, err = C.run({ op, "--pes", "2", "--tool", "initcheck", "--set",
                                     "spin_limit=20000" })
    assert.equal(3, status)
    H.contains(out, "# shmemlab ", "op report_then_spin",
               "====== ERROR: read of uninitialized memory: read of 256 bytes",
               "====== report_then_spin: ERROR SUMMARY: 16 errors (1 distinct)")
    H.contains(err, "kernel fault on PE 0 block 0 at 6.772 us: " .. op .. ":11: runaway kernel: "
               .. "the launch's blocks called more than 20000 primitives in a row",
               "16 blocks at " .. op .. ":11: system_cycle (PE 0 block 0 to PE 1 block 7), "
               .. "20001 primitives")
  end)
end)

describe("scalar scans of many blocks", function()
  -- a scan reads each place once, so it ends: each block's 256 reads of a UB
  -- table (get_value) or of a GM table (g), all before any copy lands, are
  -- 32,768 primitives on 8 PEs x 16 blocks, past a spin_limit of 20,000. A read
  -- of a new place is progress; before, the launch was stopped as a spin (the
  -- port of DeepEP's data kernel read its offsets table this way at EP64)
  for _, how in ipairs({ "get_value", "g" }) do
    it("reads 256 new places a block with " .. how .. " and is not stopped", function()
      local m = lab.machine{ pes = 8, spin_limit = 20000 }
      local t = m:malloc("int32", 256, "table"):fill("iota")
      local sums = m:malloc("int32", 8 * 16, "sums")
      m:launch(function(k)
        local u, sum = k:ub("int32", 256), 0
        if how == "get_value" then
          k:data_copy(u, t, 256); k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
          for i = 0, 255 do sum = sum + k:get_value(u, i) end
        else
          for i = 0, 255 do sum = sum + k:g(t:sub(i, 1), k.pe) end
        end
        k:p(sums:sub(k.pe * 16 + k.block, 1), sum, k.pe)
      end, 16)
      for b = 0, 8 * 16 - 1 do
        assert.equal(255 * 256 // 2, sums:on(b // 16):read(b))
      end
      m:close()
    end)
  end
end)

describe("m:runaway_counts", function()
  -- 4 blocks call 6 primitives each, all before the first copy lands: the
  -- launch's 24 primitives are one run with no progress (doc/guard.md: how the
  -- default spin_limit was chosen, and how to re-measure it)
  it("gives the last launch's primitives and its longest run with no progress", function()
    local m = lab.machine{ pes = 2 }
    local g = m:malloc("int32", 64):fill("const", 1)
    m:launch(function(k)
      local u = k:ub("int32", 8)
      for _ = 1, 3 do k:my_pe() end
      k:data_copy(u, g:sub(k.block * 8, 8), 8)
      k:pipe_barrier()
    end, 2)
    assert.same({ primitives = 24, quiet_max = 24 }, m:runaway_counts())
    m:launch(function(k)                    -- a new copy each round: progress each time
      local u = k:ub("int32", 8)
      for i = 0, 3 do
        k:data_copy(u, g:sub(i * 16 + k.block * 8, 8), 8)
        k:pipe_barrier()
      end
    end, 2)
    local c = m:runaway_counts()
    assert.equal(36, c.primitives)
    assert.equal(12, c.quiet_max)            -- ub, first copy and pipe_barrier of each block
    m:close()
  end)
end)
