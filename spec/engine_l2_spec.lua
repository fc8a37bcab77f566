-- The L2 of a PE (issue 22, defect 4: reads of data that sits in L2 ran at
-- HBM speed). The CANN platform ini gives l2_read_rate 110 B/cycle beside
-- ddr_read_rate 32 and l2_size 192 MiB: an MTE2 read of the PE's own GM
-- runs at the L2 rate for bytes written or read there recently (within the
-- L2's bytes), at the HBM rate for the rest. Exact virtual times.

local H = require("spec.helpers.engine")
local lab = H.lab

local N = 8 * 1024                -- int32: a 32 KiB tile

-- kernel time of one block of PE 0: write the tile to x (MTE3), then write
-- `extra` int32 to w, then read `from` (x or z) back into UB (MTE2)
local function run(from, extra, overrides)
  local opts = { pes = 1 }
  for k, v in pairs(overrides or {}) do opts[k] = v end
  local m = lab.machine(opts)
  local x = m:malloc("int32", N, "x")
  local z = m:malloc("int32", N, "z")
  local w = m:malloc("int32", math.max(extra, 8), "w")
  local r = m:launch(function(k)
    local ub = k:ub("int32", N)
    k:data_copy(x, ub, N)
    if extra > 0 then
      local big = k:ub("int32", 8192)
      for i = 0, extra // 8192 - 1 do k:data_copy(w:sub(i * 8192, 8192), big, 8192) end
    end
    k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
    k:data_copy(ub, from == "x" and x or z, N)
  end, 1)
  return r.kernel_us[1], m:params()
end

describe("L2 (issue 22, defect 4)", function()
  it("the profile takes its figures from the ini", function()
    local p = lab.soc("Ascend910B")
    assert.are.equal(110, p.l2_read_bytes_per_cycle)
    assert.are.equal(201326592, p.l2_bytes)
    assert.are.equal(32, p.mte2_bytes_per_cycle)
  end)

  it("a tile read right after it was written on the same PE reads at the L2 rate", function()
    local hit, p = run("x", 0)
    local miss = run("z", 0)
    local bytes = N * 4
    -- the same kernel but for the read's rate: 32 KiB at 110 against 32 B/cycle
    local want = bytes / (p.mte2_bytes_per_cycle * p.core_ghz)
               - bytes / (p.l2_read_bytes_per_cycle * p.core_ghz)
    assert.near(want / 1e3, miss - hit, 1e-5)
    assert.near(0.40339, miss - hit, 1e-5)           -- 568.89 - 165.49 ns
  end)

  it("bytes never touched read at the HBM rate: no L2 means the same time", function()
    local miss = run("z", 0)
    local none = run("z", 0, { l2_bytes = 0 })
    local nohit = run("x", 0, { l2_bytes = 0 })
    assert.are.equal(none, miss)
    assert.are.equal(none, nohit)
  end)

  it("bytes evicted past the L2's capacity read at the HBM rate again", function()
    local l2 = { l2_bytes = 64 * 1024 }             -- a 64 KiB L2
    local kept = run("x", 8192, l2)                  -- 32 KiB more written: x stays
    local evicted = run("x", 16384, l2)              -- 64 KiB more: x is out
    local kept_miss = run("z", 8192, l2)
    local evicted_miss = run("z", 16384, l2)
    assert.is_true(kept < kept_miss)
    assert.are.equal(evicted_miss, evicted)
  end)

  it("a read half in the L2 streams its halves at their rates", function()
    local l2 = { l2_bytes = 48 * 1024 }              -- x's first half leaves
    local half = run("x", 8192, l2)
    local miss, p = run("z", 8192, l2)
    local bytes = N * 4
    local cycles = bytes / 2 / p.l2_read_bytes_per_cycle + bytes / 2 / p.mte2_bytes_per_cycle
    local want = bytes / (p.mte2_bytes_per_cycle * p.core_ghz) - cycles / p.core_ghz
    assert.near(want / 1e3, miss - half, 1e-5)
  end)
end)
