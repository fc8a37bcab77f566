-- bench/peers/scale.lua: shmemlab's timing-only allgather at scale against
-- SimGrid's SMPI on the same shape (bench/peers/window.c): every rank takes
-- BYTES from every other, WINDOW transfers in flight per rank (shmemlab's
-- blocks), no bytes moved on either side. Per rank count and shmemlab settle
-- window: both simulated times and their difference, both processes' CPU seconds
-- (user + system, the shell's `times`) and their ratio. Each side is one process,
-- one after the other, --rounds times in turn (SMPI, then shmemlab under each
-- window): the table gives each side's least CPU and the lines under it every
-- run's, as a 2-core shared machine moves both by up to 2x from one minute to
-- the next (SMPI at 512 ranks takes about half a minute; shmemlab exact at 512
-- minutes, so exact runs up to --exact-max ranks). `make bench-peers-scale`
-- writes its output into doc/performance.md.
--
--   lua5.4 bench/peers/scale.lua [--pes 256,512] [--bytes 1M] [--window 48]
--       [--algo flat|hier] [--settle-ns 1000,0] [--exact-max 256] [--dir build/peers]
--       [--rounds 3] [--side both|shmemlab|smpi]
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
            side = "both", algo = "flat", ["settle-ns"] = "1000,0", ["exact-max"] = "256",
            rounds = "3" }
for i = 1, #arg, 2 do
  local k = arg[i]:match("^%-%-(.+)$")
  assert(k and o[k] ~= nil and arg[i + 1], "usage: scale.lua [--pes L] [--bytes B] [--window W] "
         .. "[--algo flat|hier] [--settle-ns N[,N]] [--exact-max P] [--rounds R] [--dir D] "
         .. "[--side both|shmemlab|smpi]")
  o[k] = arg[i + 1]
end
local bytes, window = bytes_of(o.bytes), assert(tonumber(o.window), "--window N")
local settles, exact_max = windows_of(o["settle-ns"]), assert(tonumber(o["exact-max"]), "--exact-max P")
local rounds_n = assert(math.tointeger(tonumber(o.rounds)), "--rounds R")
assert(rounds_n >= 1, "--rounds R: at least 1")
assert(o.algo == "flat" or o.algo == "hier", "--algo flat|hier")
if o.side ~= "shmemlab" then
  assert(os.execute(string.format("mkdir -p %s && smpicc -O2 -o %s %s", q(o.dir),
                                  q(o.dir .. "/window"), q(ROOT .. "/bench/peers/window.c"))),
         "smpicc failed")
end
print(string.format("timing-only allgather, %s per rank, %d in flight per rank (%s, shmemlab "
                    .. "--algo %s) against SMPI on the same shape: simulated us of each, their "
                    .. "difference, CPU seconds of each whole process, the least of %d alternated runs "
                    .. "(run cpu: shmemlab's launch alone) and their ratio (goal <= 0.25x); exact "
                    .. "(window 0) up to %d ranks", o.bytes, window, SOC, o.algo, rounds_n, exact_max))
print(string.format("%6s %7s | %12s %10s %8s %8s | %12s %8s | %7s %7s", "ranks", "window",
                    "shmemlab us", "events", "run cpu", "cpu", "SMPI us", "cpu", "us diff", "cpu x"))
-- the least of a list of numbers, and the list as text
local function least(xs)
  local t = {}
  for i, x in ipairs(xs) do t[i] = string.format("%.2f", x) end
  return math.min(table.unpack(xs)), table.concat(t, " ")
end

-- n ranks: --rounds rounds, each SMPI's run then shmemlab's under every window
-- in turn, so that both sides meet the machine's slow and fast minutes alike;
-- returns SMPI's us and CPUs, and each window's us, events, run CPUs and CPUs
local function rounds(n)
  local sus, scpu, runs = 0, {}, {}
  if o.side ~= "shmemlab" then platform(o.dir, n) end
  for _ = 1, rounds_n do
    if o.side ~= "shmemlab" then
      local us, cpu = smpi(o.dir, n, bytes, window)
      sus, scpu[#scpu + 1] = us, cpu
    end
    for i, w in ipairs(settles) do
      if o.side ~= "smpi" and (w > 0 or n <= exact_max) then
        local r = runs[i] or { run = {}, cpu = {} }
        local us, ev, run, cpu = shmemlab(n, bytes, window, o.algo, w)
        assert(r.us == nil or (r.us == us and r.ev == ev), "shmemlab's runs differ")
        r.us, r.ev, r.run[#r.run + 1], r.cpu[#r.cpu + 1] = us, ev, run, cpu
        runs[i] = r
      end
    end
  end
  return sus, scpu, runs
end

local notes = {}
for s in o.pes:gmatch("[^,]+") do
  local n = assert(math.tointeger(tonumber(s)), "--pes: integers")
  local sus, scpus, runs = rounds(n)
  local scpu, slist = 0, "-"
  if #scpus > 0 then scpu, slist = least(scpus) end
  for i, w in ipairs(settles) do
    local r = runs[i] or { us = 0, ev = 0, run = { 0 }, cpu = { 0 } }
    if r.us > 0 or o.side == "smpi" then
      local run, cpu, clist = least(r.run), least(r.cpu)
      local label = w > 0 and w .. " ns" or "exact"
      print(string.format("%6d %7s | %12.3f %10d %8.2f %8.2f | %12.3f %8.2f | %6.2f%% %6.2fx", n,
                          label, r.us, r.ev, run, cpu, sus, scpu,
                          sus > 0 and r.us > 0 and 100 * (r.us - sus) / sus or 0,
                          scpu > 0 and cpu / scpu or 0))
      io.stdout:flush()
      notes[#notes + 1] = string.format("%6d %7s   shmemlab cpu %s   SMPI cpu %s", n, label,
                                        r.us > 0 and clist or "-", slist)
    end
  end
end
print(string.format("each side's CPU in its %d runs, alternated (the table gives the least):",
                    rounds_n))
for _, line in ipairs(notes) do print(line) end
