-- -j N (worker processes), shards (--shards DIR, --shard I/N, a launcher's environment)
-- and `merge`: the output of every way of spreading a run is the serial run's, byte for
-- byte. No wall-clock figure is asserted.
local par = require("shmemlab.par")
local H = require("spec.helpers.cli")
local lfs = require("lfs")

-- a sweep small enough for a spec: 4 sizes of allgather, 1 warm-up and 2 launches
local SWEEP = { "allgather", "-b", "4K", "-e", "32K", "-w", "1", "-n", "2", "--timing-only" }

-- stdout of the command line run as a process (run_op.lua), and its exit status line
local function shell(args, env)
  local words = {}
  for i, a in ipairs(args) do words[i] = "'" .. a .. "'" end
  local p = assert(io.popen(string.format("%s lua5.4 run_op.lua %s 2>/dev/null; echo \"exit=$?\"",
                                          env or "", table.concat(words, " "))))
  local out = p:read("a")
  p:close()
  return out
end

local wipe = require("shmemlab.par").wipe

describe("-j N", function()
  it("prints a size sweep byte for byte as the serial run", function()
    local s1, serial = H.run(H.append(SWEEP, { "-j", "1" }))
    local s2, parallel = H.run(H.append(SWEEP, { "-j", "2" }))
    assert.equal(0, s1)
    assert.equal(0, s2)
    assert.equal(serial, parallel)
    assert.matches("       32768         8192  int32", serial, 1, true)
  end)

  it("prints a PE sweep, its JSON and its plot as the serial run", function()
    local dir = H.tmpdir()
    local args = { "allgather", "--pes", "2,4,8", "--count", "1024", "-w", "1", "-n", "2" }
    local _, serial = H.run(H.append(args, { "-j", "1", "--plot", dir .. "/a.svg" }))
    local _, parallel = H.run(H.append(args, { "-j", "3", "--plot", dir .. "/b.svg" }))
    assert.equal(serial, parallel)
    local _, js = H.run(H.append(args, { "-j", "1", "--json" }))
    local _, jp = H.run(H.append(args, { "-j", "2", "--json" }))
    assert.equal(js, jp)
    local a, b = io.open(dir .. "/a.svg"):read("a"), io.open(dir .. "/b.svg"):read("a")
    assert.equal(a, b)
    wipe(dir)
  end)

  it("writes the --output folders of the serial run (time stamps apart)", function()
    -- every file under dir, by its path with the 14-digit time stamps blanked
    local function files(dir)
      local t = {}
      local function walk(d, rel)
        for f in lfs.dir(d) do
          if f ~= "." and f ~= ".." then
            local path, r = d .. "/" .. f, (rel == "" and "" or rel .. "/") .. f
            if lfs.attributes(path, "mode") == "directory" then
              walk(path, r)
            else
              t[r:gsub("%d%d%d%d%d%d%d%d%d%d%d%d%d%d", "STAMP")] =
                (io.open(path):read("a"):gsub("%d%d%d%d%d%d%d%d%d%d%d%d%d%d", "STAMP"))
            end
          end
        end
      end
      walk(dir, "")
      return t
    end
    local a, b = H.tmpdir(), H.tmpdir()
    local args = { "allgather", "-b", "4K", "-e", "8K", "-w", "1", "-n", "2" }
    assert.equal(0, (H.run(H.append(args, { "-j", "1", "--output", a }))))
    assert.equal(0, (H.run(H.append(args, { "-j", "2", "--output", b }))))
    local fa, fb = files(a), files(b)
    assert.is_not_nil(fa["result.csv"])
    assert.same(fa, fb)
    assert.equal(0, os.execute("rm -rf '" .. a .. "' '" .. b .. "'") and 0 or 1)
  end)

  it("writes each row as soon as it and the rows before it are done, in order", function()
    local out = H.sink()
    local writes = {}
    function out:write(...)
      for _, v in ipairs({ ... }) do writes[#writes + 1] = tostring(v) end
      return self
    end
    assert.equal(0, require("shmemlab.cli").main(H.append(SWEEP, { "-j", "2" }), out, H.sink()))
    local rows = {}
    for i, w in ipairs(writes) do
      if w:match("^%s+%d+%s+%d+%s+int32") then rows[#rows + 1] = i end
    end
    assert.equal(4, #rows)                     -- one write per row, the trailer after them
    assert.matches("^# shmemlab", writes[1])
    assert.matches("Out of bounds", table.concat(writes, "", rows[4] + 1), 1, true)
    local sizes = {}
    for _, i in ipairs(rows) do sizes[#sizes + 1] = tonumber(writes[i]:match("^%s+(%d+)")) end
    assert.same({ 4096, 8192, 16384, 32768 }, sizes)
  end)

  it("shows a progress line (points done, elapsed, what is left) once a run takes long", function()
    local err, was = H.sink(), par.PROGRESS_S
    par.PROGRESS_S = 0                         -- every run counts as long
    local op = require("shmemlab.runner").load_op("allgather")
    local points = {}
    for i, n in ipairs({ 1024, 2048 }) do
      points[i] = { opts = { count = n, warmup = 0, iters = 1, baseline = "none", timing_only = true } }
    end
    local ok, e = pcall(par.map, op, points, { jobs = 2, err = err, what = "allgather" })
    par.PROGRESS_S = was
    assert.is_true(ok, e)
    local text = err:text()
    assert.matches("\rallgather: 1/2 points done, %d+ s elapsed, about %d+ s left", text)
    assert.matches("\rallgather: 2/2 points done, %d+ s elapsed, about 0 s left +\n$", text)
    assert.is_nil(par.progress_stream(H.sink()))   -- not the process's stderr: silent
  end)

  it("refuses -j 0, and names a failed point's error", function()
    local status, _, err = H.run(H.append(SWEEP, { "-j", "0" }))
    assert.equal(2, status)
    assert.matches("-j must be at least 1, got 0", err, 1, true)
    local dir = H.tmpdir()
    local path = dir .. "/bad.lua"
    local f = assert(io.open(path, "w"))
    f:write([[local op = dofile("ops/allgather.lua")
local run = op.run
op.name = "bad"
op.run = function(m, c, s)
  if c.count > 2048 then error("bad: this size fails", 0) end
  return run(m, c, s)
end
return op
]])
    f:close()
    local out = shell({ path, "-b", "4K", "-e", "16K", "-w", "1", "-n", "1", "-j", "2",
                        "--baseline", "none" })
    assert.matches("exit=3\n$", out)
    local _, _, e = H.run({ path, "-b", "4K", "-e", "16K", "-w", "1", "-n", "1", "-j", "2",
                            "--baseline", "none" })
    assert.matches("bad: this size fails", e, 1, true)
    wipe(dir)
  end)
end)

describe("the order of the points", function()
  it("hands out the jobs - 1 costliest first, then the plan's order", function()
    local list = {}
    for i, n in ipairs({ 1, 2, 4, 8, 16, 32, 64, 128 }) do list[i] = { opts = { count = n } } end
    assert.same({ 8, 1, 2, 3, 4, 5, 6, 7 }, par.order(list, 2))
    assert.same({ 8, 7, 1, 2, 3, 4, 5, 6 }, par.order(list, 3))
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8 }, par.order(list, 1))
  end)
end)

describe("results as data", function()
  it("round-trips numbers exactly, integers as integers, JSON arrays as arrays", function()
    local json = require("shmemlab.json")
    local v = { a = 0.1 + 0.2, b = 3, c = { 1 / 3, -2.5e-300 }, d = json.array(), e = "x\n\"y",
                f = true, g = math.huge }
    local back = par.decode(par.encode(v), "test")
    assert.equal(v.a, back.a)
    assert.equal("integer", math.type(back.b))
    assert.equal(v.c[1], back.c[1])
    assert.equal(v.c[2], back.c[2])
    assert.is_true(json.is_array(back.d))
    assert.equal(v.e, back.e)
    assert.equal(math.huge, back.g)
  end)
end)

describe("shards", function()
  it("take their index and count from Slurm, Open MPI or PMI", function()
    local function env(t) return function(k) return t[k] end end
    assert.same({ 1, 3, "slurm" }, { par.shard_env(env{ SLURM_ARRAY_TASK_ID = "5",
      SLURM_ARRAY_TASK_MIN = "4", SLURM_ARRAY_TASK_COUNT = "3" }) })
    assert.same({ 2, 4, "mpi" }, { par.shard_env(env{ OMPI_COMM_WORLD_RANK = "2",
      OMPI_COMM_WORLD_SIZE = "4" }) })
    assert.same({ 0, 2, "mpi" }, { par.shard_env(env{ PMI_RANK = "0", PMI_SIZE = "2" }) })
    assert.is_nil(par.shard_env(env{}))
    assert.same({ 2, 5, 8 }, par.share(9, 1, 3))
  end)

  it("merge into the serial run's table and JSON", function()
    local dir = H.tmpdir()
    local _, serial = H.run(SWEEP)
    local _, serial_json = H.run(H.append(SWEEP, { "--json" }))
    for i = 0, 2 do
      local st, out, err = H.run(H.append(SWEEP, { "--shards", dir, "--shard", i .. "/3" }))
      assert.equal(0, st)
      assert.equal("", out)
      assert.matches("shard " .. i .. " of 3", err, 1, true)
    end
    local st, merged = H.run({ "merge", dir })
    assert.equal(0, st)
    assert.equal(serial, merged)
    local _, merged_json = H.run({ "merge", dir, "--json" })
    assert.equal(serial_json, merged_json)
    os.remove(par.shard_path(dir, 1, 3))
    local st2, _, err = H.run({ "merge", dir })
    assert.equal(2, st2)
    assert.matches("merge: shard 1 of 3 is missing in " .. dir .. " (shard-0001-of-0003.lua)",
                   err, 1, true)
    wipe(dir)
  end)

  it("of a --tune merge into the serial --tune", function()
    local args = { "allgather", "--count", "4096", "-w", "1", "-n", "1", "--tune" }
    local dir = H.tmpdir()
    local _, serial = H.run(H.append(args, { "-j", "1" }))
    for i = 0, 1 do
      assert.equal(0, (H.run(H.append(args, { "--shards", dir, "--shard", i .. "/2" }))))
    end
    local st, merged = H.run({ "merge", dir })
    assert.equal(0, st)
    assert.equal(serial, merged)
    wipe(dir)
  end)

  it("refuse a bad --shard and --shards without a shard", function()
    local st, _, err = H.run(H.append(SWEEP, { "--shards", "/tmp", "--shard", "2/2" }))
    assert.equal(2, st)
    assert.matches("--shard must be I/N with 0 <= I < N, got '2/2'", err, 1, true)
    st, _, err = H.run(H.append(SWEEP, { "--shard", "0/2" }))
    assert.equal(2, st)
    assert.matches("--shard needs --shards DIR", err, 1, true)
  end)

  -- Debian's openmpi-bin (scripts/deps.sh installs it): two ranks, each its shard
  local has_mpirun = os.execute("command -v mpirun >/dev/null 2>&1")
  local mpi_it = has_mpirun and it or pending
  mpi_it("of a 2-rank mpirun merge into the serial run"
    .. (has_mpirun and "" or " (mpirun is not installed: apt-get install openmpi-bin)"), function()
    local dir = H.tmpdir()
    local _, serial = H.run(SWEEP)
    local words = {}
    for i, a in ipairs(SWEEP) do words[i] = a end
    local env = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
      .. "OMPI_MCA_rmaps_base_oversubscribe=1"
    local out = H.sh(string.format("%s mpirun -n 2 lua5.4 run_op.lua %s --shards %s -j 1", env,
                                   table.concat(words, " "), dir))
    assert.matches("exit=0\n$", out)
    assert.is_not_nil(io.open(par.shard_path(dir, 0, 2)))
    assert.is_not_nil(io.open(par.shard_path(dir, 1, 2)))
    local st, merged = H.run({ "merge", dir })
    assert.equal(0, st)
    assert.equal(serial, merged)
    wipe(dir)
  end)
end)
