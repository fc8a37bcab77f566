-- Checked runs cache the Lua lines they resolve (one text per line, not per
-- primitive): the cache must tell apart the same line number in two chunks,
-- one helper line reached from two operator lines, and a chunk loaded again
-- under another name, in the same launch and across launches.
local lab = require("shmemlab")
local op = require("shmemlab.op")

local HERE = "spec/check_site_cache_spec.lua:"

-- the site texts of a machine's reports, sorted
local function texts(m)
  local t, sites = {}, m:state().sites
  for _, r in ipairs(m:check_reports(true)) do t[#t + 1] = sites[r.site] end
  table.sort(t)
  return t
end

-- a kernel chunk whose line 1 reads 64 elements of an 8-element buffer
local SRC = "local k, a = ...; local ub = k:ub('int32', 64); k:data_copy(ub, a, 64)"

describe("checked-run site cache", function()
  it("tells the same line of two chunks apart", function()
    local m = lab.machine{ pes = 1, check = "memcheck" }
    local a = m:malloc("int32", 8, "a")
    local one = assert(load(SRC, "=one.lua"))
    local two = assert(load(SRC, "=two.lua"))
    m:launch(function(k) one(k, a); two(k, a); one(k, a) end, 1)
    assert.same({ "one.lua:1", "two.lua:1" }, texts(m))
    -- a chunk of the same text under a third name, in a later launch
    local three = assert(load(SRC, "=three.lua"))
    m:launch(function(k) three(k, a); one(k, a) end, 1)
    assert.same({ "one.lua:1", "three.lua:1" }, texts(m))
  end)

  it("tells one helper line reached from two operator lines apart", function()
    local m = lab.machine{ pes = 1, check = "initcheck" }
    local src = m:malloc("int32", 64, "src")             -- never written
    local dst = m:malloc("int32", 64, "dst")
    local lines = {}
    m:launch(function(k)
      local ub = k:ub("int32", 64)
      for i = 1, 3 do
        lines[1] = debug.getinfo(1, "l").currentline + 1
        op.copy_gm(k, dst, src, 64, ub)
        lines[2] = debug.getinfo(1, "l").currentline + 1
        op.copy_gm(k, dst, src, 64, ub)
        assert(i > 0)
      end
    end, 1)
    local t = texts(m)
    assert.equal(2, #t)
    for i = 1, 2 do
      local first = HERE .. lines[i] .. " (via "
      assert.equal(first, t[i]:sub(1, #first))
    end
    assert.equal(t[1]:match("%(via (.*)%)$"), t[2]:match("%(via (.*)%)$"))
  end)
end)
