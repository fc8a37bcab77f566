-- bench/scale.lua: the emulator at scale (wall clock and memory, not virtual
-- time). For allgather of 1024 int32 per PE in data mode at 8, 64, 256 and
-- 1024 PEs it prints the events the scheduler handled in one launch, events
-- per second, wall and CPU seconds of the launch, wall and CPU seconds of the
-- op's setup (inputs, plans, host references, and any launch the setup makes),
-- the process's peak RSS (and, in data mode, over the bytes the op holds as
-- runner.memory_need counts them: the goal is <= 1.15x), the transfers
-- started with the share that went on in their pipe's last flow, the flow
-- solver's settled instants with the flows re-rated and fills per instant and
-- the flows filled per flow re-rated, and the growth exponent of wall (and
-- CPU) time over events (shmemlab.scale_fit: goal <= 1.15); then the
-- timing-only figures of issue 24's goals (allgather 1 MiB per PE and
-- alltoall 1 KiB per pair at 1024 PEs x 48 cores, DeepEP's normal-mode
-- dispatch on Ascend910_93 at EP128 (4096 tokens, hidden 7168, top-8, 256
-- experts: refused, its notify kernel does not fit a core's UB; its data kernel
-- alone, ops/deepep/dispatch_data.lua, runs there, and so does the dispatch
-- sgl-kernel-npu main ships, ops/deepep/dispatch_hccl.lua) and at EP64)
-- and the lab's dispatch at EP1024, when the engine has timing-only
-- machines, each with its events by kind (m:event_kinds()). Every
-- case runs in its own process (its peak RSS is its own, and its memory is
-- gone before the next). Run with `make scale`
-- (or `make bench`); `lua5.4 bench/scale.lua --max-pes 256` stops earlier;
-- a timing-only case is stopped after `--budget S` seconds (600; 0: none),
-- and the line says so: at 1024 PEs x 48 blocks they take minutes to hours;
-- `--settle-ns N` runs the timing-only cases with the flow solver's window of
-- N ns (doc/scale.md; default: the profile's, 0 = exact). One case alone:
-- `lua5.4 bench/scale.lua --one OP "{ pes = 1024, ... }"` (OP a name in ops/,
-- family/name for ops/family/name.lua, or a path) prints its line of figures.
local runner = require("shmemlab.runner")
local lab = require("shmemlab")
local fit = require("shmemlab.scale_fit")

-- wall seconds since boot (/proc/uptime, 10 ms), or nil where there is none
local function wall()
  local f = io.open("/proc/uptime")
  if f == nil then return nil end
  local t = f:read("n")
  f:close()
  return t
end

-- peak resident bytes of this process (VmHWM), or nil
local function peak_rss()
  local f = io.open("/proc/self/status")
  if f == nil then return nil end
  local kb = f:read("a"):match("VmHWM:%s*(%d+)")
  f:close()
  return kb and tonumber(kb) * 1024
end

-- user and system CPU seconds of this process so far and its minor page faults
-- (/proc/self/stat, 10 ms ticks; os.clock() and 0, 0 where there is none): on a
-- virtual machine that hands free memory back to its host, system time is mostly
-- the first touch of the bytes the op holds and depends on what ran just before
-- (doc/performance.md), so compare builds on user time
local function usage()
  local f = io.open("/proc/self/stat")
  if f == nil then return os.clock(), 0, 0 end
  local fields = {}
  for w in f:read("a"):match("%) (.*)"):gmatch("%S+") do fields[#fields + 1] = w end
  f:close()
  return tonumber(fields[12]) / 100, tonumber(fields[13]) / 100, tonumber(fields[8])
end

-- the events of m by kind since k0 (m:event_kinds(), or nil), as "kind=N ..."
-- (sorted by kind) for one()'s line
local function kinds_text(m, k0)
  local k1, names, out = m:event_kinds(), {}, {}
  for name in pairs(k1) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    out[#out + 1] = string.format("k%s=%d", name, k1[name] - (k0 and k0[name] or 0))
  end
  return table.concat(out, " ")
end

-- child: one launch of op (a name in ops/, family/name, a path) with opts (a Lua
-- table literal); prints one line
local function one(opname, opts_text)
  local op, c, m = runner.one_launch(opname, assert(load("return " .. opts_text))())
  local ws, cs = wall(), os.clock()
  local s = op.setup(m, c)
  local e0, k0, f0, w0, c0 = m:events(), m:event_kinds(), m:flow_stats(), wall(), os.clock()
  local u0, s0, pf0 = usage()
  op.run(m, c, s)
  local cpu, w1, f1 = os.clock() - c0, wall(), m:flow_stats()
  local u1, s1, pf1 = usage()
  local need = runner.memory_need(op, c)
  print(string.format("events=%d wall=%.3f cpu=%.3f user=%.2f sys=%.2f minflt=%d setup=%.3f "
                      .. "setupcpu=%.3f rss=%d need=%d "
                      .. "now_us=%.3f starts=%d continued=%d settles=%d rerated=%d fills=%d "
                      .. "filled=%d %s",
                      m:events() - e0, w1 and w1 - w0 or cpu, cpu, u1 - u0, s1 - s0, pf1 - pf0,
                      w0 and w0 - ws or c0 - cs, c0 - cs, peak_rss() or 0,
                      c.timing_only and 0 or need.data, m:now(),
                      f1.starts - f0.starts, f1.continued - f0.continued,
                      f1.settles - f0.settles, f1.rerated - f0.rerated, f1.fills - f0.fills,
                      f1.filled - f0.filled, kinds_text(m, k0)))
end

-- run one case in a fresh process, stopped after budget seconds when given
-- (and coreutils' timeout is there); its figures, or nil and the error text
-- (nil and "budget" when it was stopped)
local TIMED_OUT = 124                   -- timeout(1)'s exit status
local function case(opname, opts_text, budget)
  local cmd = string.format("%s %q --one %s %q 2>&1", arg[-1] or "lua5.4", arg[0], opname,
                            opts_text)
  if budget and budget > 0 and os.execute("command -v timeout >/dev/null 2>&1") then
    cmd = string.format("timeout %d %s", budget, cmd)
  end
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  local _, how, code = p:close()
  local r = {}
  if how == "exit" and code == TIMED_OUT and budget then return nil, "budget" end
  for k, v in out:gmatch("(%w+)=([%d%.]+)") do r[k] = tonumber(v) end
  if r.events == nil then return nil, out end
  return r
end

-- a case's figures; flows re-rated and fills per settled instant of the
-- solver, and flows filled per flow re-rated; then its events by kind (they
-- sum to its events), its setup's CPU seconds and the launch's user and system
-- seconds apart (system time is mostly first touches: compare builds on user time)
local function row(name, r)
  local n = math.max(r.settles, 1)
  print(string.format("%-34s %11d %12s %9.2f %9.2f %9.2f %9.0f %9d %6.1f %9d %8.1f %7.2f %7.2f",
                      name, r.events, fit.rate(r.events, r.wall), r.wall, r.cpu,
                      r.setup, r.rss / 2 ^ 20, r.starts, 100 * r.continued / math.max(r.starts, 1),
                      r.settles, r.rerated / n, r.fills / n, r.filled / math.max(r.rerated, 1)))
  local kinds = {}
  for k, v in pairs(r) do
    local kind = k:match("^k(%w+)$")
    if kind then kinds[#kinds + 1] = string.format("%s %d", kind, v) end
  end
  table.sort(kinds)
  print(string.format("  %s; setup CPU %.2f s; the launch's user %.2f s, system %.2f s, "
                      .. "%d minor faults", #kinds > 0 and "events by kind: "
                      .. table.concat(kinds, ", ") or "no events by kind", r.setupcpu or 0,
                      r.user or 0, r.sys or 0, r.minflt or 0))
  if r.need and r.need > 0 then         -- a data run: what the op holds (runner.memory_need)
    print(string.format("  the op holds %.0f MiB (runner.memory_need); peak RSS is %.2fx that",
                        r.need / 2 ^ 20, r.rss / r.need))
  end
end

local function header(title)
  print(title)
  print(string.format("%-34s %11s %12s %9s %9s %9s %9s %9s %6s %9s %8s %7s %7s", "case",
                      "events", "events/s", "wall s", "cpu s", "setup s", "RSS MiB", "starts",
                      "cont%", "settles", "rerated", "fills", "filled"))
  print("(starts: transfers started, cont%: the share of them that went on in their pipe's "
        .. "last flow; settles: instants the flow solver re-rated flows at; rerated and "
        .. "fills: flows re-rated and progressive fillings per settle; filled: flows the "
        .. "fills filled per flow re-rated (widening fills again with more); m:flow_stats())")
end

if arg[1] == "--one" then
  one(arg[2], arg[3])
  return
end
local max_pes, budget, settle = 1024, 600, nil
for i = 1, #arg - 1 do
  if arg[i] == "--max-pes" then max_pes = assert(tonumber(arg[i + 1]), "--max-pes N") end
  if arg[i] == "--budget" then budget = assert(tonumber(arg[i + 1]), "--budget S") end
  if arg[i] == "--settle-ns" then
    settle = assert(math.tointeger(tonumber(arg[i + 1])), "--settle-ns N (an integer)")
  end
end

header("allgather, 1024 int32 per PE, data mode, one launch (16 blocks per PE)")
local ev, wl, cp = {}, {}, {}
for _, pes in ipairs({ 8, 64, 256, 1024 }) do
  if pes <= max_pes then
    local r, err = case("allgather", string.format("{ pes = %d, count = 1024 }", pes))
    if r == nil then error("allgather at " .. pes .. " PEs failed:\n" .. err, 0) end
    row(string.format("allgather %d PEs", pes), r)
    ev[#ev + 1], wl[#wl + 1], cp[#cp + 1] = r.events, r.wall, r.cpu
  end
end
if #ev >= 2 then print(fit.line(ev, wl, cp)) end
print("goal at 1024 PEs: <= 20 s CPU, peak RSS <= 1.15x the bytes the op holds (4 GiB of output)")

print()
local probe = pcall(lab.machine, { pes = 1, data = false })   -- timing-only machines?
if not probe then
  print("timing-only figures: skipped (this engine has no timing-only machines)")
  return
end
header(string.format("timing-only (data = false), issue 24's goals, one launch (two for "
                     .. "DeepEP's notify + dispatch), settle window %s",
                     settle and settle .. " ns" or "the profile's"))
-- name, op, PEs, options. DeepEP's notify kernel holds the n x experts counts and
-- the n x 2n balance matrix on one block's UB (deepep.notify_ub_bytes): at 128
-- ranks that is more than the 192 KiB UB at any expert count, so the port refuses
-- it (the line says so); the dispatch's data kernel alone (put_offset from the
-- host layout; the notify's time left out) runs the goal's EP128 case, and the
-- whole dispatch at EP64, the largest EP its notify fits; the dispatch
-- sgl-kernel-npu main ships on Ascend910_93 at any EP (its notify over the HCCL
-- window, no n x n table, then its pull data kernel) runs the whole EP128 case
local DEEPEP = "soc = 'Ascend910_93', local_tokens = 4096, hidden = 7168, topk = 8, experts = 256"
local cases = {
  { "allgather 1 MiB per PE", "allgather", 1024, "block_dim = 48, count = 262144" },
  { "alltoall 1 KiB per pair", "alltoall", 1024, "block_dim = 48, count = 256" },
  { "deepep dispatch A3 EP128 4096x7168", "deepep/dispatch", 128, DEEPEP },
  { "deepep data kernel EP128 4096x7168", "deepep/dispatch_data", 128, DEEPEP },
  { "deepep main notify+data EP128 4096x7168", "deepep/dispatch_hccl", 128, DEEPEP },
  { "deepep dispatch A3 EP64 4096x7168", "deepep/dispatch", 64, DEEPEP },
  { "dispatch EP1024 128x7168 top-8", "dispatch", 1024,
    "block_dim = 48, local_tokens = 128, hidden = 7168, topk = 8" },
}
for _, c in ipairs(cases) do
  if max_pes >= c[3] then
    local r, err = case(c[2], string.format("{ pes = %d, timing_only = true, %s%s }", c[3], c[4],
                                             settle and ", settle_ns = " .. settle or ""), budget)
    if r then row(c[1], r)
    elseif err == "budget" then
      print(string.format("%s: stopped after the budget of %d s (--budget S)", c[1], budget))
    else print(c[1] .. ": failed: " .. err:gsub("\n.*", "")) end
  end
end
print("goal: <= 60 s CPU each (the lab's dispatch at EP1024: none), allgather <= 2 GB RSS")
