-- m:launch's own bookkeeping (core/lshmemlab_launch.c): the kernel table's strings
-- and the results a block resumes with.

local H = require("spec.helpers.engine")
local lab = H.lab

describe("m:launch with a kernel table", function()
  -- m:launch read the table's name and type, then replaced the table on its
  -- stack by the kernel function and popped the strings: nothing referred to
  -- them any more, and a collection during the launch freed them before the
  -- task rows were written (heap-use-after-free under make test-asan; the
  -- rows got garbage names in a plain build when the memory was reused).
  it("keeps the name and type alive while a collection runs in the kernel", function()
    local m = lab.machine{ pes = 2 }
    local name = string.rep("a_long_kernel_name_", 8) .. "x"
    local ktype = string.rep("AIV_TYPE_", 6) .. "y"
    for round = 1, 3 do
      -- built on the fly: the launch holds the only reference to the table
      m:launch({ name = name:sub(1, -2) .. round, type = ktype:sub(1, -2) .. round,
                 kernel = function(k)
                   collectgarbage(); collectgarbage()
                   -- fresh strings of the same size reuse the freed memory
                   local junk = {}
                   for i = 1, 64 do junk[i] = string.rep(string.char(64 + i % 26), #name) end
                   k:pipe_barrier("ALL")
                   collectgarbage()
                   return #junk
                 end }, 2)
      local rows = m:tasks(0)
      local last = rows[#rows]
      assert.are.equal(name:sub(1, -2) .. round, last.name)
      assert.are.equal(ktype:sub(1, -2) .. round, last.type)
      assert.are.equal(name:sub(1, -2) .. round, m:tasks(1)[#m:tasks(1)].name)
    end
  end)

  it("a table without name or type records the defaults", function()
    local m = lab.machine{ pes = 1 }
    m:launch({ kernel = function(k) k:pipe_barrier("ALL") end }, 1)
    local rows = m:tasks(0)
    assert.are.equal("kernel", rows[#rows].name)
    assert.are.equal("AIV", rows[#rows].type)
  end)
end)
