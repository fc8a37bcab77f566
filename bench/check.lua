-- bench/check.lua: what each check mode costs a whole `lua run_op.lua OP
-- [--tool MODE]` process (defaults of run_op.lua) against the unchecked one:
-- wall clock, CPU and peak memory (VmHWM) of separate processes, side by side.
-- One warm-up process first; then rounds that each run every mode once, in an
-- order rotated from round to round (no mode is always first, so none runs
-- cold); each ratio is taken within a round and the median over rounds shown.
-- Options after `--` go to every run_op.lua process. A process that exits non-zero
-- (a usage error, a wrong element, a report) stops the bench with exit 1: a failed
-- run is not a measurement.
--   lua5.4 bench/check.lua [rounds] [op ...] [-- run_op options]   (make bench: 3 rounds)
local ROOT = debug.getinfo(1, "S").source:match("^@(.*)/bench/[^/]*$") or "."
local LUA = os.getenv("LUA") or "lua5.4"

local modes = { "none", "memcheck", "synccheck", "initcheck", "racecheck", "all" }
local rounds = tonumber(arg[1]) or 3
local ops, extra = {}, {}
for i = tonumber(arg[1]) and 2 or 1, #arg do
  if arg[i] == "--" then extra = { table.unpack(arg, i + 1) }; break end
  ops[#ops + 1] = arg[i]
end
if #ops == 0 then ops = { "allgather", "allreduce", "alltoall" } end

-- run before run_op.lua in the child: at its os.exit, print CPU seconds and
-- the peak resident set (kB) on stderr
local PRELUDE = [[
local exit = os.exit
os.exit = function(...)
  local f, hwm = io.open("/proc/self/status"), "0"
  if f then hwm = f:read("a"):match("VmHWM:%s*(%d+)") or "0"; f:close() end
  io.stderr:write(string.format("\nBENCH cpu=%.3f hwm=%s\n", os.clock(), hwm))
  return exit(...)
end
]]

-- single-quote s for sh
local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- stop the bench: a failed run measures nothing
local function fail(msg)
  io.stderr:write("bench/check.lua: ", msg, "\n")
  os.exit(1)
end

-- one whole process: wall seconds, CPU seconds, peak kB
local function process(op, mode)
  local args = { op }
  if mode ~= "none" then args[#args + 1] = "--tool " .. mode end
  for _, a in ipairs(extra) do args[#args + 1] = a:match("^[%w_.,=/:+-]+$") and a or q(a) end
  local shown = "run_op.lua " .. table.concat(args, " ")
  local cmd = string.format("%s -e %s %s %s", LUA, q(PRELUDE), q(ROOT .. "/run_op.lua"),
                            table.concat(args, " "))
  -- the child's stderr (its messages and the BENCH line) is printed after WALL and RC
  local sh = "e=$(mktemp); t0=$(date +%s%N); " .. cmd .. " >/dev/null 2>\"$e\"; rc=$?; " ..
             "t1=$(date +%s%N); echo \"WALL $((t1 - t0))\"; echo \"RC $rc\"; cat \"$e\"; rm -f \"$e\""
  local p = assert(io.popen("sh -c " .. q(sh)))
  local out = p:read("a")
  p:close()
  local rc = tonumber(out:match("RC (%d+)"))
  if rc ~= 0 then
    local said = out:match("RC %d+\n(.-)\n*BENCH") or out:match("RC %d+\n(.-)\n*$") or ""
    fail(string.format("%s failed (exit %s)%s", shown, tostring(rc),
                       said ~= "" and ": " .. said:gsub("\n", " | ") or ""))
  end
  local cpu, hwm = out:match("BENCH cpu=([%d.]+) hwm=(%d+)")
  local wall = out:match("WALL (%d+)")
  if not (cpu and wall) then fail(shown .. ": no measurement in " .. out) end
  return tonumber(wall) / 1e9, tonumber(cpu), tonumber(hwm)
end

-- the median of a list
local function median(t)
  local s = { table.unpack(t) }
  table.sort(s)
  local n = #s
  return n % 2 == 1 and s[(n + 1) // 2] or (s[n // 2] + s[n // 2 + 1]) / 2
end

print(string.format("check-mode cost, whole processes (lua run_op.lua OP [--tool MODE]), "
                    .. "%d rounds, medians", rounds))
print(string.format("%-10s %-10s %8s %8s %8s %8s %7s %7s", "op", "mode", "wall s", "cpu s",
                    "peak MiB", "wall x", "cpu x", "mem x"))
for _, op in ipairs(ops) do
  process(op, "none")                                    -- warm-up, not measured
  local runs = {}
  for _, mode in ipairs(modes) do runs[mode] = { w = {}, c = {}, m = {}, rw = {}, rc = {}, rm = {} } end
  for round = 1, rounds do
    local got = {}
    for i = 1, #modes do
      local mode = modes[(i + round - 2) % #modes + 1]
      got[mode] = { process(op, mode) }
    end
    for _, mode in ipairs(modes) do
      local r, g, b = runs[mode], got[mode], got.none
      r.w[#r.w + 1], r.c[#r.c + 1], r.m[#r.m + 1] = g[1], g[2], g[3]
      r.rw[#r.rw + 1], r.rc[#r.rc + 1], r.rm[#r.rm + 1] = g[1] / b[1], g[2] / b[2], g[3] / b[3]
    end
  end
  for _, mode in ipairs(modes) do
    local r = runs[mode]
    print(string.format("%-10s %-10s %8.2f %8.2f %8.0f %7.2fx %6.2fx %6.2fx", op, mode,
                        median(r.w), median(r.c), median(r.m) / 1024, median(r.rw),
                        median(r.rc), median(r.rm)))
  end
end
