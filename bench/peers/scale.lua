-- bench/peers/scale.lua: shmemlab's timing-only allgather at scale against
-- SimGrid's SMPI on the same shape (bench/peers/window.c): every rank takes
-- BYTES from every other, WINDOW transfers in flight per rank (shmemlab's
-- blocks), no bytes moved on either side. Per rank count: both simulated
-- times and both processes' CPU seconds (user + system, the shell's `times`),
-- and their ratio. Run with nice; each side is one process, one after the
-- other (SMPI at 512 ranks takes minutes).
--
--   lua5.4 bench/peers/scale.lua [--pes 256,512] [--bytes 1M] [--window 48]
--       [--algo flat|hier] [--settle-ns N] [--dir build/peers] [--side both|shmemlab|smpi]
--
-- shmemlab runs `bench/scale.lua --one allgather` (LUA_PATH_5_4 / LUA_CPATH_5_4 as
-- for the other benches: `make` prints them as RUN_ENV) with --algo flat by
-- default, the same shape: each PE reads every other PE's shard, one get in
-- flight per block (hier, the default of run_op at this size, relays through
-- one PE of each server: fewer, larger transfers).
-- The SMPI platform is a cluster of the profile's RDMA NICs: a private link
-- per rank of rdma_GBps each way (SPLITDUPLEX) and half of rdma_alpha_ns,
-- so a route (the sender's link up, the receiver's down) has the profile's
-- latency. Pairs in one server go over the NICs there, over HCCS in
-- shmemlab: 7 of a rank's n - 1 peers (3% at 256 ranks), so the simulated
-- times agree only roughly; the CPU is what this compares.
local ROOT = debug.getinfo(1, "S").source:match("^@(.*)/bench/peers/[^/]*$") or "."
package.path = ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;" .. ROOT .. "/bench/?.lua;"
  .. package.path
local shell = require("shell")
local q, bytes_of, timed = shell.q, shell.bytes_of, shell.timed

local SOC = "Ascend910B"
local LUA = os.getenv("LUA") or "lua5.4"
local SMPI_CFG = { "smpi/simulate-computation:no", "smpi/bw-factor:0:1", "smpi/lat-factor:0:1",
                   "network/crosstraffic:0" }

-- the cluster platform and hostfile of n ranks under dir
local function platform(dir, n)
  local p = require("shmemlab.socs." .. SOC)
  os.execute("mkdir -p " .. q(dir))
  local f = assert(io.open(string.format("%s/scale%d.xml", dir, n), "w"))
  f:write("<?xml version='1.0'?>\n",
          '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n',
          string.format("<!-- written by bench/peers/scale.lua from the %s profile: %d ranks, "
                        .. "RDMA NICs -->\n", SOC, n),
          '<platform version="4.1">\n',
          string.format('  <cluster id="c" prefix="pe" suffix="" radical="0-%d" speed="1Gf" '
                        .. 'bw="%gGBps" lat="%gns" sharing_policy="SPLITDUPLEX"/>\n', n - 1,
                        p.rdma_GBps, p.rdma_alpha_ns / 2),
          "</platform>\n")
  f:close()
  f = assert(io.open(string.format("%s/scale%d.hosts", dir, n), "w"))
  for i = 0, n - 1 do f:write("pe", i, "\n") end
  f:close()
end

local function shmemlab(n, bytes, window, algo, settle)
  local out, _, rc, cpu = timed(string.format(
      "%s %s --one allgather %s", LUA, q(ROOT .. "/bench/scale.lua"),
      q(string.format("{ pes = %d, block_dim = %d, timing_only = true, count = %d, algo = %q%s }",
                      n, window, bytes // 4, algo,
                      settle and string.format(", settle_ns = %d", settle) or ""))))
  assert(rc == 0 and out:match("events="), "shmemlab failed:\n" .. out)
  return tonumber(out:match("now_us=([%d.]+)")), tonumber(out:match("events=(%d+)")),
         tonumber(out:match(" cpu=([%d.]+)")), cpu
end

local function smpi(dir, n, bytes, window)
  local cfg = {}
  for _, c in ipairs(SMPI_CFG) do cfg[#cfg + 1] = "--cfg=" .. c end
  local out, _, rc, cpu = timed(string.format(
      "smpirun -np %d -platform %s -hostfile %s %s --log=root.thres:warning %s %d %d", n,
      q(string.format("%s/scale%d.xml", dir, n)), q(string.format("%s/scale%d.hosts", dir, n)),
      table.concat(cfg, " "), q(dir .. "/window"), bytes, window))
  local us = out:match("sim_us=([%d.]+)")
  assert(us and rc == 0, "smpirun failed:\n" .. out)
  return tonumber(us), cpu
end

local o = { pes = "256,512", bytes = "1M", window = "48", dir = ROOT .. "/build/peers",
            side = "both", algo = "flat", ["settle-ns"] = false }
for i = 1, #arg, 2 do
  local k = arg[i]:match("^%-%-(.+)$")
  assert(k and o[k] ~= nil and arg[i + 1], "usage: scale.lua [--pes L] [--bytes B] [--window W] "
         .. "[--algo flat|hier] [--settle-ns N] [--dir D] [--side both|shmemlab|smpi]")
  o[k] = arg[i + 1]
end
local bytes, window = bytes_of(o.bytes), assert(tonumber(o.window), "--window N")
local settle = o["settle-ns"] and assert(math.tointeger(tonumber(o["settle-ns"])), "--settle-ns N")
assert(o.algo == "flat" or o.algo == "hier", "--algo flat|hier")
if o.side ~= "shmemlab" then
  assert(os.execute(string.format("mkdir -p %s && smpicc -O2 -o %s %s", q(o.dir),
                                  q(o.dir .. "/window"), q(ROOT .. "/bench/peers/window.c"))),
         "smpicc failed")
end
print(string.format("timing-only allgather, %s per rank, %d in flight per rank (%s; shmemlab "
                    .. "--algo %s, settle_ns %s): shmemlab against SMPI, CPU seconds of each "
                    .. "whole process (run cpu: shmemlab's launch alone)", o.bytes, window, SOC,
                    o.algo, settle or "0"))
print(string.format("%6s | %12s %10s %8s %8s | %12s %8s | %7s", "ranks", "shmemlab us",
                    "events", "run cpu", "cpu", "SMPI us", "cpu", "cpu x"))
for s in o.pes:gmatch("[^,]+") do
  local n = assert(math.tointeger(tonumber(s)), "--pes: integers")
  local us, ev, run, cpu, sus, scpu = 0, 0, 0, 0, 0, 0
  if o.side ~= "smpi" then us, ev, run, cpu = shmemlab(n, bytes, window, o.algo, settle) end
  if o.side ~= "shmemlab" then
    platform(o.dir, n)
    sus, scpu = smpi(o.dir, n, bytes, window)
  end
  print(string.format("%6d | %12.3f %10d %8.2f %8.2f | %12.3f %8.2f | %6.2fx", n, us, ev, run,
                      cpu, sus, scpu, scpu > 0 and cpu / scpu or 0))
  io.stdout:flush()
end
