-- Checked-run reports point at the right place (issue 9, defect 8): synccheck
-- deduplicates by (kind, line, pipe or flag) whatever the moment's state,
-- "left set" names the set_flag, a stuck barrier counts the blocks that
-- finished, and a helper's access names the operator's line first.
local lab = require("shmemlab")
local check = require("shmemlab.check")

local HERE = "spec/check_sites_spec.lua:"

-- the text of a site id
local function site(m, id) return m:state().sites[id] end

-- the line (in this file) of the first call of `needle` after line `from`
local function line_of(needle, from)
  local n = 0
  for l in io.lines("spec/check_sites_spec.lua") do
    n = n + 1
    if n > (from or 0) and l:find(needle, 1, true) then return n end
  end
end

describe("checked-run reports", function()
  it("deduplicate stuck waits at one line into one report with a count", function()
    local m = lab.machine{ pes = 8, check = "synccheck", time_limit_us = 50 }
    local sig = m:malloc("int32", 8, "sig")
    m:launch(function(k)
      k:signal_wait_until(sig, lab.CMP_EQ, 100 + k.pe * 2 + k.block)   -- STUCK_WAIT
    end, 2)
    local reports = m:check_reports()
    assert.equal(1, #reports)
    assert.equal(16, reports[1].count)
    assert.equal(HERE .. line_of("STUCK_WAIT"), site(m, reports[1].site))
  end)

  it("deduplicate a wrong wait_flag line however many blocks stall at it", function()
    local m = lab.machine{ pes = 4, check = "synccheck", time_limit_us = 50 }
    local a = m:malloc("int32", 4096, "a")
    m:launch(function(k)
      local ub = k:ub("int32", 64)
      for i = 0, k.block do k:data_copy(ub, a:sub(i * 64), 64) end
      k:set_flag("MTE2_MTE3", 0)
      k:wait_flag("MTE3_MTE2", 0)        -- wrong: nobody sets it
    end, 4)
    local reports = m:check_reports()
    local kinds = {}
    for _, r in ipairs(reports) do kinds[#kinds + 1] = r.what:match("^[%w_]+") end
    assert.equal(2, #reports, table.concat(kinds, ","))
    assert.equal(16, reports[1].count)
    assert.equal(16, reports[2].count)
  end)

  it("point 'flag left set' at the set_flag, not the last primitive", function()
    local m = lab.machine{ pes = 1, check = "synccheck" }
    local a = m:malloc("int32", 64, "a")
    m:launch(function(k)
      local ub = k:ub("int32", 64)
      k:data_copy(ub, a, 64)
      k:set_flag("MTE2_MTE3", 1)          -- LEFT_SET
      k:pipe_barrier("ALL")
      k:data_copy(a, ub, 64)
    end, 1)
    local reports = m:check_reports()
    assert.equal(1, #reports)
    assert.matches("left set", reports[1].what, 1, true)
    assert.equal(HERE .. line_of("LEFT_SET"), site(m, reports[1].site))
  end)

  it("count the blocks that finished without a barrier, not the arrivals", function()
    local m = lab.machine{ pes = 2, check = "synccheck" }
    m:launch(function(k)
      if k.pe == 0 then k:barrier_all() end        -- 4 blocks wait, 4 finish
    end, 4)
    local reports = m:check_reports()
    assert.equal(1, #reports)
    assert.equal(4, reports[1].count)
    assert.equal("barrier_all not reached by every block: 4 of 8 arrived, 4 finished without it",
                 reports[1].what)
  end)

  it("name the operator's line first when a shared helper reads, the helper's second", function()
    local op = require("shmemlab.op")
    local m = lab.machine{ pes = 1, check = "initcheck" }
    local src = m:malloc("int32", 64, "src")             -- never written
    local dst = m:malloc("int32", 64, "dst")
    m:launch(function(k)
      op.copy_gm(k, dst, src, 64, k:ub("int32", 64))     -- HELPER_CALL
    end, 1)
    local reports = m:check_reports()
    assert.equal(1, #reports)
    assert.equal("uninitialized_read", reports[1].kind)
    local text = site(m, reports[1].site)
    local first = HERE .. line_of("HELPER_CALL") .. " (via "
    assert.equal(first, text:sub(1, #first))
    assert.matches("shmemlab/op.lua:%d+%)$", text)
    assert.matches(HERE .. line_of("HELPER_CALL") .. " (via ", check.summary(m), 1, true)
  end)

  it("name the operator's lines on both sides of a race inside a shared helper", function()
    local op = require("shmemlab.op")
    local m = lab.machine{ pes = 1, check = "racecheck" }
    local src = m:malloc("int32", 64, "src"):fill("iota")
    local dst = m:malloc("int32", 64, "dst")
    m:launch(function(k)
      op.copy_gm(k, dst, src, 64, k:ub("int32", 64))     -- RACE_CALL: every block, no order
    end, 2)
    local reports = m:check_reports()
    assert.is_true(#reports >= 1)
    local want = HERE .. line_of("RACE_CALL") .. " (via "
    for _, r in ipairs(reports) do
      assert.equal("race", r.kind)
      assert.equal(want, site(m, r.site):sub(1, #want))
      assert.equal(want, site(m, r.other_site):sub(1, #want))
    end
  end)
end)
