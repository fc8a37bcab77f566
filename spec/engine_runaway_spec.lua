-- Runaway kernels (issue 9, defect 3; doc/errors.md "Runaway kernels"). A loop of
-- k:system_cycle(), k:get_value() or k:pipe_barrier() restarted the
-- instruction budget at every call and advanced only the block's own S clock
-- (about 73 minutes of wall time to the 60 s virtual limit); a loop of
-- k:my_pe() or of a satisfied signal_wait_until never stopped at all (no
-- virtual time passes). Two counted limits stop them now, deterministic
-- (primitive counts, never wall time): spin_limit primitives of all blocks
-- together in a row with no progress (no new copy, vector op, changed signal
-- or UB value, ended block), primitive_limit primitives of one block in one
-- launch. Each case runs in a child lua5.4 under a 20 s timeout, so a
-- regression fails (exit=124) instead of hanging the suite.
-- Issue 26 defect 1: the spin count was per block and restarted whenever the
-- machine clock moved, which every wake-up of another spinning block did, so a
-- launch of many spinning blocks ran until primitive_limit per block (minutes
-- at 8 PEs x 16 blocks, hours at 48): the count is now the launch's, and the
-- error names the blocks, their line and primitive (the "many blocks" specs).

local H = require("spec.helpers.engine")
local lab = H.lab

-- the child: a 2-PE machine (extra options in opts), PE 1 idle, PE 0 running
-- body in an endless loop; prints the launch's error
local function child(body, opts)
  return H.subprocess(string.format([[
local lab = require("shmemlab")
local m = lab.machine{ pes = 2%s }
local sig = m:malloc("int32", 8):fill("const", 1)
local ok, err = pcall(m.launch, m, function(k)
  local u = k:ub("int32", 8)
  if k:my_pe() == 1 then return end
  while true do
    %s
  end
end, 1)
print(ok, err)
]], opts or "", body))
end

