-- The CANN SHMEM performance guide's placement choices in one lab: the same
-- point-to-point put (PE 0 to PE 1 of one server, and to PE 8 of another) by
-- the AIV cores' MTE (one block, and split over 16 blocks), by the SDMA
-- engine from one block (no MTE pipe used), by RoCE through the NICs, and on
-- Ascend950 by UDMA; each line gives the kernel time and the rate it reached.
--                      Run: lua examples/engine_placement.lua [MiB]
local root = (debug.getinfo(1, "S").source:match("^@(.*)/examples/[^/]*$") or ".")
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
package.cpath = root .. "/build/?.so;" .. package.cpath
require("shmemlab.lua54").ensure()       -- started by another Lua: re-run under lua5.4
local lab = require("shmemlab")

local MIB = tonumber(arg[1]) or 4
local N = math.floor(MIB * 1024 * 1024 / 4)   -- int32 elements (no `//`: Lua 5.1 reads this file)
local UB = 16 * 1024                        -- int32 of one MTE staging buffer (64 KiB)

-- how each placement moves x into PE dst's y from PE 0 (n elements at off)
local MOVES = {
  mte = function(k, y, x, ub, dst, off, n)
    k:mte_put_nbi(y:sub(off, n), x:sub(off, n), ub, UB * 4, n, dst, 0)
    k:quiet()
  end,
  sdma = function(k, y, x, ub, dst, off, n)
    k:sdma_put_nbi(y:sub(off, n), x:sub(off, n), ub, n, dst, 0)
    k:sdma_quiet(ub, 0)
  end,
  roce = function(k, y, x, ub, dst, off, n)
    k:roce_put_nbi(y:sub(off, n), x:sub(off, n), ub, n, dst)
    k:roce_quiet(dst, ub, 0)
  end,
  udma = function(k, y, x, ub, dst, off, n)
    k:udma_put_nbi(y:sub(off, n), x:sub(off, n), ub, n, dst)
    k:udma_quiet(dst)
  end,
}

-- one placement on a fresh machine: kernel time of PE 0, and whether y landed
local function run(soc, pes, how, blocks, dst)
  local m = lab.machine{ soc = soc, pes = pes }
  local x = m:malloc("int32", N, "x"):fill("iota_pe")
  local y = m:malloc("int32", N, "y")
  local r = m:launch(function(k)
    if k.pe ~= 0 then return end
    local share = math.floor(N / k.block_num)
    local n = k.block == k.block_num - 1 and N - share * k.block or share
    MOVES[how](k, y, x, k:ub("int32", UB), dst, share * k.block, n)
  end, blocks)
  return r.kernel_us[1], y:on(dst):read(N - 1) == N - 1
end

local CASES = {
  { "Ascend910B", 16, "mte", 1, 1 }, { "Ascend910B", 16, "mte", 16, 1 },
  { "Ascend910B", 16, "sdma", 1, 1 }, { "Ascend910B", 16, "roce", 1, 1 },
  { "Ascend910B", 16, "roce", 1, 8 }, { "Ascend910B", 16, "mte", 16, 8 },
  { "Ascend950", 4, "mte", 16, 1 }, { "Ascend950", 4, "udma", 1, 1 },
}
local bad = 0
for _, c in ipairs(CASES) do
  local soc, pes, how, blocks, dst = table.unpack(c)
  local us, ok = run(soc, pes, how, blocks, dst)
  print(string.format("%-10s %-4s %2d block%s PE 0 -> PE %d (%s): %9.3f us  %7.2f GB/s  %s",
                      soc, how, blocks, blocks == 1 and " " or "s", dst,
                      how == "roce" and "NICs" or lab.machine{ soc = soc, pes = pes }:path(0, dst), us,
                      N * 4 / us / 1e3, ok and "landed" or "WRONG"))
  if not ok then bad = bad + 1 end
end
os.exit(bad == 0 and 0 or 1)
