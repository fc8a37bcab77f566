-- bench/cpu_split.lua: one launch of an operator with its user and system CPU
-- seconds apart (/proc/self/stat, 10 ms ticks), the page faults it took and the
-- process's peak RSS, beside its events and virtual end (which must not move).
-- On a virtual machine that hands free memory back to its host, system time is
-- mostly the first touch of the bytes the op holds and depends on what ran
-- before (doc/performance.md): compare user time in alternated pairs, and leave
-- a pause of 30 s before each run whose system time you compare.
--   lua5.4 bench/cpu_split.lua allgather "{ pes = 256, count = 1024 }"
-- (OP a name in ops/, family/name for ops/family/name.lua, or a path).
local runner = require("shmemlab.runner")
local lab = require("shmemlab")

-- fields of /proc/self/stat after the command name (nil where there is none)
local function stat()
  local f = io.open("/proc/self/stat")
  if f == nil then return nil end
  local text = f:read("a")
  f:close()
  local fields = {}
  for w in text:match("%) (.*)"):gmatch("%S+") do fields[#fields + 1] = w end
  return fields
end

-- user seconds, system seconds and minor faults so far
local function usage()
  local f = stat()
  if f == nil then return os.clock(), 0, 0 end
  return tonumber(f[12]) / 100, tonumber(f[13]) / 100, tonumber(f[8])
end

local function peak_rss_mib()
  local f = io.open("/proc/self/status")
  if f == nil then return 0 end
  local kb = f:read("a"):match("VmHWM:%s*(%d+)")
  f:close()
  return kb and tonumber(kb) // 1024 or 0
end

-- the operator: a name in ops/, family/name (ops/family/name.lua), or a path
local name = arg[1] or "allgather"
if name:find("/") and not name:find("%.lua$") then
  name = string.format("%s/%s.lua", runner.ops_dir(), name)
end
local op = runner.load_op(name)
local opts = assert(load("return " .. (arg[2] or "{}")))()
opts.warmup, opts.iters, opts.baseline = 0, 1, "none"
local c = runner.config(op, opts)
local m = lab.machine{ profile = c.profile, pes = c.pes, prof_pe = -1, data = not c.timing_only,
                       chain_flow = c.chain_flow }
local s = op.setup(m, c)
local u0, s0, f0 = usage()
local e0 = m:events()
op.run(m, c, s)
local u1, s1, f1 = usage()
print(string.format("user=%.2f sys=%.2f cpu=%.2f minflt=%d events=%d now_us=%.6f rss_mib=%d",
                    u1 - u0, s1 - s0, u1 - u0 + s1 - s0, f1 - f0, m:events() - e0, m:now(),
                    peak_rss_mib()))
