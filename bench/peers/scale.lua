-- bench/peers/scale.lua: shmemlab's timing-only allgather at scale against
-- SimGrid's SMPI on the same shape (bench/peers/window.c): every rank takes
-- BYTES from every other, WINDOW transfers in flight per rank (shmemlab's
-- blocks), no bytes moved on either side. Per rank count and shmemlab settle
-- window: both simulated times and their difference, both processes' CPU seconds
-- (user + system, the shell's `times`) and their ratio. Each side is one process,
-- one after the other (SMPI at 512 ranks takes about a minute; shmemlab exact at
-- 512 longer, so exact runs up to --exact-max ranks). `make bench-peers-scale`
-- writes its output into doc/performance.md.
--
--   lua5.4 bench/peers/scale.lua [--pes 256,512] [--bytes 1M] [--window 48]
--       [--algo flat|hier] [--settle-ns 1000,0] [--exact-max 256] [--dir build/peers]
--       [--side both|shmemlab|smpi]
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

-- shmemlab's side on n ranks under the settle window settle (ns): its simulated us,
-- events, the launch's CPU and the whole process's CPU seconds
local function shmemlab(n, bytes, window, algo, settle)
  local out, _, rc, cpu = timed(string.format(
      "%s %s --one allgather %s", LUA, q(ROOT .. "/bench/scale.lua"),
      q(string.format("{ pes = %d, block_dim = %d, timing_only = true, count = %d, algo = %q, "
                      .. "settle_ns = %d }", n, window, bytes // 4, algo, settle))))
  assert(rc == 0 and out:match("events="), "shmemlab failed:\n" .. out)
  return tonumber(out:match("now_us=([%d.]+)")), tonumber(out:match("events=(%d+)")),
         tonumber(out:match(" cpu=([%d.]+)")), cpu
end

-- SMPI's side on n ranks (window.c built into dir): its simulated us and CPU seconds
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

-- the settle windows of --settle-ns (a list; 0 = exact), each an integer
local function windows_of(text)
  local out = {}
  for w in text:gmatch("[^,]+") do
    out[#out + 1] = assert(math.tointeger(tonumber(w)), "--settle-ns N[,N]")
  end
  return out
end

local o = { pes = "256,512", bytes = "1M", window = "48", dir = ROOT .. "/build/peers",
            side = "both", algo = "flat", ["settle-ns"] = "1000,0", ["exact-max"] = "256" }
for i = 1, #arg, 2 do
  local k = arg[i]:match("^%-%-(.+)$")
  assert(k and o[k] ~= nil and arg[i + 1], "usage: scale.lua [--pes L] [--bytes B] [--window W] "
         .. "[--algo flat|hier] [--settle-ns N[,N]] [--exact-max P] [--dir D] "
         .. "[--side both|shmemlab|smpi]")
  o[k] = arg[i + 1]
end
local bytes, window = bytes_of(o.bytes), assert(tonumber(o.window), "--window N")
local settles, exact_max = windows_of(o["settle-ns"]), assert(tonumber(o["exact-max"]), "--exact-max P")
assert(o.algo == "flat" or o.algo == "hier", "--algo flat|hier")
if o.side ~= "shmemlab" then
  assert(os.execute(string.format("mkdir -p %s && smpicc -O2 -o %s %s", q(o.dir),
                                  q(o.dir .. "/window"), q(ROOT .. "/bench/peers/window.c"))),
         "smpicc failed")
end
print(string.format("timing-only allgather, %s per rank, %d in flight per rank (%s, shmemlab "
                    .. "--algo %s) against SMPI on the same shape: simulated us of each, their "
                    .. "difference, CPU seconds of each whole process (run cpu: shmemlab's launch "
                    .. "alone) and their ratio (goal <= 0.25x); exact (window 0) up to %d ranks",
                    o.bytes, window, SOC, o.algo, exact_max))
print(string.format("%6s %7s | %12s %10s %8s %8s | %12s %8s | %7s %7s", "ranks", "window",
                    "shmemlab us", "events", "run cpu", "cpu", "SMPI us", "cpu", "us diff", "cpu x"))
for s in o.pes:gmatch("[^,]+") do
  local n = assert(math.tointeger(tonumber(s)), "--pes: integers")
  local sus, scpu = 0, 0
  if o.side ~= "shmemlab" then
    platform(o.dir, n)
    sus, scpu = smpi(o.dir, n, bytes, window)
  end
  for _, w in ipairs(settles) do
    local us, ev, run, cpu = 0, 0, 0, 0
    if o.side ~= "smpi" and (w > 0 or n <= exact_max) then
      us, ev, run, cpu = shmemlab(n, bytes, window, o.algo, w)
    end
    if us > 0 or o.side == "smpi" then
      print(string.format("%6d %7s | %12.3f %10d %8.2f %8.2f | %12.3f %8.2f | %6.2f%% %6.2fx", n,
                          w > 0 and w .. " ns" or "exact", us, ev, run, cpu, sus, scpu,
                          sus > 0 and us > 0 and 100 * (us - sus) / sus or 0,
                          scpu > 0 and cpu / scpu or 0))
      io.stdout:flush()
    end
  end
end
