-- shmemlab.par: the independent points of a sweep or a --tune (each a runner.run of
-- one configuration) run in parallel worker processes (-j N), or split into shards
-- by a scheduler (a Slurm job array, mpirun) and merged; doc/tune.md.
--
-- A worker is a fresh `lua5.4` process started through xargs -P (io.popen: no C
-- binding, no extra rock): it reads its point from a file, runs it and writes the
-- result as a Lua literal (floats exact, %q). The parent reads the points' numbers as
-- they finish, and hands the results to its caller in the plan's order, so the
-- output is byte-identical to a serial run's.
local runner = require("shmemlab.runner")

local par = {}

------------------------------------------------------------------------------
-- results as data

-- the keys a portable result leaves out when they hold tables: the op, the machine, the
-- op's state, and (unless the run writes --output folders) what only those folders read
local DROP = { op = true, machine = true, state = true }
local OUTPUT_ONLY = { frames = true, prof = true, trace = true, frame_report = true,
                      frame_compare = true }

local json_array_mt                    -- json.array's metatable, kept through a round trip

-- v as a Lua literal (tables of numbers, strings, booleans; json arrays as A{...})
local function literal(v, out, drop, seen)
  local t = type(v)
  if t == "number" then
    out[#out + 1] = math.type(v) == "integer" and string.format("%d", v)
      or v ~= v and "(0/0)" or string.format("%q", v)
  elseif t == "string" or t == "boolean" then
    out[#out + 1] = string.format("%q", v)
  elseif t == "table" then
    if seen[v] then error("par: a result refers to itself", 0) end
    seen[v] = true
    local mt = getmetatable(v)
    out[#out + 1] = mt == json_array_mt and "A{" or "{"
    local keys = {}
    for k in pairs(v) do
      local x = v[k]
      if not (drop[k] and type(x) == "table") and type(x) ~= "function"
         and type(x) ~= "userdata" then
        keys[#keys + 1] = k
      end
    end
    table.sort(keys, function(a, b)
      if type(a) == type(b) then return a < b end
      return type(a) == "number"
    end)
    for _, k in ipairs(keys) do
      out[#out + 1] = "["
      literal(k, out, drop, seen)
      out[#out + 1] = "]="
      literal(v[k], out, drop, seen)
      out[#out + 1] = ","
    end
    out[#out + 1] = "}"
    seen[v] = nil
  else
    out[#out + 1] = "nil"
  end
end

-- par.encode(v [, keep_output]) -> "return <literal>" of v without the DROP keys
-- (and, unless keep_output, without the OUTPUT_ONLY ones)
function par.encode(v, keep_output)
  json_array_mt = json_array_mt or getmetatable(require("shmemlab.json").array())
  local drop = {}
  for k in pairs(DROP) do drop[k] = true end
  if not keep_output then for k in pairs(OUTPUT_ONLY) do drop[k] = true end end
  local out = { "return " }
  literal(v, out, drop, {})
  return table.concat(out)
end

-- par.decode(text, what) -> the value of a par.encode text (what names it in errors)
function par.decode(text, what)
  local json = require("shmemlab.json")
  local chunk, err = load(text, "=" .. what, "t", { A = json.array })
  if not chunk then error(string.format("%s is not a shmemlab result file (%s)", what, err), 0) end
  return chunk()
end

-- a machine's stand-in in a portable result: its task rows (m:tasks) as recorded
local Tasks = { __index = { tasks = function(self, pe) return self.rows[pe] or {} end } }

-- the task rows of every PE of a measured run (what --output's folders read)
local function task_rows(res, pes)
  local rows = {}
  for pe = 0, pes - 1 do rows[pe] = res.machine:tasks(pe) end
  return rows
end

-- the result of runner.run made portable: each checked-run report's text formatted
-- (check.format reads the machine); keep_output keeps the frames, profile, trace and
-- the task rows
function par.portable(r, keep_output)
  for _, res in ipairs({ r.shmem, r.baseline }) do
    for _, rep in ipairs(res.sanitizer and res.sanitizer.reports or {}) do
      rep.text = require("shmemlab.check").format(res.machine, rep)
    end
    if keep_output then res.task_rows = task_rows(res, r.config.pes) end
  end
  return r
end

-- a decoded result given back what par.encode dropped: the op, its baseline's op, and
-- (folders) a stand-in machine of task rows
function par.attach(r, op)
  r.op, r.shmem.op = op, op
  if r.baseline then r.baseline.op = runner.load_baseline(op, r.config.baseline) end
  for _, res in ipairs({ r.shmem, r.baseline }) do
    if res.task_rows then res.machine = setmetatable({ rows = res.task_rows }, Tasks) end
  end
  return r
end

------------------------------------------------------------------------------
-- a worker: one point

-- par.worker(inpath, outpath): run the point of inpath ({op = path, opts =, output =})
-- and write {ok = true, result =} or {ok = false, kind =, message =} to outpath
function par.worker(inpath, outpath)
  local f = assert(io.open(inpath, "r"))
  local job = par.decode(f:read("a"), inpath)
  f:close()
  local ok, r = pcall(function()
    return par.portable(runner.run(job.op, job.opts, true), job.output)
  end)
  local doc = ok and { ok = true, result = r }
    or { ok = false, kind = runner.kind(r) or "run", message = tostring(r) }
  local tmp = outpath .. ".part"
  local o = assert(io.open(tmp, "w"))
  o:write(par.encode(doc, job.output), "\n")
  o:close()
  assert(os.rename(tmp, outpath))
end

------------------------------------------------------------------------------
-- the parent

-- a shell word
local function q(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- the number of cores (nproc), at least 1
function par.cores()
  local p = io.popen("nproc 2>/dev/null")
  local n = p and math.tointeger(tonumber(p:read("l") or ""))
  if p then p:close() end
  return n and n >= 1 and n or 1
end

-- the Lua interpreter running this process (the lowest arg index), else lua5.4
local function interpreter()
  local a = rawget(_G, "arg")
  if type(a) ~= "table" then return "lua5.4" end
  local i = -1
  while a[i - 1] do i = i - 1 end
  local lua = a[i]
  if type(lua) == "string" and lua:match("lua[%d.]*$") then return lua end
  return "lua5.4"
end

-- a fresh scratch folder
local function scratch()
  local base = os.tmpname()
  os.remove(base)
  assert(require("lfs").mkdir(base), "par: cannot make a scratch folder " .. base)
  return base
end

-- par.wipe(dir): remove a scratch folder and its files
function par.wipe(dir)
  local lfs = require("lfs")
  for f in lfs.dir(dir) do
    if f ~= "." and f ~= ".." then os.remove(dir .. "/" .. f) end
  end
  lfs.rmdir(dir)
end

-- write text to path
local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- the progress line on err: shown once a run has taken PROGRESS_S seconds
par.PROGRESS_S = 3

-- the stream a run of several points shows its progress on: err when it is the process's
-- stderr and a terminal, or when SHMEMLAB_PROGRESS=1 (to a log); else nil (silent, as the
-- README's captured outputs need)
function par.progress_stream(err)
  local env = os.getenv("SHMEMLAB_PROGRESS")
  if env == "1" then return err end
  if env == "0" or err ~= io.stderr then return nil end
  if par.tty == nil then par.tty = os.execute("[ -t 2 ]") == true end
  return par.tty and err or nil
end

-- a progress reporter of total points on err (nil: silent); step(done) after each
-- point, finish() at the end
local function progress(err, total, what)
  local t0, shown = os.time(), false
  local function step(done)
    local elapsed = os.time() - t0
    if not err or total < 2 or elapsed < par.PROGRESS_S then return end
    shown = true
    local left = done > 0 and math.floor(elapsed / done * (total - done) + 0.5) or 0
    err:write(string.format("\r%s: %d/%d points done, %d s elapsed, about %d s left   ", what,
                            done, total, elapsed, left))
    if err.flush then err:flush() end
  end
  return step, function() if shown then err:write("\n") end end
end

-- the cost a point is scheduled by (largest first): elements moved, roughly
local function cost(ro)
  return (ro.count or 0) * (ro.pes or 8) + (ro.local_tokens or 0) * (ro.hidden or 0)
end

-- par.order(points, jobs) -> the order the workers take the points in: the jobs - 1
-- costliest first (each keeps a worker busy while the others go on), then the rest in the
-- plan's order, so that the first rows come early and the longest point does not start last
function par.order(list, jobs)
  local by_cost = {}
  for n in ipairs(list) do by_cost[n] = n end
  table.sort(by_cost, function(a, b)
    local ca, cb = cost(list[a].opts), cost(list[b].opts)
    if ca ~= cb then return ca > cb end
    return a < b
  end)
  local order, first = {}, {}
  for i = 1, math.min(jobs - 1, #by_cost) do
    order[i], first[by_cost[i]] = by_cost[i], true
  end
  for n in ipairs(list) do
    if not first[n] then order[#order + 1] = n end
  end
  return order
end

-- run the points with jobs workers; each(i, r) in the order of i as soon as 1..i are done
local function run_workers(op, list, jobs, o, each)
  local dir = scratch()
  local ok, err = pcall(function()
    write(dir .. "/worker.lua", string.format("package.path = %q\npackage.cpath = %q\n"
      .. "require('shmemlab.par').worker(arg[1], arg[2])\n", package.path, package.cpath))
    write(dir .. "/run.sh", string.format("%s %s \"$1.in\" \"$1.out\" 2>\"$1.err\"\necho \"$1\"\n",
      q(interpreter()), q(dir .. "/worker.lua")))
    for n, pt in ipairs(list) do
      write(string.format("%s/%d.in", dir, n), par.encode({ op = op.path, opts = pt.opts,
                                                            output = o.output }))
    end
    local names = {}
    for i, n in ipairs(par.order(list, jobs)) do names[i] = string.format("%s/%d", dir, n) end
    write(dir .. "/points", table.concat(names, "\n") .. "\n")
    local p = assert(io.popen(string.format("xargs -P %d -n 1 sh %s < %s", jobs,
                                            q(dir .. "/run.sh"), q(dir .. "/points"))))
    local done, ready, next_i = 0, {}, 1
    local step, finish = progress(o.err, #list, o.what or "shmemlab")
    for line in p:lines() do
      local n = math.tointeger(tonumber(line:match("(%d+)$")))
      if n then
        ready[n], done = true, done + 1
        while ready[next_i] do
          each(next_i, par.collect(op, dir, next_i))
          next_i = next_i + 1
        end
        step(done)
      end
    end
    p:close()
    finish()
    if next_i <= #list then
      each(next_i, par.collect(op, dir, next_i))       -- raises its error
      error(runner.error_of("run", string.format("worker of point %d gave no result", next_i)), 0)
    end
  end)
  par.wipe(dir)
  if not ok then error(err, 0) end
end

-- the result of point n in dir (its .out file), attached to op; a worker's error raised
-- again with its kind
function par.collect(op, dir, n)
  local f = io.open(string.format("%s/%d.out", dir, n), "r")
  if not f then
    local e = io.open(string.format("%s/%d.err", dir, n), "r")
    local why = e and e:read("a") or ""
    if e then e:close() end
    error(runner.error_of("run", string.format("worker of point %d failed: %s", n,
      why ~= "" and why:gsub("%s+$", "") or "no output")), 0)
  end
  local doc = par.decode(f:read("a"), string.format("point %d", n))
  f:close()
  if not doc.ok then error(runner.error_of(doc.kind, doc.message), 0) end
  return par.attach(doc.result, op)
end

-- par.map(op, points, o, each) -> results: run each point ({opts = runner options}) and
-- call each(i, r) in the order of i, as soon as 1..i are done. o: jobs (workers; 1 or one
-- point: in this process, machines released), output (keep what --output's folders
-- read), err (the progress line's stream), what (its name)
function par.map(op, points, o, each)
  local results = {}
  local function keep(i, r)
    results[i] = r
    if each then each(i, r) end
  end
  if (o.jobs or 1) <= 1 or #points <= 1 or not op.path then     -- an op table: here
    local step, finish = progress(o.err, #points, o.what or "shmemlab")
    for i, pt in ipairs(points) do
      keep(i, runner.run(op, pt.opts, true))
      step(i)
    end
    finish()
  else
    run_workers(op, points, math.min(o.jobs, #points), o, keep)
  end
  return results
end

------------------------------------------------------------------------------
-- shards

-- par.shard_env([env]) -> index (0-based), count of this process's shard from the
-- launcher's environment (a Slurm job array, Open MPI, MPICH/PMI, PMIx), or nil when
-- none says so; env(name) reads a variable (default os.getenv)
function par.shard_env(env)
  env = env or os.getenv
  local function int(name) return math.tointeger(tonumber(env(name) or "")) end
  local id, count = int("SLURM_ARRAY_TASK_ID"), int("SLURM_ARRAY_TASK_COUNT")
  if id and count then return id - (int("SLURM_ARRAY_TASK_MIN") or 0), count, "slurm" end
  for _, pair in ipairs({ { "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "mpi" },
                          { "PMI_RANK", "PMI_SIZE", "mpi" }, { "PMIX_RANK", "PMIX_SIZE", "mpi" } }) do
    local rank, size = int(pair[1]), int(pair[2])
    if rank and size then return rank, size, pair[3] end
  end
  return nil
end

-- the points of shard index (0-based) of count: every count-th from index + 1
function par.share(n, index, count)
  local mine = {}
  for i = index + 1, n, count do mine[#mine + 1] = i end
  return mine
end

-- the file of shard index of count in dir
function par.shard_path(dir, index, count)
  return string.format("%s/shard-%04d-of-%04d.lua", dir, index, count)
end

-- write a shard file: the command line (argv), the number of points, and the results
-- (by point number) of this shard's points
function par.write_shard(dir, index, count, doc)
  local path = par.shard_path(dir, index, count)
  write(path .. ".part", par.encode(doc) .. "\n")
  assert(os.rename(path .. ".part", path))
  return path
end

-- par.read_shards(dir) -> {argv =, points =, results = {[i] = portable result}, count =}:
-- every shard file of dir, checked to be of one run and complete; or a usage error
function par.read_shards(dir)
  local lfs = require("lfs")
  if lfs.attributes(dir, "mode") ~= "directory" then runner.usage("merge: no folder %s", dir) end
  local files = {}
  for f in lfs.dir(dir) do
    if f:match("^shard%-%d+%-of%-%d+%.lua$") then files[#files + 1] = f end
  end
  table.sort(files)
  if #files == 0 then runner.usage("merge: no shard files (shard-*-of-*.lua) in %s", dir) end
  local all
  for _, name in ipairs(files) do
    local f = assert(io.open(dir .. "/" .. name, "r"))
    local doc = par.decode(f:read("a"), dir .. "/" .. name)
    f:close()
    all = all or { argv = doc.argv, points = doc.points, count = doc.count, results = {},
                   seen = {} }
    if doc.count ~= all.count or doc.points ~= all.points
       or table.concat(doc.argv, "\0") ~= table.concat(all.argv, "\0") then
      runner.usage("merge: %s is of another run than %s", name, files[1])
    end
    all.seen[doc.index] = true
    for i, r in pairs(doc.results) do all.results[i] = r end
  end
  for i = 0, all.count - 1 do
    if not all.seen[i] then
      runner.usage("merge: shard %d of %d is missing in %s (%s)", i, all.count, dir,
                   par.shard_path(dir, i, all.count):match("[^/]*$"))
    end
  end
  all.seen = nil
  return all
end

return par
