-- bench/par.lua: what -j buys, and what --tune finds (doc/tune.md).
--   sweep: one size sweep of 8 sizes (allgather, timing-only) as two whole processes,
--          `-j 1` then `-j J`, in one run: both walls and their ratio; the two outputs must
--          be the same bytes (else exit 1); and the CPU seconds each used (with its
--          workers), so CPU / wall says how many cores the machine gave it
--   tune:  `--tune` on allgather at 8 PEs: the default configuration's kernel_us, the
--          best's, and how many points ran (virtual times: exact, the same on any machine)
-- Options after `--` go to every run_op.lua process of the part that runs.
--   lua5.4 bench/par.lua [sweep|tune|all] [J] [-- run_op options]      (default: all 2)
local ROOT = debug.getinfo(1, "S").source:match("^@(.*)/bench/[^/]*$") or "."
local LUA = os.getenv("LUA") or "lua5.4"
package.path = ROOT .. "/bench/?.lua;" .. package.path
local shell = require("shell")
local q, secs = shell.q, shell.secs

local part, jobs, extra = "all", 2, {}
for i = 1, #arg do
  if arg[i] == "--" then extra = { table.unpack(arg, i + 1) }; break end
  if tonumber(arg[i]) then jobs = math.tointeger(tonumber(arg[i])) else part = arg[i] end
end

-- the sweep: 8 sizes, 512 KiB .. 64 MiB per PE (large enough that a worker process's
-- start-up is small beside its point)
local SWEEP = { "allgather", "-b", "512K", "-e", "64M", "--timing-only" }
-- the tune: allgather at 8 PEs, the defaults otherwise
local TUNE = { "allgather", "--pes", "8", "--tune", "--json" }

-- stop the bench: a failed run measures nothing
local function fail(msg)
  io.stderr:write("bench/par.lua: ", msg, "\n")
  os.exit(1)
end

-- the wall clock now, in seconds (date: Lua has no sub-second wall clock)
local function now()
  local p = assert(io.popen("date +%s.%N"))
  local t = tonumber(p:read("l"))
  p:close()
  return t
end

-- run run_op.lua with args (and the extra options); its stdout, wall seconds and the CPU
-- seconds (user + sys) of it and every process it started (sh's `times`)
local function run(args)
  local words = {}
  for _, a in ipairs(args) do words[#words + 1] = q(a) end
  for _, a in ipairs(extra) do words[#words + 1] = q(a) end
  local tmp = os.tmpname()
  local cmd = string.format("cd %s && %s run_op.lua %s > %s 2>&1; rc=$?; times; exit $rc", q(ROOT),
                            LUA, table.concat(words, " "), q(tmp))
  local t0 = now()
  local p = assert(io.popen(cmd))
  local timing = p:read("a")
  local ok, _, code = p:close()
  local wall = now() - t0
  local f = assert(io.open(tmp))
  local out = f:read("a")
  f:close()
  os.remove(tmp)
  if not ok then
    fail(string.format("run_op.lua %s failed (exit %s): %s", table.concat(args, " "),
                       tostring(code), out:match("[^\n]*\n?$")))
  end
  local u, sy = timing:match("\n(%S+) (%S+)\n?$")
  return out, wall, secs(u) + secs(sy)
end

-- a copy of list with more items
local function plus(list, ...)
  local t = { table.unpack(list) }
  for _, v in ipairs({ ... }) do t[#t + 1] = v end
  return t
end

if part == "all" or part == "sweep" then
  local serial, t1, c1 = run(plus(SWEEP, "-j", "1"))
  local parallel, tj, cj = run(plus(SWEEP, "-j", tostring(jobs)))
  if serial ~= parallel then fail("the -j " .. jobs .. " output differs from the serial one") end
  local rows = 0
  for _ in serial:gmatch("\n%s+%d+%s+%d+%s+int32") do rows = rows + 1 end
  print(string.format("sweep of %d sizes (lua run_op.lua %s): -j 1 %.2f s, -j %d %.2f s, "
    .. "ratio %.2f (target <= 0.60); outputs identical; CPU (user + sys) -j 1 %.2f s, -j %d "
    .. "%.2f s: the machine gave %.2f and %.2f cores", rows, table.concat(plus(SWEEP,
    table.unpack(extra)), " "), t1, jobs, tj, tj / t1, c1, jobs, cj, c1 / t1, cj / tj))
end

if part == "all" or part == "tune" then
  local out = run(plus(TUNE, "-j", tostring(jobs)))
  local json = require("cjson")
  local ok, doc = pcall(json.decode, out)
  if not ok then fail("--tune did not print JSON: " .. out:sub(1, 200)) end
  local g = doc.tune[1]
  local default
  for _, r in ipairs(g.rows) do if r.default then default = r end end
  local knobs = {}
  for k, v in pairs(g.best.knobs) do
    knobs[#knobs + 1] = k .. "=" .. tostring(math.tointeger(v) or v)   -- cjson: 48.0
  end
  table.sort(knobs)
  print(string.format("tune allgather at %d PEs, count %d (%s, %d of %d points): default "
    .. "kernel_us %.3f, best %.3f (%s), best/default %.3f%s", g.pes, g.count, g.search,
    g.points_run, g.points_valid, default.kernel_us, g.best.kernel_us, table.concat(knobs, " "),
    g.best.kernel_us / default.kernel_us,
    g.best.kernel_us <= default.kernel_us and "" or " WORSE THAN THE DEFAULT"))
  if g.best.kernel_us > default.kernel_us then os.exit(1) end
end
