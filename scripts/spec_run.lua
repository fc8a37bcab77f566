-- scripts/spec_run.lua: run the busted specs one file per process, JOBS at a time
-- (`make spec`, `make test-asan`).
--
--   lua5.4 scripts/spec_run.lua JOBS RUN 'BUSTED COMMAND' [LOGDIR]
--
-- RUN is the .busted configuration (default, asan); BUSTED COMMAND is the shell command that
-- starts busted (with its environment, e.g. the sanitizers' LD_PRELOAD), given to sh as is.
-- Each spec file runs in its own busted process through xargs -P JOBS; its output goes
-- to LOGDIR/<name>.log. A line per file is printed as it finishes; the output of every
-- file that failed is printed whole at the end, then one line in busted's own summary
-- form adding up every file's counts:
--   N successes / N failures / N errors / N pending : T seconds
-- (T is the wall time of the whole run). A file that printed no summary (a crash) counts
-- as one error. The longest files start first: the previous run's times in
-- LOGDIR/times, else the files' sizes. Exit status 0 only when nothing failed.

local jobs, run, busted, logdir = tonumber(arg[1]), arg[2], arg[3], arg[4] or "output/spec"
if not (jobs and jobs >= 1 and run and busted) then
  io.stderr:write("usage: lua5.4 scripts/spec_run.lua JOBS RUN 'BUSTED COMMAND' [LOGDIR]\n")
  os.exit(2)
end
logdir = logdir .. "/" .. run

-- the spec files under spec/, sorted by name
local function spec_files()
  local p = assert(io.popen("find spec -name '*_spec.lua' | LC_ALL=C sort"))
  local files = {}
  for f in p:lines() do files[#files + 1] = f end
  p:close()
  return files
end

-- the previous run's seconds per file (empty on a first run)
local function last_times()
  local t, fh = {}, io.open(logdir .. "/times")
  if fh then
    for secs, f in fh:read("a"):gmatch("(%S+) (%S+)\n") do t[f] = tonumber(secs) end
    fh:close()
  end
  return t
end

-- the files, longest first (by last run's time, else by size)
local function ordered(files)
  local times, weight = last_times(), {}
  for _, f in ipairs(files) do
    local fh = assert(io.open(f))
    weight[f] = times[f] or fh:seek("end") / 1e4
    fh:close()
  end
  table.sort(files, function(a, b)
    if weight[a] ~= weight[b] then return weight[a] > weight[b] end
    return a < b
  end)
  return files
end

-- the log file of spec file f
local function log_of(f)
  return logdir .. "/" .. f:gsub("^spec/", ""):gsub("/", "_") .. ".log"
end

-- single-quoted for sh
local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- counts = { successes, failures, errors, pending } of one log, or nil when it has none
local function counts(f)
  local fh = io.open(log_of(f))
  if not fh then return nil end
  local text = fh:read("a"):gsub("\27%[[%d;]*%a", "")
  fh:close()
  local s, fl, e, p = text:match("(%d+) successe?s? / (%d+) failures? / (%d+) errors? / (%d+) pending")
  if not s then return nil, text end
  return { tonumber(s), tonumber(fl), tonumber(e), tonumber(p) }, text
end

-- runs every file through xargs; returns { [file] = seconds } as they finish
local function run_all(files)
  local list = os.tmpname()
  local fh = assert(io.open(list, "w"))
  for _, f in ipairs(files) do fh:write(f, "\n", log_of(f), "\n") end
  fh:close()
  local worker = "s=$(date +%s%N); " ..
    string.format("%s --run=%s \"$1\" >\"$2\" 2>&1 </dev/null; ", busted, q(run)) ..
    "e=$(date +%s%N); echo \"$(( (e - s) / 1000000 )) $1\""
  local cmd = string.format("xargs -d '\\n' -n 2 -P %d sh -c %s _ < %s", jobs, q(worker), q(list))
  local p = assert(io.popen(cmd))
  local secs = {}
  for line in p:lines() do
    local ms, f = line:match("^(%d+) (.+)$")
    if f then
      secs[f] = tonumber(ms) / 1000
      local c = counts(f)
      print(string.format("%-44s %s %7.1f s", f,
        c and string.format("%4d ok %2d failed", c[1], c[2] + c[3]) or "  no summary (crashed)",
        secs[f]))
      io.stdout:flush()
    end
  end
  p:close()
  os.remove(list)
  return secs
end

-- prints the failed files' logs and the total line; returns whether all passed
local function report(files, secs, wall)
  local total, out = { 0, 0, 0, 0 }, {}
  for _, f in ipairs(files) do
    local c, text = counts(f)
    if not c then c = { 0, 0, 1, 0 } end
    for i = 1, 4 do total[i] = total[i] + c[i] end
    if c[2] + c[3] > 0 then
      text = (text or "(no log)"):gsub("[^\n]*%d+ successe?s? / %d+ failures?[^\n]*\n?", "")
      io.write("\n==== ", f, " ====\n", text, "\n")
    end
    out[#out + 1] = string.format("%.3f %s\n", secs[f] or 0, f)
  end
  local fh = io.open(logdir .. "/times", "w")
  if fh then fh:write(table.concat(out)); fh:close() end
  print(string.format("%d successes / %d failures / %d errors / %d pending : %.6f seconds",
    total[1], total[2], total[3], total[4], wall))
  return total[2] + total[3] == 0
end

-- seconds since the epoch, to the millisecond
local function now()
  local p = assert(io.popen("date +%s%N"))
  local ns = tonumber(p:read("l"))
  p:close()
  return ns / 1e9
end

os.execute("mkdir -p " .. q(logdir))
local files = ordered(spec_files())
local t0 = now()
local secs = run_all(files)
local ok = report(files, secs, now() - t0)
os.exit(ok and 0 or 1)
