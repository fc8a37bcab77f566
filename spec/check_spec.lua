-- Checked runs (mssanitizer-style): one intentionally broken kernel per bug
-- class, each detected with the right report and Lua line; a checked run
-- records and goes on; races by happens-before; every op clean with --check all.
local lab = require("shmemlab")
local check = require("shmemlab.check")
local runner = require("shmemlab.runner")

local FIX = "spec/fixtures/broken/"

-- run a fixture in a checked machine: its reports and the machine
local function run_fixture(name)
  local fx = dofile(FIX .. name .. ".lua")
  local m = lab.machine{ pes = fx.pes, check = fx.check }
  m:launch(fx.kernel, fx.block_dim, fx.setup(m))
  return m:check_reports(), m, fx
end

-- the text of a site id
local function site(m, id) return m:state().sites[id] end

describe("checked runs", function()
  local cases = { "oob_remote_put", "ub_overread", "missing_mte2_mte3", "missing_mte3_s",
                  "missing_barrier", "wrong_signal_deadlock", "double_set_flag", "uninit_ub" }
  for _, name in ipairs(cases) do
    it("detect " .. name .. " with the right report and line", function()
      local reports, m, fx = run_fixture(name)
      assert.equal(1, #reports)
      local r = reports[1]
      assert.equal(fx.expect, r.kind)
      assert.equal(FIX .. name .. ".lua:" .. fx.line, site(m, r.site))
      if fx.other then
        assert.equal(FIX .. name .. ".lua:" .. fx.other, site(m, r.other_site))
      end
      if fx.what then assert.matches(fx.what, r.what, 1, true) end
      local text, errors = check.summary(m)
      assert.equal(r.count, errors)
      assert.matches("ERROR SUMMARY: " .. errors .. " error", text, 1, true)
      assert.matches(name .. ".lua:" .. fx.line, text, 1, true)
    end)
  end

  it("name the access, space, buffer, offset, length, PE, block, frame and time", function()
    local reports = run_fixture("oob_remote_put")
    local r = reports[1]
    assert.same({ "out_of_bounds", true, 260, "symmetric heap", "dst", 1, 0, 256, 0, 0, 1 },
                { r.kind, r.write, r.bytes, r.space, r.buffer, r.pe, r.offset, r.size, r.by_pe,
                  r.by_block, r.frame })
    assert.equal(2, r.count)                         -- both PEs, one distinct report
    assert.is_number(r.time_us)
  end)

  it("report both sides of a race: pipe, block and PE of each", function()
    local reports = run_fixture("missing_mte3_s")
    local r = reports[1]
    assert.same({ "race", false, "MTE2", 1, 0, "MTE3", 0, 0, true },
                { r.kind, r.write, r.pipe, r.by_pe, r.by_block, r.other_pipe, r.other_pe,
                  r.other_block, r.other_write })
  end)

  it("go on after an error, skip the access and touch nothing outside", function()
    local m = lab.machine{ pes = 1, check = "memcheck" }
    local a = m:alloc("int32", 8, "a"):fill("iota")
    local guard = m:alloc("int32", 8, "guard"):fill("const", 7)
    local reached = false
    m:launch(function(k)
      local ub = k:ub("int32", 16)
      k:data_copy(ub, a, 16)                         -- read past a
      k:data_copy(a:sub(4), ub, 8)                   -- write past a
      k:pipe_barrier("ALL")
      reached = true
    end, 1)
    assert.is_true(reached)
    assert.equal(2, #m:check_reports())
    assert.same({ 7, 7, 7, 7, 7, 7, 7, 7 }, guard:on(0):read(0, 8))
    assert.same({ 0, 1, 2, 3, 4, 5, 6, 7 }, a:on(0):read(0, 8))
    -- the same kernel unchecked stops at the first
    local u = lab.machine{ pes = 1 }
    local ua = u:alloc("int32", 8)
    local ok, err = pcall(function() u:launch(function(k)
      local ub = k:ub("int32", 16); k:data_copy(ub, ua, 16) end, 1) end)
    assert.is_false(ok)
    assert.matches("out of bounds: read data_copy of 64 bytes", err, 1, true)
  end)

  it("report a race even when this run's timing made it harmless", function()
    -- the reader waits 50 us of local copies before reading: the writer's data
    -- has landed by then, the output is right, and it is still a race
    local m = lab.machine{ pes = 2, check = "racecheck" }
    local buf = m:malloc("int32", 256, "buf")
    local src = m:alloc("int32", 256, "src"):fill("iota_pe")
    local big = m:alloc("int32", 48 * 1024, "big")
    local out = m:alloc("int32", 256, "out")
    m:launch(function(k)
      local ub = k:ub("int32", 48 * 1024)
      if k.pe == 1 then
        k:data_copy(ub, src, 256)
        k:set_flag("MTE2_MTE3", 0); k:wait_flag("MTE2_MTE3", 0)
        k:data_copy(buf, ub, 256)                    -- PE 1 writes its buf
        k:pipe_barrier("ALL")
      else
        for _ = 1, 20 do k:data_copy(ub, big, 48 * 1024); k:pipe_barrier("ALL") end
        k:mte_get_nbi(out, k:ptr(buf, 1), ub, 1024, 256, 1, 0)
        k:pipe_barrier("ALL")
      end
    end, 1)
    local wrong = out:on(0):compare(src:on(1))
    assert.equal(0, wrong)                           -- harmless in this run
    local reports = m:check_reports()
    assert.equal(1, #reports)
    assert.equal("race", reports[1].kind)
  end)

  it("order accesses through a signal the reader observed: no race", function()
    local m = lab.machine{ pes = 2, check = "racecheck" }
    local buf = m:malloc("int32", 256)
    local sig = m:malloc("int32", 8)
    local src = m:alloc("int32", 256):fill("iota")
    m:launch(function(k)
      local ub = k:ub("int32", 256)
      if k.pe == 0 then
        k:mte_put_nbi(buf, src, ub, 1024, 256, 1, 0)
        k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
        k:signal_op(sig, 1, lab.SIGNAL_SET, 1)
      else
        k:signal_wait_until(sig, lab.CMP_EQ, 1)
        k:data_copy(ub, buf, 256)
        k:pipe_barrier("ALL")
      end
    end, 1)
    assert.same({}, m:check_reports())
  end)

  it("deduplicate by line pair and buffer, with counts, and never truncate", function()
    local m = lab.machine{ pes = 4, check = "memcheck" }
    local a = m:alloc("int32", 8, "a")
    local b = m:alloc("int32", 8, "b")
    m:launch(function(k)
      local ub = k:ub("int32", 16)
      for _ = 1, 3 do k:data_copy(ub, a, 16) end      -- one line, 3 x 4 PEs x 2 blocks
      k:data_copy(ub, b, 16)
    end, 2)
    local reports = m:check_reports()
    assert.equal(2, #reports)
    assert.equal(24, reports[1].count)
    assert.equal(8, reports[2].count)
    local text, n = check.summary(m)
    assert.equal(32, n)
    assert.matches("(24 occurrences)", text, 1, true)
    assert.matches("ERROR SUMMARY: 32 errors (2 distinct)", text, 1, true)
  end)

  it("report flags left set at kernel end and use of a freed buffer", function()
    local m = lab.machine{ pes = 1, check = "all" }
    local gone = m:malloc("int32", 8, "gone")
    m:free(gone)
    m:launch(function(k)
      local ub = k:ub("int32", 8)
      k:set_flag("MTE2_S", 3)
      k:data_copy(ub, gone, 8)
    end, 1)
    local kinds = {}
    for _, r in ipairs(m:check_reports()) do kinds[r.kind] = r.what or true end
    assert.matches("flag MTE2_S id 3 left set at kernel end", kinds.sync, 1, true)
    assert.is_truthy(kinds.use_after_free)
  end)

  it("stop a block that loops forever without a primitive (instruction budget)", function()
    local m = lab.machine{ pes = 1, instruction_budget = 1000000 }
    local ok, err = pcall(function() m:launch(function() while true do end end, 1) end)
    assert.is_false(ok)
    assert.matches("instruction budget exceeded", err, 1, true)
    assert.matches("check_spec.lua", err, 1, true)
    local r = m:launch(function(k) for _ = 1, 1000 do k:quiet() end end, 1)   -- usable
    assert.is_true(r.e2e_us > 0)
  end)

  it("stop runaway waits at the virtual-time limit with the deadlock-style report", function()
    local m = lab.machine{ pes = 1, time_limit_us = 100 }
    local flag = m:alloc("int32", 8, "flag")
    local ok, err = pcall(function() m:launch(function(k)
      local ub = k:ub("int32", 8)
      while true do                                   -- a poll loop that never succeeds
        k:data_copy(ub, flag, 8)
        k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
        if k:get_value(ub, 0) == 1 then break end
      end
    end, 1) end)
    assert.is_false(ok)
    assert.matches("virtual-time limit of 100 us reached; blocks still waiting:\n", err, 1, true)
    assert.matches("PE 0 block 0", err, 1, true)
  end)

  it("exit 1 from run_op.lua when a checked run reports errors", function()
    local cli = require("shmemlab.cli")
    local sink = { write = function(self) return self end }
    assert.equal(1, cli.main({ "spec/fixtures/ops/stale_copy.lua", "--pes", "1", "-w", "0", "-n",
                               "1", "--tool", "racecheck", "--baseline", "none" }, sink, sink))
  end)

  for _, pes in ipairs({ 2, 8 }) do
    it("run every operator and baseline clean with --check all on " .. pes .. " PEs", function()
      for _, name in ipairs(runner.list()) do
        local op, ran = runner.load_op(name), 0
        for _, family in ipairs(runner.BASELINES) do
          if runner.load_baseline(op, family) then
            local r = runner.run(name, { pes = pes, warmup = 0, iters = 1, count = 1000 + 3,
              local_tokens = 16, hidden = 256, check = "all", baseline = family })
            local b = name .. " " .. family .. " baseline"
            assert.equal(0, r.shmem.check.wrong, name)
            assert.equal(0, r.shmem.sanitizer.errors, name .. ": " .. r.shmem.sanitizer.text)
            assert.equal(0, r.baseline.check.wrong, b)
            assert.equal(0, r.baseline.sanitizer.errors, b .. ": " .. r.baseline.sanitizer.text)
            ran = ran + 1
          end
        end
        assert.is_true(ran > 0, name .. ": no baseline")
      end
    end)
  end
end)