describe("runaway kernels", function()
  it("the SoC profile sets both limits", function()
    local p = lab.soc("Ascend910B")
    assert.equal(1000000, p.spin_limit)
    assert.equal(2000000, p.primitive_limit)
  end)

  -- the line of the loop's body in the child is its 10th (two path lines first)
  local loops = {
    { "k:my_pe()", "0.010" },
    { "k:system_cycle()", "5000.015" },
    -- the first get_value of a place is progress (a scan of new places is not a
    -- spin); the repeats are not
    { "k:get_value(u, 0)", "5000.015" },
    { "k:pipe_barrier()", "20000.030" },
    { "k:signal_wait_until(sig, lab.CMP_GE, 1)", "100000.110" },
  }
  for _, c in ipairs(loops) do
    it("a loop of " .. c[1] .. " stops at the default spin_limit, naming PE, block, line and why",
       function()
      local out = child(c[1])
      assert.truthy(H.has(out, "false\tkernel fault on PE 0 block 0 at " .. c[2] .. " us: "),
                    out)
      assert.truthy(H.has(out, ":10: runaway kernel: the launch's blocks called more than "
                           .. "1000000 primitives in a row with nothing new"), out)
      assert.truthy(H.has(out, "1 block at "), out)
      assert.truthy(H.has(out, "spin_limit"), out)
      assert.truthy(H.has(out, "exit=0"), out)
    end)
  end

  it("a poll that moves data but reads a value no one writes stops at primitive_limit", function()
    -- each round's copy lands later: the machine clock moves, spin_limit never trips
    local out = child('k:data_copy(u, sig, 8); k:set_flag("MTE2_S"); k:wait_flag("MTE2_S"); '
                      .. "if k:get_value(u, 0) == 0 then break end", ", primitive_limit = 20000")
    assert.truthy(H.has(out, ":10: runaway kernel: the block called more than 20000 primitives "
                         .. "in this launch (the machine option primitive_limit)"), out)
    assert.truthy(H.has(out, "kernel fault on PE 0 block 0 at "), out)
  end)

  it("the same error in a checked run, and a machine that still launches after it", function()
    local m = lab.machine{ pes = 1, check = "all", spin_limit = 50 }
    local ok, err = pcall(m.launch, m, function(k) while true do k:my_pe() end end, 1)
    assert.is_false(ok)
    assert.truthy(H.has(err, "runaway kernel: the launch's blocks called more than 50 primitives "
                         .. "in a row"), err)
    local r = m:launch(function(k) for _ = 1, 50 do k:my_pe() end end, 1)
    assert.truthy(r.max_kernel_us >= 0)
  end)

  it("a block polling a flag that another PE writes later is not stopped", function()
    -- spin_limit 20: PE 0's poll rounds repeat one copy (no progress), but PE 1
    -- copies a new chunk each round (progress) until it writes the flag
    local m = lab.machine{ pes = 2, spin_limit = 20 }
    local flag = m:malloc("int32", 8):fill("const", 0)
    local g = m:malloc("int32", 20 * 8192):fill("const", 5)
    local rounds = 0
    m:launch(function(k)
      local u = k:ub("int32", 8192)
      if k:my_pe() == 1 then
        for i = 0, 19 do k:data_copy(u, g:sub(i * 8192, 8192), 8192); k:pipe_barrier() end
        k:signal_op(flag, 1, lab.SIGNAL_SET, 0)
        return
      end
      repeat
        rounds = rounds + 1
        k:data_copy(u, flag, 8); k:set_flag("MTE2_S"); k:wait_flag("MTE2_S")
      until k:get_value(u, 0) == 1
    end, 1)
    assert.truthy(rounds > 20, rounds)
  end)

  it("a limit of 0 turns the guard off, a negative one is refused", function()
    local m = lab.machine{ pes = 1, spin_limit = 0, primitive_limit = 0 }
    m:launch(function(k) for _ = 1, 2000 do k:my_pe() end end, 1)
    assert.has_error(function() lab.machine{ pes = 1, spin_limit = -1 } end)
    assert.has_error(function() lab.machine{ pes = 1, primitive_limit = -1 } end)
  end)

  -- issue 11: a count hook makes Lua 5.4 trap every instruction of the block,
  -- so none is set while blocks run; a watchdog arms one on a block that
  -- called no primitive since its last look, and the next primitive disarms it
  it("a kernel runs without a count hook, and a pure-Lua endless loop is still stopped", function()
    local m = lab.machine{ pes = 2, instruction_budget = 1000000 }
    local hooks = {}
    m:launch(function(k)
      hooks[#hooks + 1] = debug.gethook() or false
      k:my_pe()
      hooks[#hooks + 1] = debug.gethook() or false
    end, 2)
    assert.same({ false, false, false, false, false, false, false, false }, hooks)
    local ok, err = pcall(m.launch, m, function(k)
      if k.pe == 1 and k.block == 1 then while true do end end
    end, 2)
    assert.is_false(ok)
    assert.truthy(H.has(err, "kernel fault on PE 1 block 1 at 0.000 us: "), err)
    assert.truthy(H.has(err, "instruction budget exceeded"), err)
    m:launch(function()                      -- the hook it armed is gone
      hooks[#hooks + 1] = debug.gethook() or false
    end, 1)
    assert.is_false(hooks[#hooks])
  end)

  it("a block that is slow between primitives, but within its budget, runs to its end", function()
    local m = lab.machine{ pes = 1, instruction_budget = 200000000 }
    local sum = 0
    m:launch(function(k)
      for _ = 1, 3 do
        local t0 = os.clock()
        while os.clock() - t0 < 0.05 do sum = sum + 1 end   -- longer than a watchdog look
        k:my_pe()
        assert(debug.gethook() == nil, "the primitive disarmed the hook")
      end
    end, 1)
    assert.truthy(sum > 0)
  end)

  -- a launch inside a block of another machine: the outer machine's watchdog
  -- saw no primitive of its own and asked to arm; the signal armed the inner
  -- machine's block, which has no budget (0) and was stopped at once
  it("a machine without a budget, launched inside a block of one with a budget, is never stopped",
     function()
    local outer = lab.machine{ pes = 1, instruction_budget = 200000000 }
    local inner = lab.machine{ pes = 1, instruction_budget = 0 }
    local sum = 0
    outer:launch(function()
      inner:launch(function()
        local t0 = os.clock()
        while os.clock() - t0 < 0.15 do sum = sum + 1 end   -- several watchdog looks
      end, 1)
    end, 1)
    assert.truthy(sum > 0)
  end)

  -- the watchdog thread arms the hook through a signal to the launching thread:
  -- lua_sethook from the watchdog's own thread raced with the block (it walks the
  -- coroutine's call chain while that changes; helgrind saw 14 racing contexts)
  it("arms the hook without a data race (helgrind, on the plain build)", function()
    local file = os.tmpname()
    local f = assert(io.open(file, "w"))
    f:write([[
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "build/?.so;" .. package.cpath
local lab = require("shmemlab")
local m = lab.machine{ pes = 2, instruction_budget = 2000000 }
for _ = 1, 3 do
  local ok, err = pcall(m.launch, m, function(k)
    if k.pe == 1 then local x = 0; while true do x = x + 1 end end
  end, 1)
  print(ok, (tostring(err):match("instruction budget exceeded")))
end
]])
    f:close()
    local p = assert(io.popen("env -u LD_PRELOAD timeout 120 valgrind --tool=helgrind lua5.4 "
                              .. file .. " 2>&1; echo \"exit=$?\""))
    local out = p:read("a")
    p:close()
    os.remove(file)
    assert.truthy(H.has(out, "exit=0"), out)
    local _, stopped = out:gsub("false\tinstruction budget exceeded", "")
    assert.equal(3, stopped, out)
    assert.falsy(out:find("data race", 1, true), out)
  end)
end)

