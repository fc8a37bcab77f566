-- What other tools read from run_op.lua's --output folders (issue 12, parts 1 and 2):
-- the three kernel filters of upstream scripts give the same Time(us), msprof_*.json is
-- an array of events, op_summary_*.csv has msprof's columns, and every flow arrow of both
-- timelines binds to a slice the way the Trace Event Format binds it.
local msprof = require("shmemlab.msprof")
local runner = require("shmemlab.runner")
local cjson = require("cjson")
local lfs = require("lfs")
local run = require("spec.helpers.cli").run

local tmpdir = require("spec.helpers.cli").tmpdir

-- the files of a folder matching pattern
local function files(dir, pattern)
  local t = {}
  for f in lfs.dir(dir) do if f:match(pattern) then t[#t + 1] = dir .. "/" .. f end end
  table.sort(t)
  return t
end

-- the filters of hicann/shmem's data_statistic.py, the guide's snippet and shmemlab's
local FILTERS = {
  VEC = function(kt) return kt:find("VEC", 1, true) ~= nil end,
  CORE = function(kt) return kt:find("CORE", 1, true) ~= nil end,
  ["CORE|AIV"] = function(kt) return kt:find("CORE", 1, true) ~= nil or kt:find("AIV", 1, true) ~= nil end,
}

describe("--output folders read by upstream scripts", function()
  local dir
  setup(function()
    dir = tmpdir()
    -- data_statistic.py's own 10 warm-up and 40 measured launches, two sizes
    local status = run({ "allgather", "--pes", "2", "-b", "1K", "-e", "2K", "--block-dim", "2",
                         "--output", dir })
    assert.equal(0, status)
  end)

  it("gives the same Time(us) under the VEC, CORE and CORE|AIV filters", function()
    local want = msprof.read_csv(dir .. "/result.csv")
    for _, root in ipairs({ dir, dir .. "/hccl" }) do
      local means_of = {}
      for name, f in pairs(FILTERS) do
        local means, info = msprof.statistics(root, { kernel = f, write = false })
        means_of[name] = means
        for _, pf in ipairs(info.per_folder) do
          assert.equal(2 * 50, pf.kernel_rows, name .. " " .. pf.folder)   -- exactly the kernels
        end
      end
      assert.same(means_of.VEC, means_of.CORE)
      assert.same(means_of.VEC, means_of["CORE|AIV"])
      if root == dir then
        for i, row in ipairs(want.rows) do
          assert.equal(row[#row], string.format("%.3f", means_of.VEC[i]))
        end
      end
    end
  end)

  it("writes msprof_*.json as a JSON array of events", function()
    local events = {}
    for pe = 0, 1 do
      local out = string.format("%s/PROF_000001_%d/mindstudio_profiler_output", dir, pe)
      local list = files(out, "^msprof_.*%.json$")
      assert.equal(1, #list)
      local doc = cjson.decode(io.open(list[1]):read("a"))
      assert.is_nil(doc.traceEvents)
      for _, e in ipairs(doc) do events[#events + 1] = e end     -- events.extend(json.load(f))
    end
    local slices = 0
    for _, e in ipairs(events) do if e.ph == "X" then slices = slices + 1 end end
    assert.is_true(slices > 0)
    assert.is_table(cjson.decode(io.open(dir .. "/timeline.json"):read("a")).traceEvents)
  end)

  it("writes op_summary_*.csv with msprof's columns, a row per kernel", function()
    local out = dir .. "/PROF_000001_1/mindstudio_profiler_output"
    local sum = msprof.read_csv(files(out, "^op_summary_.*%.csv$")[1])
    -- msprof's newer header (issue 26, defect 6): Mix Block Dim beside Block Dim, Context ID last
    assert.same({ "Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State",
      "Task Type", "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Dim",
      "Mix Block Dim", "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats",
      "Output Shapes", "Output Data Types", "Output Formats", "Context ID" }, sum.header)
    local tt = msprof.read_csv(files(out, "^task_time_.*%.csv$")[1])
    local kernels = {}
    for _, r in ipairs(tt.rows) do if r[3] ~= "MEMCPY_ASYNC" then kernels[#kernels + 1] = r end end
    assert.equal(#kernels, #sum.rows)
    local prev
    for i, r in ipairs(sum.rows) do
      local k = kernels[i]
      assert.equal("1", r[1])
      assert.equal(k[5], r[3])                        -- Task ID
      assert.equal(k[2], r[5])                        -- Op Name = kernel_name
      assert.equal("AI_VECTOR_CORE", r[8])
      assert.equal(k[7], r[9])                        -- start
      assert.equal(k[6], r[10])                       -- duration = task_time(us)
      local wait = prev and math.max(0, tonumber(k[7]) - prev) or 0  -- a sweep restarts the clock
      assert.near(wait, tonumber(r[11]), 0.0011)
      assert.equal("2", r[12])                        -- --block-dim 2
      assert.equal("N/A", r[13])                      -- Mix Block Dim: not a Mix operator
      assert.equal(#sum.header, #r)
      assert.equal("N/A", r[21])                      -- Context ID
      prev = tonumber(k[8])
    end
  end)
end)

-- the slices of a trace by "pid/tid"
local function tracks_of(events)
  local tracks = {}
  for _, e in ipairs(events) do
    if e.ph == "X" then
      local k = math.tointeger(e.pid) .. "/" .. math.tointeger(e.tid)
      tracks[k] = tracks[k] or {}
      table.insert(tracks[k], e)
    end
  end
  return tracks
end

-- the slice a flow event binds to (Trace Event Format: "s", and "f" with bp "e", the
-- innermost slice of its thread with ts <= t < ts + dur; this spec's own reading)
local function bound(tracks, e)
  local best
  for _, x in ipairs(tracks[math.tointeger(e.pid) .. "/" .. math.tointeger(e.tid)] or {}) do
    if x.ts <= e.ts and e.ts < x.ts + x.dur and (not best or x.dur < best.dur) then best = x end
  end
  return best
end

-- every flow of a timeline file: {s=, f=, from = bound slice, to = bound slice}
local function flows_of(path)
  local events = cjson.decode(io.open(path):read("a")).traceEvents
  local tracks, by = tracks_of(events), {}
  for _, e in ipairs(events) do
    if e.ph == "s" or e.ph == "f" then
      by[e.id] = by[e.id] or {}
      by[e.id][e.ph] = e
    end
  end
  local list = {}
  for _, p in pairs(by) do
    assert.equal("e", p.f.bp)
    list[#list + 1] = { s = p.s, f = p.f, from = bound(tracks, p.s), to = bound(tracks, p.f) }
  end
  return list, tracks
end

describe("timeline arrows", function()
  for _, case in ipairs({ { "allgather", "--pes", "4" }, { "allreduce", "--pes", "4" },
                          { "broadcast", "--pes", "3", "--root", "1" } }) do
    it("bind to the write and to what it released in " .. case[1], function()
      local dir = tmpdir()
      local argv = { case[1], "--count", "4096", "-w", "0", "-n", "1", "--output", dir }
      for i = 2, #case do argv[#argv + 1] = case[i] end
      assert.equal(0, (run(argv)))
      for _, path in ipairs({ dir .. "/timeline.json", dir .. "/hccl/timeline.json" }) do
        local flows = flows_of(path)
        assert.is_true(#flows > 0, path)
        for _, fl in ipairs(flows) do
          local what = string.format("%s flow %d", path, math.tointeger(fl.s.id))
          assert.is_table(fl.from, what .. ": its start is in no slice")
          assert.is_table(fl.to, what .. ": its end is in no slice")
          assert.is_true(fl.from.cat == "signal" or fl.from.cat == "mte", what)   -- the write
          assert.equal(fl.from.ts, fl.s.ts)                                  -- at its start
          assert.is_true(fl.to.tid < msprof.KERNEL_TID, what)                -- a block's code
          assert.is_true(fl.to.ts == fl.f.ts or fl.f.ts > fl.to.ts + fl.to.dur - 0.0011, what)
        end
      end
    end)
  end

  it("leaves no released wait without its arrow", function()
    local r = runner.run("allgather", { pes = 4, count = 4096, warmup = 0, iters = 1, trace = true })
    for _, res in ipairs({ r.shmem, r.baseline }) do
      local wakes = 0
      for _, t in ipairs(res.trace) do if t.kind == "wake" then wakes = wakes + 1 end end
      local _, flows = runner.trace_events(res)
      assert.is_true(wakes > 0)
      assert.equal(wakes, #flows)
    end
  end)

  it("refuses a trace whose flow lies in a gap or at a slice's end", function()
    local events = { { pe = 0, block = 0, name = "a", ts = 0, dur = 10 },
                     { pe = 0, block = 0, name = "b", ts = 20, dur = 10 } }
    for _, ts in ipairs({ 15, 10, 30 }) do
      local t = msprof.trace(events, { { id = 1, from = { pe = 0, block = 0, ts = 1 },
                                         to = { pe = 0, block = 0, ts = ts } } })
      assert.has_error(function() msprof.check_trace(t) end)
    end
    assert.is_true(msprof.check_trace(msprof.trace(events, { { id = 1,
      from = { pe = 0, block = 0, ts = 0 }, to = { pe = 0, block = 0, ts = 20 } } })))
  end)

  it("puts p2p's kernels and activity on the chosen PEs", function()
    local dir = tmpdir()
    assert.equal(0, (run({ "p2p", "--pes", "4", "--src", "2", "--dst", "3", "--count", "4096",
                           "-w", "0", "-n", "1", "--output", dir })))
    local events = cjson.decode(io.open(dir .. "/timeline.json"):read("a")).traceEvents
    local kernel_pes, busy = {}, {}
    for _, e in ipairs(events) do
      if e.ph == "X" then
        busy[math.tointeger(e.pid)] = true
        if e.tid == msprof.KERNEL_TID then kernel_pes[math.tointeger(e.pid)] = true end
      end
    end
    assert.same({ [2] = true, [3] = true }, kernel_pes)
    assert.same({ [2] = true, [3] = true }, busy)
  end)
end)
