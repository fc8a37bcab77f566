-- Specs of shmemlab.report (result record, [PERF] lines, JSON, formula text, frame table)
-- and of shmemlab.json, which report.to_json and msprof.write_trace use.

local report = require("shmemlab.report")
local metrics = require("shmemlab.metrics")
local frames = require("shmemlab.frames")
local json = require("shmemlab.json")
local cjson = require("cjson")

local function seed_summary(with_baseline)
  local function per(us)
    return { { pe = 0, kernel_us = us, e2e_us = us }, { pe = 1, kernel_us = us, e2e_us = us } }
  end
  return metrics.compute({
    op = "allgather", n_pes = 2, payload_bytes = 32768, per_pe = per(45.2),
    peak = metrics.peak({ op = "allgather", n_pes = 2 }),
    baseline = with_baseline and { name = "HCCL AllGather", per_pe = per(52.1) } or nil,
  })
end

describe("report.record", function()
  it("prints the seed's record in the fixed order", function()
    local r = { op_name = "allgather", dtype = "int32", shape = "M1024, N8", n_pes = 2, data_bytes = 32768,
      latency_us = 45.2, algo_bandwidth_GBps = 0.725, kernel_bus_bandwidth_GBps = 0.3625,
      baseline = "HCCL AllGather", baseline_latency_us = 52.1, ratio = 52.1 / 45.2 * 100,
      e2e_latency_us = 49.2, baseline_e2e_latency_us = 56.1, e2e_ratio = 56.1 / 49.2 * 100,
      bound_us = 1.732, efficiency_pct = 1.732 / 45.2 * 100 }
    assert.are.equal(table.concat({
      "op_name: allgather",
      "dtype: int32",
      "shape: M1024, N8",
      "n_pes: 2",
      "data_bytes: 32768",
      "latency_us: 45.200",
      "algo_bandwidth_GBps: 0.725",
      "kernel_bus_bandwidth_GBps: 0.363",
      "baseline: HCCL AllGather",
      "baseline_latency_us: 52.100",
      "ratio: 115.3%",
      "e2e_latency_us: 49.200",
      "baseline_e2e_latency_us: 56.100",
      "e2e_ratio: 114.0%",
      "bound_us: 1.732",
      "efficiency_pct: 3.832",
    }, "\n") .. "\n", report.record(r))
  end)

  it("is built from a metrics summary by make_record", function()
    local s = seed_summary(true).summary
    local meta = { op_name = "allgather", dtype = "int32", shape = { { "M", 1024 }, { "N", 8 } } }
    local r = report.make_record(meta, s)
    assert.are.equal(32768, r.data_bytes)
    assert.are.equal("HCCL AllGather", r.baseline)
    assert.are.equal(52.1, r.baseline_latency_us)
    -- from the exact bandwidth 0.36248 GB/s (the seed's 0.363 was rounded twice)
    assert.are.equal(table.concat({
      "op_name: allgather", "dtype: int32", "shape: M1024, N8", "n_pes: 2", "data_bytes: 32768",
      "latency_us: 45.200", "algo_bandwidth_GBps: 0.725", "kernel_bus_bandwidth_GBps: 0.362",
      "baseline: HCCL AllGather", "baseline_latency_us: 52.100", "ratio: 115.3%",
      "e2e_latency_us: 45.200", "baseline_e2e_latency_us: 52.100", "e2e_ratio: 115.3%",
      "bound_us: -", "efficiency_pct: -",
    }, "\n") .. "\n", report.record(r))
  end)

  it("marks a run without baseline", function()
    local s = seed_summary(false).summary
    local meta = { op_name = "allgather", dtype = "int32", shape = { 1024, 8 } }
    local text = report.record(report.make_record(meta, s))
    assert.truthy(text:find("\nshape: 1024x8\n", 1, true), text)
    local tail = "\nbaseline: none\nbaseline_latency_us: -\nratio: -\ne2e_latency_us: 45.200\n"
      .. "baseline_e2e_latency_us: -\ne2e_ratio: -\nbound_us: -\nefficiency_pct: -\n"
    assert.are.equal(tail, text:sub(-#tail))
  end)

  it("names a missing field", function()
    assert.has_error(function() report.record({ op_name = "x" }) end,
      "bad argument #1 to 'record' (field dtype missing)")
  end)
end)

describe("report.perf_lines", function()
  it("prints one [PERF] line per PE with 3 decimals", function()
    local r = seed_summary(false)
    local text, lines = report.perf_lines(r.per_pe)
    assert.are.equal(2, #lines)
    -- 32768 B in 45.2 us: algo 0.72496, bus 0.36248 GB/s, 1.29456% of 28 GB/s
    assert.are.equal("[PERF] pe=0 e2e_us=45.200 kernel_us=45.200 bandwidth_time_us=45.200 "
      .. "algo_bandwidth_GBps=0.725 e2e_bus_bandwidth_GBps=0.362 kernel_bus_bandwidth_GBps=0.362 "
      .. "bandwidth_utilization_pct=1.295 payload_bytes=32768 bus_factor=0.500 "
      .. "peak_bandwidth_GBps=28.000 bound_us=- efficiency_pct=-", lines[1])
    assert.truthy(lines[2]:find("^%[PERF%] pe=1 "))
    assert.are.equal(lines[1] .. "\n" .. lines[2] .. "\n", text)
  end)

  it("names a missing field", function()
    assert.has_error(function() report.perf_lines({ { pe = 0, e2e_us = 1 } }) end,
      "bad argument #1 to 'perf_lines' (rows[1].kernel_us missing)")
  end)
end)

describe("report.perf_summary", function()
  it("prints the record's comparison in one line, '-' for what a run lacks", function()
    local meta = { op_name = "allgather", dtype = "int32", shape = "s" }
    local with = report.make_record(meta, seed_summary(true).summary)
    assert.are.equal("[PERF] op=allgather latency_us=45.200 baseline_latency_us=52.100 ratio=115.3% "
      .. "e2e_latency_us=45.200 baseline_e2e_latency_us=52.100 e2e_ratio=115.3% bound_us=- "
      .. "efficiency_pct=-\n", report.perf_summary(with))
    local without = report.make_record(meta, seed_summary(false).summary)
    assert.matches(" baseline_latency_us=%- ratio=%- ", report.perf_summary(without))
    assert.has_error(function() report.perf_summary(1) end,
      "bad argument #1 to 'perf_summary' (record expected, got number)")
  end)
end)

describe("report.to_json", function()
  it("writes the record as a JSON object that cjson reads back", function()
    local s = seed_summary(true).summary
    local r = report.make_record({ op_name = "allgather", dtype = "int32", shape = "M1024, N8" }, s)
    local t = cjson.decode(report.to_json(r))
    assert.are.equal("allgather", t.op_name)
    assert.are.equal(32768, t.data_bytes)
    assert.are.equal(45.2, t.latency_us)
    assert.are.equal(r.kernel_bus_bandwidth_GBps, t.kernel_bus_bandwidth_GBps)  -- full precision
    assert.are.equal(r.ratio, t.ratio)
    assert.are.equal("HCCL AllGather", t.baseline)
  end)

  it("keeps every record key, null when there is no baseline", function()
    local s = seed_summary(false).summary
    local meta = { op_name = "allgather", dtype = "int32", shape = "s" }
    local text = report.to_json(report.make_record(meta, s))
    local t = cjson.decode(text)
    assert.are.equal(cjson.null, t.baseline)
    assert.are.equal(cjson.null, t.ratio)
    assert.are.equal(cjson.null, t.baseline_latency_us)
    assert.truthy(text:find('\n  "algo_bandwidth_GBps": ', 1, true), text)   -- indented, sorted
    assert.truthy(text:find('"algo_bandwidth_GBps"', 1, true) < text:find('"baseline"', 1, true))
  end)
end)

describe("report.formula_text", function()
  it("explains formulas, bus factor, peak, timing boundary and bytes per path", function()
    local s = seed_summary(true).summary
    local text = report.formula_text(s, { ["local"] = 16384, hccs = 16384, rdma = 0 })
    local function has(str) assert.truthy(text:find(str, 1, true), "missing: " .. str .. "\n" .. text) end
    has("logical_payload_bytes = 32768")
    has("bytes per path: local=16384 hccs=16384 sio=0 rdma=0 (total 32768) beside logical payload 32768")
    has("bus_factor = (n_pes-1)/n_pes = 0.500 for allgather with n_pes = 2")
    has("kernel_bus_bandwidth_GBps = algo_bandwidth_GBps * bus_factor = 0.362")
    has("algo_bandwidth_GBps = logical_payload_bytes / latency_s / 1e9 = 0.725")
    has("peak_bandwidth_GBps = 28.000 (Ascend910B HCCS 2-PE full mesh: 1 link x 28 GB/s)")
    has("timing boundary: kernel_us: first block start to last MTE completion of the kernel on that PE; "
      .. "e2e_us: kernel launch + host copies + kernel")
    has("latency_us = max over PEs of kernel_us = 45.200")
    has("ratio = baseline_latency_us / latency_us * 100 = 52.100 / 45.200 * 100 = 115.3% (kernel time")
    has("e2e_ratio = baseline_e2e_latency_us / e2e_latency_us * 100 = 52.100 / 45.200 * 100 = 115.3%")
    has("bandwidth_time_us of a PE = its own kernel_us")
    has("verdict: PASS (rule: kernel_bus_bandwidth >= 80% of baseline")
    has("reference only, never used for PASS/FAIL")
  end)

  it("says when path bytes were not measured and prints notes", function()
    local r = metrics.compute({ op = "p2p", n_pes = 2, payload_bytes = 1e9, peak = 28,
      per_pe = { { kernel_us = 1000, e2e_us = 1000 } } })
    local text = report.formula_text(r.summary)
    assert.truthy(text:find("bytes per path: not measured", 1, true), text)
    assert.truthy(text:find("note: utilisation above 100%", 1, true), text)
    assert.truthy(text:find("verdict: PASS (rule: no baseline: utilisation >= 20%", 1, true), text)
  end)
end)

describe("report.frame_report", function()
  -- 2 launches of 100 us, cycle2us 50 (so 1 us = 50 cycles)
  local function fr(reasons)
    local F = frames.custom(frames, { PACK = 7, SPARE = 6 })
    return {
      cycle2us = 50, e2e_us = 100, launches = 2, frames = F, reasons = reasons,
      rows = {
        { pe = 0, block = 0, frame = 0, cycles = 4000, count = 2 },
        { pe = 0, block = 1, frame = 0, cycles = 6000, count = 2 },
        { pe = 0, block = 0, frame = 1, cycles = 1000, count = 4 },
        { pe = 1, block = 0, frame = 1, cycles = 3000, count = 4 },
        { pe = 0, block = 1, frame = 2, cycles = 500, count = 2 },
        { pe = 0, block = 0, frame = 2, cycles = 500, count = 2 },
        { pe = 0, block = 0, frame = 4, cycles = 0, count = 0 },
        { pe = 0, block = 1, frame = 4, cycles = 250, count = 2 },
        { pe = 0, block = 0, frame = 7, cycles = 100, count = 1 },
      },
    }
  end

  it("gives per frame cycles, count, avg_us, max_core_us, share and the long tail", function()
    local rows = report.frame_report(fr({ [3] = "pure communication operator: no local compute" }))
    local ids = {}
    for i, r in ipairs(rows) do ids[i] = r.id end
    assert.are.same({ 0, 1, 2, 3, 4, 7 }, ids)
    local f0 = rows[1]
    assert.are.equal("copy_in/copy_out", f0.name)
    assert.are.equal("COPY_IN", f0.key)
    assert.is_true(f0.used)
    assert.are.equal(10000, f0.cycles)
    assert.are.equal(4, f0.count)
    assert.are.equal(50, f0.avg_us)           -- 10000 / 4 / 50
    assert.are.equal(60, f0.max_core_us)      -- block 1: 6000 / 50 / 2 launches
    assert.are.equal(60, f0.share_pct)        -- 60 / 100 * 100
    assert.are.equal(0, f0.tail_pe)
    assert.are.equal(1, f0.tail_block)
    assert.are.equal(1.2, f0.tail_over_mean)  -- 6000 / 5000
    local f1 = rows[2]
    assert.are.equal(4000, f1.cycles)
    assert.are.equal(8, f1.count)
    assert.are.equal(10, f1.avg_us)
    assert.are.equal(30, f1.max_core_us)
    assert.are.equal(1, f1.tail_pe)           -- the other PE is the long tail
    assert.are.equal(0, f1.tail_block)
    local f2 = rows[3]
    assert.are.equal(0, f2.tail_block)        -- a tie goes to the lowest block
    assert.are.equal(5, f2.share_pct)
    local f3 = rows[4]
    assert.is_false(f3.used)
    assert.are.equal("local_compute", f3.name)
    assert.are.equal("pure communication operator: no local compute", f3.reason)
    assert.is_nil(f3.cycles)
    local f4 = rows[5]
    assert.are.equal(250, f4.cycles)
    assert.are.equal(2, f4.count)            -- the count-0 row on block 0 is not a run
    assert.are.equal(1, f4.cores)
    assert.are.equal(2.5, f4.max_core_us)
    local f7 = rows[6]
    assert.are.equal("pack", f7.name)
    assert.are.equal("PACK", f7.key)
    assert.are.equal(2, f7.avg_us)
    assert.are.equal(1, f7.max_core_us)
    assert.are.equal(1, f7.share_pct)
  end)

  it("formats a text table", function()
    local _, text = report.frame_report(fr({ [3] = "pure communication operator: no local compute" }))
    local lines = {}
    for l in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    assert.are.equal(8, #lines)
    assert.are.equal("FrameID Frame                   Cycles         Count     avg_us       max_core_us  "
      .. "share_%    long_tail", lines[1])
    assert.are.equal("0       copy_in/copy_out        10000          4         50.000       60.000       "
      .. "60.000     pe 0 block 1 (x1.20 of mean)", lines[2])
    assert.are.equal("3       local_compute           -              -         -            -            "
      .. "-          unused: pure communication operator: no local compute", lines[5])
    assert.are.equal("7       pack                    100            1         2.000        1.000        "
      .. "1.000      pe 0 block 0 (x1.00 of mean)", lines[7])
    assert.truthy(lines[8]:find("^cycle2us=50 launches=2 e2e_us=100.000 per launch"), lines[8])
  end)

  it("refuses an unused frame without a reason", function()
    assert.has_error(function() report.frame_report(fr(nil)) end,
      "frame 3 (local_compute) unused and no reason given")
    local t = fr({ [3] = "no compute" })
    table.remove(t.rows, 8)   -- frame 4 now has only a count-0 row
    assert.has_error(function() report.frame_report(t) end, "frame 4 (finalize) unused and no reason given")
  end)

  it("checks its input", function()
    local t = fr({ [3] = "x" })
    t.launches = 0
    assert.has_error(function() report.frame_report(t) end,
      "bad argument #1 to 'frame_report' (launches must be an integer >= 1)")
    t = fr({ [3] = "x" })
    t.rows[#t.rows + 1] = { pe = 0, block = 0, frame = 0, cycles = 1, count = 1 }
    assert.has_error(function() report.frame_report(t) end,
      "bad argument #1 to 'frame_report' (rows[10] repeats pe 0 block 0 frame 0)")
  end)
end)

describe("report.frame_compare", function()
  -- the op: frames 0, 1, 2, 4 and custom 7 used, 3 unused; the baseline: 0, 1, 3 used,
  -- 2 and 4 unused, no frame 7
  local function sides()
    local F = frames.custom(frames, { PACK = 7 })
    local op = report.frame_report({ cycle2us = 50, e2e_us = 100, launches = 1, frames = F,
      reasons = { [3] = "no compute" }, rows = {
        { pe = 0, block = 0, frame = 0, cycles = 1001, count = 1 },   -- 20.02 us
        { pe = 0, block = 0, frame = 1, cycles = 3000, count = 1 },
        { pe = 0, block = 0, frame = 2, cycles = 500, count = 1 },
        { pe = 0, block = 0, frame = 4, cycles = 250, count = 1 },
        { pe = 0, block = 0, frame = 7, cycles = 100, count = 1 } } })
    local base = report.frame_report({ cycle2us = 50, e2e_us = 80, launches = 2,
      reasons = { [2] = "no wait", [4] = "no tail" }, rows = {
        { pe = 0, block = 0, frame = 0, cycles = 2000, count = 2 },
        { pe = 1, block = 3, frame = 1, cycles = 7001, count = 2 },   -- 70.01 us a launch
        { pe = 0, block = 0, frame = 3, cycles = 1500, count = 2 } } })
    return { name = "shmemlab x", rows = op, e2e_us = 100 },
           { name = "HCCL X", rows = base, e2e_us = 80.0004 }
  end

  it("puts the printed max_core_us and share of each frame beside each other, with the "
     .. "difference", function()
    local rows = report.frame_compare(sides())
    local ids = {}
    for i, r in ipairs(rows) do ids[i] = r.id end
    assert.are.same({ 0, 1, 2, 3, 4, 7, "e2e" }, ids)
    assert.are.same({ id = 0, name = "copy_in/copy_out", op_us = 20.02, op_share = 20.02,
                      base_us = 20, base_share = 25, diff_us = 0.02 }, rows[1])
    assert.are.equal(70.01, rows[2].base_us)
    assert.are.equal(87.513, rows[2].base_share)          -- 70.01 / 80 * 100, printed
    assert.are.equal(-10.01, rows[2].diff_us)              -- 60 - 70.01
    assert.is_nil(rows[3].base_us)                         -- unused in the baseline: 0
    assert.are.equal(10, rows[3].diff_us)
    assert.is_nil(rows[4].op_us)
    assert.are.equal(-15, rows[4].diff_us)
    assert.are.equal("pack", rows[6].name)                 -- the op's custom frame
    assert.are.equal(2, rows[6].diff_us)
    assert.are.same({ id = "e2e", name = "per launch", op_us = 100, op_share = 100, base_us = 80,
                      base_share = 100, diff_us = 20 }, rows[7])   -- 80.0004 prints 80.000
  end)

  it("formats a text table whose numbers are the reports' printed ones", function()
    local _, text = report.frame_compare(sides())
    local lines = {}
    for l in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    assert.are.equal(9, #lines)
    assert.are.equal("FrameID Frame                   op_max_core_us  op_share_%  "
      .. "base_max_core_us  base_share_%  diff_us", lines[1])
    assert.are.equal("1       remote_put_get          60.000          60.000      "
      .. "70.010            87.513        -10.010", lines[3])
    assert.are.equal("3       local_compute           -               -           "
      .. "15.000            18.750        -15.000", lines[5])
    assert.are.equal("e2e     per launch              100.000         100.000     "
      .. "80.000            100.000       20.000", lines[8])
    assert.truthy(lines[9]:find("op = shmemlab x, base = HCCL X:", 1, true), lines[9])
  end)

  it("checks its input", function()
    local op, base = sides()
    assert.has_error(function() report.frame_compare(op, nil) end,
      "bad argument #2 to 'frame_compare' (table {name =, rows =, e2e_us =} expected)")
    op.e2e_us = 0
    assert.has_error(function() report.frame_compare(op, base) end,
      "bad argument #1 to 'frame_compare' (e2e_us must be a number > 0)")
  end)
end)

describe("json", function()
  it("writes arrays, objects with sorted keys and nested values", function()
    assert.are.equal('{"a":[1,2,{"x":true,"y":null}],"b":"s","c":{}}',
      json.encode({ c = {}, b = "s", a = { 1, 2, { y = json.null, x = true } } }))
    assert.are.equal("[]", json.encode(json.array()))
    assert.are.equal("[]", json.encode(json.array({})))
    assert.are.equal('{"1":"a","2":"b"}', json.encode(json.object({ "a", "b" })))
    assert.are.equal('{"1":"a","3":"c"}', json.encode({ [1] = "a", [3] = "c" }))
    assert.are.equal("[[],{}]", json.encode({ json.array(), {} }))
  end)

  it("writes integers as integers and floats that read back exactly", function()
    assert.are.equal("[3,-7,0.1,0.5,1e+300,3]", json.encode({ 3, -7, 0.1, 0.5, 1e300, 3.0 }))
    for _, x in ipairs({ 1 / 3, 2 / 3, 45.2, 32768 / 45.2e-6 / 1e9, 5e-324, 1.7976931348623157e308 }) do
      assert.are.equal(x, cjson.decode("[" .. json.encode(x) .. "]")[1])
      assert.are.equal(x, tonumber(json.encode(x)))
    end
    assert.are.equal("9007199254740993", json.encode(9007199254740993))
    -- the fewest digits that read back: 16 for 1/3, 17 for 0.1 + 0.2
    assert.are.equal("0.3333333333333333", json.encode(1 / 3))
    assert.are.equal("0.30000000000000004", json.encode(0.1 + 0.2))
  end)

  it("refuses NaN, infinities, cycles and functions", function()
    assert.has_error(function() json.encode({ 0 / 0 }) end)
    assert.has_error(function() json.encode(math.huge) end)
    assert.has_error(function() json.encode(-math.huge) end)
    local t = {}
    t.self = t
    assert.has_error(function() json.encode(t) end)
    assert.has_error(function() json.encode({ f = print }) end)
    assert.has_error(function() json.encode({ [true] = 1 }) end)
    assert.has_error(function() json.encode({ [1] = 1, ["1"] = 2 }) end)
    local ok, err = pcall(json.encode, { x = 0 / 0 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("NaN", 1, true), err)
  end)

  it("escapes strings and refuses invalid UTF-8", function()
    assert.are.equal('"a\\"b\\\\c\\n\\t\\u0001\\u001f\\r"', json.encode('a"b\\c\n\t\1\31\r'))
    assert.are.equal('"PE \xe5\x8d\xa1"', json.encode("PE \xe5\x8d\xa1"))
    assert.are.equal('a"b\\c\n\t\1', cjson.decode(json.encode('a"b\\c\n\t\1')))
    assert.has_error(function() json.encode("\xff") end)
  end)

  it("pretty-prints with an indent", function()
    assert.are.equal('{\n  "a": [\n    1,\n    2\n  ],\n  "b": {}\n}', json.encode({ b = {}, a = { 1, 2 } },
      { indent = 2 }))
  end)

  it("decodes with null as json.null and integral numbers as integers", function()
    local v = json.decode('{"a":[1,2.5,null],"b":{"c":"d"},"e":-3}')
    assert.are.equal(1, v.a[1])
    assert.are.equal("integer", math.type(v.a[1]))
    assert.are.equal(2.5, v.a[2])
    assert.are.equal(json.null, v.a[3])
    assert.are.equal("d", v.b.c)
    assert.are.equal("integer", math.type(v.e))
    assert.are.equal('{"a":[1,2.5,null],"b":{"c":"d"},"e":-3}', json.encode(v))
    assert.has_error(function() json.decode("{bad") end)
    local ok, err = pcall(json.decode, "[1,")
    assert.is_false(ok)
    assert.truthy(err:find("bad argument #1 to 'decode' (invalid JSON: ", 1, true), err)
    assert.truthy(json.backend == "cjson" or json.backend == "dkjson")
  end)
end)
