-- Specs of shmemlab.msprof: PROF_* output, the data_statistic step on a hand-built fixture
-- (spec/fixtures/msprof, see gen.lua there for how its numbers are laid out), CSV parsing
-- and Chrome traces (parsed back with the Debian cjson module, not shmemlab.json).

local msprof = require("shmemlab.msprof")
local lfs = require("lfs")
local cjson = require("cjson")

local FIXTURE = "spec/fixtures/msprof"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function write(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

local function rm_tree(path)
  if lfs.attributes(path, "mode") == "directory" then
    for name in lfs.dir(path) do
      if name ~= "." and name ~= ".." then rm_tree(path .. "/" .. name) end
    end
    assert(lfs.rmdir(path))
  elseif lfs.attributes(path, "mode") then
    assert(os.remove(path))
  end
end

local function copy_tree(from, to)
  assert(lfs.mkdir(to))
  for name in lfs.dir(from) do
    if name ~= "." and name ~= ".." then
      local a, b = from .. "/" .. name, to .. "/" .. name
      if lfs.attributes(a, "mode") == "directory" then copy_tree(a, b) else write(b, read(a)) end
    end
  end
end

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(lfs.mkdir(p))
  return p
end

local function close(expected, actual)
  assert.is_true(math.abs(expected - actual) < 1e-9,
    string.format("expected %.12g, got %.12g", expected, actual))
end

describe("msprof.statistics on the fixture", function()
  local dir
  before_each(function()
    dir = tmpdir()
    copy_tree(FIXTURE, dir .. "/out")
  end)
  after_each(function() rm_tree(dir) end)

  it("averages launches 11..50 of each case over both PEs and writes result.csv", function()
    local root = dir .. "/out"
    local means, info = msprof.statistics(root)
    -- PE0: case 0 = 100 + k -> mean over k = 11..50 is 130.5; case 1 = 200 + 2k -> 261
    -- PE1: case 0 = 110 + k -> 140.5;                         case 1 = 300 + k/2 -> 315.25
    assert.are.equal(2, #means)
    close((130.5 + 140.5) / 2, means[1])
    close((261 + 315.25) / 2, means[2])
    assert.are.same({ "PROF_000001_0", "PROF_000001_1" }, info.folders)
    close(130.5, info.per_folder[1].means[1])
    close(261, info.per_folder[1].means[2])
    close(140.5, info.per_folder[2].means[1])
    close(315.25, info.per_folder[2].means[2])
    assert.are.equal(100, info.per_folder[1].kernel_rows)   -- MEMCPY, EVENT_RECORD, AI_CPU dropped
    assert.are.equal(100, info.per_folder[2].kernel_rows)   -- MIX_AIV and AI_CORE kept
    assert.are.equal(50, info.per_folder[1].rows_per_case)
    assert.are.equal(2, info.n_cases)
    -- the first task_time file by name, not the later decoy of 99999 us
    assert.truthy(info.files[1]:find("task_time_20250101120000000.csv", 1, true), info.files[1])
    assert.are.equal(root .. "/result.csv", info.result_csv)
    assert.are.equal("DataSize,Blocks,Time(us)\n1024,8,135.500\n65536,16,288.125\n",
      read(root .. "/result.csv"))
  end)

  it("follows warmup and iters", function()
    local means = msprof.statistics(dir .. "/out", { warmup = 0, iters = 50, write = false })
    -- k = 1..50: PE0 125.5 and 251, PE1 135.5 and 312.75
    close((125.5 + 135.5) / 2, means[1])
    close((251 + 312.75) / 2, means[2])
    assert.is_nil(lfs.attributes(dir .. "/out/result.csv"))
    means = msprof.statistics(dir .. "/out", { warmup = 48, iters = 2, write = false })
    -- k = 49, 50: PE0 149.5 and 299, PE1 159.5 and 324.75
    close((149.5 + 159.5) / 2, means[1])
    close((299 + 324.75) / 2, means[2])
  end)

  it("takes the cases from opts.cases and writes where asked", function()
    local out = dir .. "/elsewhere.csv"
    local means = msprof.statistics(dir .. "/out", { cases = { header = { "Case" }, rows = { { "only" } } },
      result_path = out })
    -- one case of 100 rows: warm-up rows 1..10, then rows 11..50 = case 0 rows of the fixture
    close((130.5 + 140.5) / 2, means[1])
    assert.are.equal(1, #means)
    assert.are.equal("Case,Time(us)\nonly,135.500\n", read(out))
  end)
end)

describe("msprof.statistics errors", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rm_tree(dir) end)

  local function tasks(n, kind)
    local list, t = {}, 0
    for i = 1, n do
      list[i] = { name = "k", type = kind or "AIV", start_us = t, stop_us = t + 10 }
      t = t + 20
    end
    return list
  end

  it("needs a PROF_* folder", function()
    msprof.write_cases(dir, { header = { "DataSize" }, rows = { { 1 } } })
    lfs.mkdir(dir .. "/other")
    assert.has_error(function() msprof.statistics(dir) end, "statistics: no PROF_* folder in '" .. dir .. "'")
  end)

  it("needs a task_time file in every PROF_* folder", function()
    msprof.write_cases(dir, { header = { "DataSize" }, rows = { { 1 } } })
    msprof.write(dir, 7, "ts", { [0] = tasks(50) })
    msprof.mkdir_p(dir .. "/PROF_000007_1/mindstudio_profiler_output")
    assert.has_error(function() msprof.statistics(dir) end,
      "statistics: PROF_000007_1 has no mindstudio_profiler_output/task_time*.csv")
  end)

  it("needs warmup + iters kernel rows per case", function()
    msprof.write_cases(dir, { header = { "DataSize" }, rows = { { 1 }, { 2 } } })
    local list = tasks(98)
    for i = 1, 30 do
      table.insert(list, i * 2, { name = "m", type = "MEMCPY_ASYNC", start_us = 0, stop_us = 1 })
    end
    msprof.write(dir, 7, "ts", { [0] = tasks(100), [1] = list })
    assert.has_error(function() msprof.statistics(dir) end,
      "statistics: PROF_000007_1 has 98 kernel rows for 2 case(s): 49 per case, fewer than warmup 10 "
      .. "+ iters 40")
    assert.are.same({ 10, 10 }, (msprof.statistics(dir, { warmup = 9 })))
  end)

  it("needs a case table", function()
    msprof.write(dir, 7, "ts", { [0] = tasks(50) })
    assert.has_error(function() msprof.statistics(dir) end,
      "statistics: no results.csv in '" .. dir .. "' and no opts.cases")
  end)

  it("needs the kernel_type and task_time(us) columns", function()
    msprof.write_cases(dir, { header = { "DataSize" }, rows = { { 1 } } })
    msprof.mkdir_p(dir .. "/PROF_1/mindstudio_profiler_output")
    write(dir .. "/PROF_1/mindstudio_profiler_output/task_time_1.csv", "Device_id,kernel_type\n0,AIV\n")
    assert.has_error(function() msprof.statistics(dir) end,
      "statistics: PROF_1: no column 'task_time(us)' (header: Device_id,kernel_type)")
  end)
end)

describe("msprof.write", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rm_tree(dir) end)

  it("lays out PROF_<run>_<pe>/mindstudio_profiler_output/task_time_<ts>.csv per PE", function()
    local paths = msprof.write(dir, 1, 20250101, {
      [1] = { { name = "k", type = "AIV", stream_id = 3, task_id = 9, start_us = 0.5, stop_us = 2 } },
      [0] = {
        { name = "MEMCPY", type = "MEMCPY_ASYNC", stream_id = 3, task_id = 1, start_us = 0, stop_us = 1.25 },
        { name = 'kernel<a, "b">', type = "MIX_AIV", stream_id = 3, task_id = 2, start_us = 1.5,
          stop_us = 47.0625 },
      },
    })
    assert.are.same({ dir .. "/PROF_000001_0/mindstudio_profiler_output/task_time_20250101.csv",
      dir .. "/PROF_000001_1/mindstudio_profiler_output/task_time_20250101.csv" }, paths)
    assert.are.equal(table.concat({
      "Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),task_start(us),task_stop(us)",
      "0,MEMCPY,MEMCPY_ASYNC,3,1,1.250,0.000,1.250",
      '0,"kernel<a, ""b"">",MIX_AIV,3,2,45.562,1.500,47.062',   -- C's %.3f: exact halves to even
      "",
    }, "\n"), read(paths[1]))
    local t = msprof.read_csv(paths[1])
    assert.are.equal('kernel<a, "b">', t.rows[2][2])
    assert.are.equal("1,k,AI_VECTOR_CORE,3,9,1.500,0.500,2.000\n", read(paths[2]):match("\n(.*)$"))
  end)

  it("feeds the statistics step", function()
    local per_pe = {}
    for pe = 0, 1 do
      local list, t = {}, 0
      for case = 0, 1 do
        for _ = 1, 50 do
          list[#list + 1] = { name = "m", type = "MEMCPY_ASYNC", start_us = t, stop_us = t + 1000 }
          local us = (pe + 1) * (case + 1) * 10      -- PE0 10, 20; PE1 20, 40
          list[#list + 1] = { name = "op", type = "AIV", start_us = t, stop_us = t + us }
          t = t + 2000
        end
      end
      per_pe[pe] = list
    end
    msprof.write(dir, "run-a", 1, per_pe)
    msprof.write_cases(dir, { header = { "DataSize", "Blocks" }, rows = { { 1024, 8 }, { 2048, 8 } } })
    local means = msprof.statistics(dir)
    close(15, means[1])
    close(30, means[2])
    assert.are.equal("DataSize,Blocks,Time(us)\n1024,8,15.000\n2048,8,30.000\n", read(dir .. "/result.csv"))
    assert.truthy(lfs.attributes(dir .. "/PROF_run-a_1", "mode"))
  end)

  it("rejects a task that ends before it starts", function()
    assert.has_error(function()
      msprof.write(dir, 1, 1, { [0] = { { name = "k", type = "AIV", start_us = 2, stop_us = 1 } } })
    end, "bad argument #4 to 'write' (PE 0 task 1 needs name, type and start_us <= stop_us)")
  end)
end)

describe("msprof.parse_csv", function()
  it("reads quoted fields, CRLF, a BOM and blank lines", function()
    local t = msprof.parse_csv('\239\187\191a, b ,c\r\n1,"x, ""y""",\r\n\r\n"multi\nline",2,3\n')
    assert.are.same({ "a", "b", "c" }, t.header)
    assert.are.same({ { "1", 'x, "y"', "" }, { "multi\nline", "2", "3" } }, t.rows)
  end)

  it("reports broken quoting", function()
    assert.has_error(function() msprof.parse_csv('a\n"open', "f.csv") end,
      "f.csv: unterminated quoted field in record 2")
    assert.has_error(function() msprof.parse_csv('a\n"x"y', "f.csv") end,
      "f.csv: unexpected 'y' after a quoted field in record 2")
  end)
end)

describe("msprof.trace", function()
  local function sample()
    local events = {
      { pe = 0, name = "kernel", cat = "kernel", ts = 0, dur = 100 },
      { pe = 0, block = 0, name = "copy_in", cat = "frame", ts = 1, dur = 40, args = { bytes = 4096 } },
      { pe = 0, block = 0, name = "signal_wait", cat = "frame", ts = 10, dur = 5 },     -- nested
      { pe = 0, block = 1, name = "remote_put", cat = "frame", ts = 2, dur = 50 },
      { pe = 1, block = 0, name = "copy_in", cat = "frame", ts = 0, dur = 30 },
      { pe = 1, block = 1, name = "remote_put", cat = "frame", ts = 30, dur = 30 },
      { pe = 1, block = 1, name = "finalize", cat = "frame", ts = 60, dur = 10 },       -- adjacent
    }
    local flows = { { id = 1, name = "signal", from = { pe = 0, block = 1, ts = 51 },
      to = { pe = 1, block = 1, ts = 55 } } }
    return msprof.trace(events, flows)
  end

  it("writes a Chrome trace: a process per PE, a thread per block", function()
    local dir = tmpdir()
    finally(function() rm_tree(dir) end)
    local path = msprof.write_trace(dir .. "/sub/trace.json", sample())
    local t = cjson.decode(read(path))
    assert.are.equal("ns", t.displayTimeUnit)
    local procs, threads, slices, flow = {}, {}, {}, {}
    for _, e in ipairs(t.traceEvents) do
      if e.ph == "M" and e.name == "process_name" then
        assert.is_nil(procs[e.pid])
        procs[e.pid] = e.args.name
      elseif e.ph == "M" and e.name == "thread_name" then
        local key = string.format("%d/%d", e.pid, e.tid)   -- cjson reads numbers as floats
        assert.is_nil(threads[key])
        threads[key] = e.args.name
      elseif e.ph == "X" then
        slices[#slices + 1] = e
      elseif e.ph == "s" or e.ph == "f" then
        flow[e.ph] = e
      end
    end
    assert.are.same({ [0] = "PE 0", [1] = "PE 1" }, procs)
    assert.are.same({ ["0/0"] = "block 0", ["0/1"] = "block 1", ["0/1000"] = "kernel",
      ["1/0"] = "block 0", ["1/1"] = "block 1" }, threads)
    assert.are.equal(7, #slices)
    for i = 2, #slices do assert.is_true(slices[i - 1].ts <= slices[i].ts) end
    local copy
    for _, e in ipairs(slices) do if e.name == "copy_in" and e.pid == 0 then copy = e end end
    assert.are.equal(0, copy.tid)
    assert.are.equal(1, copy.ts)
    assert.are.equal(40, copy.dur)
    assert.are.equal("frame", copy.cat)
    assert.are.equal(4096, copy.args.bytes)
    assert.are.equal(1000, slices[1].tid)       -- the kernel slice, on its own track
    assert.are.equal(0, flow.s.pid)
    assert.are.equal(1, flow.s.tid)
    assert.are.equal(51, flow.s.ts)
    assert.are.equal(1, flow.f.pid)
    assert.are.equal(55, flow.f.ts)
    assert.are.equal("e", flow.f.bp)
    assert.are.equal(flow.s.id, flow.f.id)
  end)

  it("accepts nesting and rejects partially overlapping slices, naming both", function()
    assert.is_true(msprof.check_trace(sample()))
    local t = msprof.trace({
      { pe = 0, block = 2, name = "outer", ts = 0, dur = 10 },
      { pe = 0, block = 2, name = "inner", ts = 0, dur = 10 },   -- same span nests
      { pe = 0, block = 2, name = "late", ts = 5, dur = 10 },
    })
    local ok, err = pcall(msprof.check_trace, t)
    assert.is_false(ok)
    assert.truthy(err:find("check_trace: slices 'inner' [0.000, 10.000] and 'late' [5.000, 15.000] "
      .. "partially overlap on pid 0 tid 2", 1, true), err)
    -- the same slices on different blocks do not collide
    assert.is_true(msprof.check_trace(msprof.trace({
      { pe = 0, block = 2, name = "a", ts = 0, dur = 10 },
      { pe = 0, block = 3, name = "b", ts = 5, dur = 10 },
    })))
  end)

  it("rejects a slice ending before it starts and a flow going back in time", function()
    local t = msprof.trace({ { pe = 0, block = 0, name = "a", ts = 0, dur = 1 } })
    t.traceEvents[#t.traceEvents].dur = -1
    assert.has_error(function() msprof.check_trace(t) end,
      "check_trace: slice 'a' [0.000, -1.000] on pid 0 tid 0 ends before it starts")
    t = msprof.trace({}, { { id = 5, from = { pe = 0, block = 0, ts = 9 },
      to = { pe = 1, block = 0, ts = 3 } } })
    assert.has_error(function() msprof.check_trace(t) end,
      "check_trace: flow flow/5 arrives (3.000) before it leaves (9.000)")
  end)

  it("does not write a trace that fails the check", function()
    local dir = tmpdir()
    finally(function() rm_tree(dir) end)
    local t = msprof.trace({ { pe = 0, block = 0, name = "a", ts = 0, dur = 10 },
      { pe = 0, block = 0, name = "b", ts = 9, dur = 10 } })
    assert.has_error(function() msprof.write_trace(dir .. "/bad.json", t) end)
    assert.is_nil(lfs.attributes(dir .. "/bad.json"))
  end)

  it("checks events and flows", function()
    assert.has_error(function() msprof.trace({ { pe = -1, name = "a", ts = 0, dur = 1 } }) end,
      "bad argument #1 to 'trace' (events[1].pe must be an integer >= 0)")
    assert.has_error(function() msprof.trace({ { pe = 0, name = "a", ts = 0 } }) end,
      "bad argument #1 to 'trace' (events[1] needs name, ts and dur)")
    assert.has_error(function() msprof.trace({}, { { id = 1, from = { pe = 0, ts = 0 } } }) end,
      "bad argument #2 to 'trace' (flows[1] needs id, from and to)")
  end)
end)
