-- bench/peers/peers.lua: shmemlab side by side with a peer, SimGrid's SMPI
-- running bench/peers/collectives.c on a platform of the same topology. Per
-- operator and size: the simulated time per iteration of both (agreement:
-- an independent model of the same network) and the wall time of both whole
-- processes, run one after the other (speed), and the copy floor's wall
-- times (bench/peers/floor.c: the same bytes landed by plain copies in one
-- process, on one and on two threads, set-up and check left out; its ratio
-- to SMPI's wall bounds what an emulator that lands real data can reach).
-- Run by `make bench-peers`.
--
--   lua5.4 bench/peers/peers.lua [--ops allgather,alltoall,allreduce]
--       [--sizes 1K,8K,64K,512K,4M,16M] [--iters 50] [--dir build/peers]
--       [--bin DIR/collectives] [--floor DIR/floor]
--   lua5.4 bench/peers/peers.lua --platform DIR   (only write the platform)
--
-- The platform is written from the SoC profile (one source for its figures):
-- pes_per_server hosts, a link per pair of them (the full mesh of
-- hccs_switch = false) of hccs_GBps each way and hccs_alpha_ns.
local ROOT = debug.getinfo(1, "S").source:match("^@(.*)/bench/peers/[^/]*$") or "."
package.path = ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;" .. ROOT .. "/bench/?.lua;"
  .. package.path
local shell = require("shell")
local q, bytes_of, timed = shell.q, shell.bytes_of, shell.timed
local cjson = require("cjson")

local SOC = "Ascend910B"
local LUA = os.getenv("LUA") or "lua5.4"
-- SMPI's collective algorithm for each operator, the one nearest shmemlab's:
-- every rank exchanges with every peer at once (allgather, alltoall), and a
-- reduce-scatter by an all-to-all then an allgather (allreduce, Rabenseifner's
-- second variant)
local ALGO = { allgather = "spreading_simple", alltoall = "basic_linear", allreduce = "rab2" }
-- SMPI figures: the links as the platform says (no TCP correction factors, no
-- reverse traffic of acknowledgements) and only the network on the clock
local SMPI_CFG = { "smpi/simulate-computation:no", "smpi/bw-factor:0:1", "smpi/lat-factor:0:1",
                   "network/crosstraffic:0" }

-- 65536 -> "64K"
local function size_name(b)
  for _, u in ipairs({ { 1024 ^ 3, "G" }, { 1024 ^ 2, "M" }, { 1024, "K" } }) do
    if b >= u[1] and b % u[1] == 0 then return string.format("%d%s", b // u[1], u[2]) end
  end
  return tostring(b)
end

-- the platform and hostfile of the profile's server, written under dir
local function platform(dir)
  local p = require("shmemlab.socs." .. SOC)      -- the profile itself: no engine needed
  assert(not p.hccs_switch, SOC .. ": only a full mesh (hccs_switch = false) is written")
  local n, x = p.pes_per_server, {}
  x[#x + 1] = "<?xml version='1.0'?>"
  x[#x + 1] = '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
  x[#x + 1] = string.format("<!-- written by bench/peers/peers.lua from the %s profile: "
                            .. "%d PEs, HCCS full mesh -->", SOC, n)
  x[#x + 1] = '<platform version="4.1">'
  x[#x + 1] = '  <zone id="server" routing="Full">'
  for i = 0, n - 1 do x[#x + 1] = string.format('    <host id="pe%d" speed="1Gf"/>', i) end
  for i = 0, n - 1 do
    for j = i + 1, n - 1 do
      x[#x + 1] = string.format('    <link id="hccs%d_%d" bandwidth="%gGBps" latency="%gns" '
                                .. 'sharing_policy="SPLITDUPLEX"/>', i, j, p.hccs_GBps,
                                p.hccs_alpha_ns)
    end
  end
  for i = 0, n - 1 do
    for j = i + 1, n - 1 do
      x[#x + 1] = string.format('    <route src="pe%d" dst="pe%d"><link_ctn id="hccs%d_%d" '
                                .. 'direction="UP"/></route>', i, j, i, j)
    end
  end
  x[#x + 1] = "  </zone>"
  x[#x + 1] = "</platform>"
  os.execute("mkdir -p " .. q(dir))
  local f = assert(io.open(dir .. "/platform.xml", "w"))
  f:write(table.concat(x, "\n"), "\n")
  f:close()
  f = assert(io.open(dir .. "/hostfile", "w"))
  for i = 0, n - 1 do f:write("pe", i, "\n") end
  f:close()
  return n, p
end

-- shmemlab: one process, the operator at bytes per PE, iters launches
local function shmemlab(op, n, bytes, iters)
  local out, wall, rc, cpu = timed(string.format("%s %s %s --pes %d --count %d --dtype int32 -w 0 "
      .. "-n %d --baseline none --prof-pe -1 --json", LUA, q(ROOT .. "/run_op.lua"), op, n,
      bytes // 4, iters))
  local ok, doc = pcall(cjson.decode, out:match("^[^\n]*"))
  assert(ok and rc == 0, op .. " " .. bytes .. ": shmemlab failed:\n" .. out)
  local s = doc.rows[1].shmem
  return s.latency_us, s.wrong, wall, cpu
end

-- SMPI: one smpirun of the collective
local function smpi(op, dir, n, bin, bytes, iters)
  local cfg = {}
  for _, c in ipairs(SMPI_CFG) do cfg[#cfg + 1] = "--cfg=" .. c end
  for _, k in ipairs({ "allgather", "alltoall", "allreduce" }) do
    cfg[#cfg + 1] = string.format("--cfg=smpi/%s:%s", k, ALGO[k])
  end
  local out, wall, rc, cpu = timed(string.format("smpirun -np %d -platform %s -hostfile %s %s "
      .. "--log=root.thres:warning %s %s %d %d", n, q(dir .. "/platform.xml"),
      q(dir .. "/hostfile"), table.concat(cfg, " "), q(bin), op, bytes, iters))
  local us, wrong = out:match("sim_us=([%d.]+) wrong=(%d+)")
  assert(us and rc == 0, op .. " " .. bytes .. ": smpirun failed:\n" .. out)
  return tonumber(us), tonumber(wrong), wall, cpu
end

-- the copy floor: one process landing the same bytes with plain copies on
-- threads threads; the wall and CPU seconds of its copies alone
local function floor(op, n, fbin, bytes, iters, threads)
  local out, _, rc = timed(string.format("%s %s %d %d %d %d", q(fbin), op, bytes, iters, n,
                                         threads))
  local s, cpu, wrong = out:match("floor op=%S+ bytes=%d+ iters=%d+ threads=%d+ copy_s=([%d.]+) "
                                   .. "cpu_s=([%d.]+) wrong=(%d+)")
  assert(wrong and rc == 0, op .. " " .. bytes .. ": floor failed:\n" .. out)
  return tonumber(wrong), tonumber(s), tonumber(cpu)
end

-- the command line: options as a table
local function options(args)
  local o = { ops = "allgather,alltoall,allreduce", sizes = "1K,8K,64K,512K,4M,16M",
              iters = "50", dir = ROOT .. "/build/peers" }
  local i = 1
  while i <= #args do
    local k = args[i]:match("^%-%-(.+)$")
    assert(k and (o[k] or k == "platform" or k == "bin" or k == "floor") and args[i + 1],
           "usage: peers.lua [--ops L] [--sizes L] [--iters N] [--dir D] [--bin B] [--floor B] "
           .. "[--platform D]")
    o[k] = args[i + 1]
    i = i + 2
  end
  return o
end

local o = options(arg)
if o.platform then platform(o.platform); os.exit(0) end
local n, prof = platform(o.dir)
local bin, iters = o.bin or o.dir .. "/collectives", tonumber(o.iters)
local fbin = o.floor or o.dir .. "/floor"
print(string.format("shmemlab vs SimGrid SMPI (%s): %d ranks, HCCS full mesh %g GB/s, %g ns "
                    .. "per link; int32, %d iterations per size, real data checked",
                    SOC, n, prof.hccs_GBps, prof.hccs_alpha_ns, iters))
print("simulated time per iteration (us); wall and CPU time of each whole process (s); copy "
      .. "floor: the same bytes landed by plain copies, wall and CPU s of 1 thread and wall s "
      .. "of 2, over SMPI's whole process")
print(string.format("%-10s %6s | %11s %11s %6s | %8s %8s %6s | %8s %8s %6s | %6s %6s %6s %6s "
                    .. "%6s %6s", "op", "size", "shmemlab us", "SMPI us", "sim x", "shm wall",
                    "SMPI", "wall x", "shm cpu", "SMPI", "cpu x", "fl 1T", "x", "cpu", "x",
                    "fl 2T", "x"))
local all_ok = true
-- one row: the two simulated times, then the wall and the CPU seconds of both
local function row(op, size, us, sus, t, bad)
  local sim = us and string.format("%11.3f %11.3f %5.2fx", us, sus, us / sus)
              or string.format("%11s %11s %6s", "", "", "")
  print(string.format("%-10s %6s | %s | %8.2f %8.2f %5.2fx | %8.2f %8.2f %5.2fx | %6.2f %5.2fx "
                      .. "%6.2f %5.2fx %6.2f %5.2fx%s", op, size, sim, t[1], t[2], t[1] / t[2],
                      t[3], t[4], t[3] / t[4], t[5], t[5] / t[2], t[6], t[6] / t[4], t[7],
                      t[7] / t[2], bad and "  WRONG" or ""))
end
for op in o.ops:gmatch("[^,]+") do
  assert(ALGO[op], "unknown op '" .. op .. "' (allgather, alltoall, allreduce)")
  local sum = { 0, 0, 0, 0, 0, 0, 0 }
  for s in o.sizes:gmatch("[^,]+") do
    local b = bytes_of(s)
    local us, bad, wall, cpu = shmemlab(op, n, b, iters)
    local sus, sbad, swall, scpu = smpi(op, o.dir, n, bin, b, iters)
    local fbad, f1, f1cpu = floor(op, n, fbin, b, iters, 1)
    local fbad2, f2 = floor(op, n, fbin, b, iters, 2)
    local t = { wall, swall, cpu, scpu, f1, f1cpu, f2 }
    for i = 1, #t do sum[i] = sum[i] + t[i] end
    bad = bad > 0 or sbad > 0 or fbad > 0 or fbad2 > 0
    all_ok = all_ok and not bad
    row(op, size_name(b), us, sus, t, bad)
  end
  row(op, "all", nil, nil, sum, false)
end
os.exit(all_ok and 0 or 1)
