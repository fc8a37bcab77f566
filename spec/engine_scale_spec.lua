-- Engine memory at scale: UB backed as far as it is touched, a machine's
-- memory given back by m:close(). Each case runs in a fresh lua5.4 (memory
-- an earlier spec freed into malloc's lists would hide or fake growth) and
-- prints resident figures from /proc/self/statm (Linux); under ASan (its
-- quarantine keeps freed memory) they say nothing and are not asserted.

local MEASURABLE = io.open("/proc/self/statm") ~= nil
                   and not (os.getenv("LD_PRELOAD") or ""):find("asan")

local PRELUDE = [[
local lab = require("shmemlab")
local MiB = 2 ^ 20
local function rss()
  local f = io.open("/proc/self/statm")
  if f == nil then return 0 end
  local _, pages = f:read("n", "n")
  f:close()
  return pages * 4096
end
-- resident growth of f(), with no collection during it
local function growth(f)
  collectgarbage()
  collectgarbage("stop")
  local r0 = rss()
  f()
  local r1 = rss()
  collectgarbage("restart")
  return r1 - r0
end
]]

-- run code in a fresh lua5.4 with this tree's paths; returns its stdout, which
-- must end with "ok"
local function fresh(code)
  local file = os.tmpname()
  local f = assert(io.open(file, "w"))
  f:write(string.format("package.path = %q\npackage.cpath = %q\n", package.path,
                        package.cpath), PRELUDE, code, '\nprint("ok")\n')
  f:close()
  local p = assert(io.popen("lua5.4 " .. file .. " 2>&1"))
  local out = p:read("a")
  p:close()
  os.remove(file)
  assert(out:find("ok\n$"), out)
  return out
end

-- the number printed as name=value
local function figure(out, name)
  return assert(tonumber(out:match(name .. "=([%d%.%-e]+)")), name .. " missing:\n" .. out)
end

-- the case's RSS grew by less than an eighth of the UB it allocated
-- (zero-filled in full, it grew by all of it)
local function assert_backed_as_touched(out)
  if not MEASURABLE then return end
  local grew, ub = figure(out, "grew"), figure(out, "ub")
  assert.is_true(grew < ub / 8, string.format("RSS grew by %.1f MiB of %.1f MiB", grew / 2 ^ 20,
                                              ub / 2 ^ 20))
end

describe("m:events()", function()
  it("counts the events the scheduler handled, the same for the same launch", function()
    local lab = require("shmemlab")
    local counts = {}
    for run = 1, 2 do
      local m = lab.machine{ pes = 4 }
      local g = m:malloc("int32", 1024)
      assert.equals(0, m:events())
      for _ = 1, run do
        m:launch(function(k)
          local ub = k:ub("int32", 1024)
          k:mte_put_nbi(g, g, ub, 4096, 1024, (k.pe + 1) % k.n_pes, 0)
          k:quiet()
        end, 2)
      end
      counts[run] = m:events()
      m:close()
    end
    assert.is_true(counts[1] > 8)               -- at least a wake and a landing per block
    assert.equals(2 * counts[1], counts[2])     -- a second launch adds as many again
  end)
end)

describe("engine memory at scale", function()
  it("a 190 KiB UB buffer of which one element is written costs a page, not 190 KiB", function()
    local out = fresh [[
local m = lab.machine{ pes = 16 }
local cores, elems = m:params().aiv_cores, 190 * 1024 // 4
local far = {}
local grew = growth(function()
  m:launch(function(k)
    local ub = k:ub("int32", elems)
    k:set_value(ub, 0, k.pe * 100 + k.block)
    local v = k:get_value(ub, elems - 1)               -- never written: zero
    assert(k:get_value(ub, 0) == k.pe * 100 + k.block)
    far[#far + 1] = v
  end, cores)
end)
assert(#far == 16 * cores)
for _, v in ipairs(far) do assert(v == 0) end
print(string.format("grew=%d ub=%d", grew, 16 * cores * elems * 4))
]]
    assert_backed_as_touched(out)
  end)

  it("initcheck's shadow of UB is backed as it is touched too, and still reports", function()
    local out = fresh [[
local m = lab.machine{ pes = 16, check = "initcheck" }
local cores, elems = m:params().aiv_cores, 190 * 1024 // 4
local out = m:alloc("int32", 8 * cores)
local grew = growth(function()
  m:launch(function(k)
    local ub = k:ub("int32", elems)
    for i = 0, 7 do k:set_value(ub, i, i) end
    k:data_copy(out:sub(k.block * 8, 8), ub, 8)
  end, cores)
end)
assert(#m:check_reports() == 0)
m:launch(function(k)
  if k.pe ~= 0 or k.block ~= 0 then return end
  local ub = k:ub("int32", elems)
  k:data_copy(out:sub(0, 8), ub:sub(8, 8), 8)          -- never written: uninitialised
end, 1)
local reports = m:check_reports()
assert(#reports == 1 and reports[1].kind == "uninitialized_read", #reports)
m:launch(function(k)                                   -- a new allocation holds nothing
  if k.pe ~= 0 or k.block ~= 0 then return end
  k:data_copy(out:sub(0, 8), k:ub("int32", 8), 8)
end, 1)
assert(#m:check_reports() == 2, #m:check_reports())
print(string.format("grew=%d ub=%d", grew, 16 * cores * elems * 4))
]]
    assert_backed_as_touched(out)
  end)

  it("m:close() gives the machine's memory back at once and is idempotent", function()
    local out = fresh [[
local m = lab.machine{ pes = 64, pes_per_server = 64 }
local touched = growth(function()
  m:alloc("int32", 1024 * 1024, "big"):fill("iota")    -- 4 MiB on each of 64 PEs
  m:launch(function(k) k:set_value(k:ub("int32", 1024), 0, 1) end, 8)
end)
local freed = -growth(function() m:close() end)
m:close()                                              -- a second close: nothing
assert(tostring(m) == "shmemlab machine (closed)")
local ok, e = pcall(m.alloc, m, "int32", 4)
assert(not ok and e:find("machine is closed", 1, true), e)
print(string.format("touched=%d freed=%d", touched, freed))
]]
    if MEASURABLE then
      local touched, freed = figure(out, "touched"), figure(out, "freed")
      assert.is_true(touched > 200 * 2 ^ 20, string.format("touched %.1f MiB", touched / 2 ^ 20))
      assert.is_true(freed > 0.9 * touched, string.format("%.1f of %.1f MiB given back",
                                                          freed / 2 ^ 20, touched / 2 ^ 20))
    end
  end)
end)
