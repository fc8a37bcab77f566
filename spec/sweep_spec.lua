-- shmemlab.sweep (issue 10 part 3): PE counts from lists and ranges, the runs over
-- them (each machine closed before the next count), the table whose every derived figure
-- is recomputed here from the figures it prints, the servers and RDMA domains of the
-- profile's topology, and the plot of bus bandwidth and efficiency against PE count.
local sweep = require("shmemlab.sweep")
local runner = require("shmemlab.runner")
local metrics = require("shmemlab.metrics")

-- a small run of op over the counts of text (warm-up 1, 2 measured launches)
local function small(op_name, text, extra)
  local op = runner.load_op(op_name)
  local opts = { count = 256, warmup = 1, iters = 2 }
  for k, v in pairs(extra or {}) do opts[k] = v end
  return sweep.run(op, sweep.plan(op, opts, assert(sweep.parse_pes(text)))), op, opts
end

-- the data lines of a sweep table, each split into its cells ("|" dropped)
local function table_lines(text)
  local lines = {}
  for line in text:gmatch("[^\n]+") do
    if line:sub(1, 1) ~= "#" then
      local cells = {}
      for w in line:gmatch("[^%s|]+") do cells[#cells + 1] = w end
      lines[#lines + 1] = cells
    end
  end
  return lines
end

describe("sweep.parse_pes", function()
  it("takes lists, ranges by factor and by step, and mixes of them", function()
    assert.same({ 8, 16, 32 }, sweep.parse_pes("8,16,32"))
    assert.same({ 8, 16, 32, 64, 128, 256, 512, 1024 }, sweep.parse_pes("8:1024:x2"))
    assert.same({ 8, 16, 24, 32, 40, 48, 56, 64 }, sweep.parse_pes("8:64:+8"))
    assert.same({ 8, 16, 32, 64 }, sweep.parse_pes("8:64"))           -- A:B is A:B:x2
    assert.same({ 2, 3, 8, 16, 32 }, sweep.parse_pes("2,3,8:32"))
    assert.same({ 4, 12, 36 }, sweep.parse_pes("4:100:x3"))            -- stops before B
    assert.same({ 5 }, sweep.parse_pes("5:5:+3"))
    assert.same({ 1024 }, sweep.parse_pes("1024"))
  end)

  it("sorts the counts and keeps each once; spaces around items are fine", function()
    assert.same({ 8, 16, 24, 32 }, sweep.parse_pes("32, 8:32:x2 ,24,16, 8"))
  end)

  it("checks every count against the maximum it is given (runner.MAX_PES by default)", function()
    assert.same({ 4, 8 }, sweep.parse_pes("4:8", 8))
    assert.same({ nil, "PE count 16 is beyond the supported maximum of 8" },
                { sweep.parse_pes("4:16", 8) })
    assert.same({ nil, "PE count 2048 is beyond the supported maximum of 1024" },
                { sweep.parse_pes("8:2048:x2") })
    assert.same({ nil, "PE count 1025 is beyond the supported maximum of 1024" },
                { sweep.parse_pes("8,1025") })
    assert.same({ nil, "PE count 99999999999999999999 is beyond the supported maximum of 1024" },
                { sweep.parse_pes("1:99999999999999999999:+1") })
  end)

  it("says what is wrong with a bad form, and returns no counts", function()
    local forms = "(" .. sweep.FORMS .. ")"
    local bad = {
      [""] = "'' is not a PE count or range " .. forms,
      ["8,"] = "'' is not a PE count or range " .. forms,
      [",8"] = "'' is not a PE count or range " .. forms,
      ["8,,16"] = "'' is not a PE count or range " .. forms,
      ["8:"] = "'8:' is not a PE count or range " .. forms,
      [":8"] = "':8' is not a PE count or range " .. forms,
      ["8:64:y2"] = "'8:64:y2' is not a PE count or range " .. forms,
      ["8:64:x"] = "'8:64:x' is not a PE count or range " .. forms,
      ["8.5"] = "'8.5' is not a PE count or range " .. forms,
      ["-8"] = "'-8' is not a PE count or range " .. forms,
      ["eight"] = "'eight' is not a PE count or range " .. forms,
      ["0"] = "PE count 0 is below 1",
      ["0:8"] = "PE count 0 is below 1",
      ["64:8"] = "range '64:8' runs backwards (64 > 8)",
      ["8:64:x1"] = "range '8:64:x1' needs a factor of at least 2",
      ["8:64:x0"] = "range '8:64:x0' needs a factor of at least 2",
      ["8:64:+0"] = "range '8:64:+0' needs a step of at least 1",
    }
    for text, why in pairs(bad) do
      assert.same({ nil, why }, { sweep.parse_pes(text) }, text)
    end
  end)

  it("raises Lua-style errors for arguments of the wrong type", function()
    assert.has_error(function() sweep.parse_pes(8) end,
                     "bad argument #1 to 'parse_pes' (string expected, got number)")
    assert.has_error(function() sweep.parse_pes("8", 0) end,
                     "bad argument #2 to 'parse_pes' (maximum must be an integer >= 1)")
  end)
end)

describe("sweep.plan", function()
  it("checks every count's configuration before anything runs (usage errors)", function()
    local op = runner.load_op("p2p")
    local ok, e = pcall(sweep.plan, op, { count = 64, dst_pe = 3 }, { 2, 4, 8 })
    assert.is_false(ok)
    assert.equal("usage", runner.kind(e))
    assert.equal("--dst must be an integer in 0..1, got 3", tostring(e))
  end)
end)

describe("a PE sweep's table", function()
  local results, op, opts = small("allgather", "2,4,8,16")
  local text = sweep.table(results)

  it("has the columns doc/cli.md names, the op's then the baseline's, then the ratio", function()
    local head = text:match("\n(#%s*PEs[^\n]*)\n")
    local names = {}
    for w in head:gsub("^#", ""):gmatch("[^%s|]+") do names[#names + 1] = w end
    assert.same({ "PEs", "servers", "domains", "payload_B", "kernel_us", "bound_us", "eff_%",
                  "algbw", "busbw", "#wrong", "hccl_kern", "eff_%", "algbw", "busbw", "#wrong",
                  "ratio" }, names)
  end)

  it("prints figures each recomputable exactly from the others it prints", function()
    local lines = table_lines(text)
    assert.equal(4, #lines)
    for i, cells in ipairs(lines) do
      local n = tonumber(cells[1])
      local bf = metrics.bus_factor("allgather", n)
      assert.equal(results[i].config.pes, n)
      assert.equal(tostring(n * opts.count * 4), cells[4])            -- allgather: n shards
      local bound_us = tonumber(cells[6])
      -- op: kernel_us, bound_us, eff, algbw, busbw, wrong at 5..10; baseline 11..15
      for _, at in ipairs({ { t = 5, eff = 7, a = 8, b = 9 }, { t = 11, eff = 12, a = 13, b = 14 } }) do
        local t = tonumber(cells[at.t])
        local algbw = metrics.fmt3(tonumber(cells[4]) / t / 1e3)
        assert.equal(algbw, cells[at.a])
        assert.equal(metrics.fmt3(tonumber(algbw) * bf), cells[at.b])
        assert.equal(metrics.fmt(bound_us / t * 100, 1), cells[at.eff])
      end
      assert.equal(metrics.fmt(tonumber(cells[11]) / tonumber(cells[5]) * 100, 1) .. "%", cells[16])
      assert.equal("0", cells[10])
      assert.equal("0", cells[15])      -- HCCL's task plan beyond one server: checked too
    end
  end)

  it("prints the virtual times of single runs at each count, exactly", function()
    local lines = table_lines(text)
    for i, n in ipairs({ 2, 4, 8, 16 }) do
      local ro = {}
      for k, v in pairs(opts) do ro[k] = v end
      ro.pes = n
      local r = runner.run(op, ro)
      assert.equal(metrics.fmt3(r.metrics.summary.latency_us), lines[i][5])
      assert.equal(metrics.fmt3(r.baseline.metrics.summary.latency_us), lines[i][11])
      assert.equal(metrics.fmt3(r.bound.us), lines[i][6])
      assert.equal(r.metrics.summary.latency_us, results[i].metrics.summary.latency_us)
      runner.release(r.shmem); runner.release(r.baseline)
    end
  end)

  it("is the same text on a second sweep (deterministic)", function()
    assert.equal(text, sweep.table((small("allgather", "2,4,8,16"))))
  end)

  it("says how each column is computed, with the op's bus factor formula", function()
    assert.matches("busbw = algbw * (n_pes-1)/n_pes (allgather's bus factor)", text, 1, true)
    assert.matches("servers = ceil(PEs / 8 per server); domains = ceil(PEs / 8)", text, 1, true)
  end)

  it("leaves every machine closed once measured, its task rows still readable", function()
    for _, r in ipairs(results) do
      for _, res in ipairs({ r.shmem, r.baseline }) do
        assert.equal("shmemlab machine (closed)", tostring(res.machine))
        assert.is_true(#res.machine:tasks(0) > 0)
        assert.has_error(function() res.machine:now() end)
      end
    end
    assert.equal(results[1].shmem, runner.release(results[1].shmem))   -- idempotent
  end)
end)

describe("a timing-only PE sweep", function()
  it("passes timing_only to every count: the same table, #wrong N/A (not checked)", function()
    local data = sweep.rows((small("allgather", "2,8,16")))
    local timed = small("allgather", "2,8,16", { timing_only = true })
    for i, row in ipairs(sweep.rows(timed)) do
      assert.is_true(timed[i].shmem.machine:timing_only())
      assert.is_true(timed[i].baseline.machine:timing_only())
      for _, k in ipairs({ "kernel_us", "algbw", "busbw", "eff" }) do
        assert.equal(data[i].op[k], row.op[k])
        assert.equal(data[i].base[k], row.base[k])
      end
      assert.same({ "N/A", "N/A" }, { row.op.wrong, row.base.wrong })
    end
  end)
end)

describe("a PE sweep across servers", function()
  it("counts servers and RDMA domains from the profile and times RDMA between them", function()
    local results = small("allgather", "8,16")
    local rows = sweep.rows(results)
    assert.same({ 1, 2 }, { rows[1].servers, rows[2].servers })
    assert.same({ 1, 2 }, { rows[1].domains, rows[2].domains })
    assert.equal(0, results[1].shmem.path_bytes.rdma)
    assert.is_true(results[2].shmem.path_bytes.rdma > 0)
  end)

  it("follows --set pes_per_server", function()
    local results = small("allgather", "4,8", { overrides = { pes_per_server = 4 } })
    local rows = sweep.rows(results)
    assert.same({ 1, 2 }, { rows[1].servers, rows[2].servers })
    assert.same({ 1, 2 }, { rows[1].domains, rows[2].domains })
    assert.is_true(results[2].shmem.path_bytes.rdma > 0)
    assert.matches("ceil(PEs / 4 per server)", sweep.table(results), 1, true)
  end)

  it("keeps an A3 supernode in one domain across servers (no RDMA)", function()
    local results = small("allgather", "16,32", { soc = "Ascend910_93" })
    local rows = sweep.rows(results)
    assert.same({ 1, 2 }, { rows[1].servers, rows[2].servers })
    assert.same({ 1, 1 }, { rows[1].domains, rows[2].domains })
    assert.equal(0, results[2].shmem.path_bytes.rdma)
    assert.is_true(results[2].shmem.path_bytes.hccs > 0)
  end)
end)

describe("sweep.text", function()
  it("names the counts in the configuration line and puts the table under it", function()
    local results = small("alltoall", "2:8:+3", { baseline = "none" })
    local text = sweep.text(results)
    assert.matches("^# shmemlab [^\n]* Ascend910B, 2, 5, 8 PEs %(8 per server%)", text)
    local lines = table_lines(text)
    assert.equal(3, #lines)
    assert.equal(10, #lines[1])                        -- no baseline: no hccl cells, no ratio
    assert.is_nil(text:find("ratio", 1, true))
  end)
end)

describe("sweep.svg", function()
  -- circles of a panel (class) as {x, y} in document order
  local function circles(svg, class)
    local t = {}
    for x, y in svg:gmatch('<circle class="' .. class .. '" cx="([%d.]+)" cy="([%d.]+)"') do
      t[#t + 1] = { tonumber(x), tonumber(y) }
    end
    return t
  end

  local results = small("allgather", "2:32:x2")
  local svg = sweep.svg(results)
  local rows = sweep.rows(results)

  it("draws bus bandwidth and efficiency of the op and the baseline at every count", function()
    assert.matches("^<svg ", svg)
    assert.matches("allgather on 2..32 PEs of Ascend910B (int32, count 256 per PE)", svg, 1, true)
    assert.matches("bus bandwidth (GB/s)", svg, 1, true)
    assert.matches("efficiency (% of bound)", svg, 1, true)
    assert.matches("PEs (log scale)", svg, 1, true)
    assert.equal(2 * #rows, #circles(svg, "busbw"))
    assert.equal(2 * #rows, #circles(svg, "eff"))
    local labels = {}
    for v in svg:gmatch('<text class="pes"[^>]*>(%d+)</text>') do labels[#labels + 1] = tonumber(v) end
    assert.same({ 2, 4, 8, 16, 32 }, labels)
  end)

  it("places each point at its printed figure: heights proportional, x shared by count", function()
    local bus, eff = circles(svg, "busbw"), circles(svg, "eff")
    local function height(pt, bottom) return bottom - pt[2] end
    for s, key in ipairs({ "op", "base" }) do
      for i, row in ipairs(rows) do
        local k = (s - 1) * #rows + i
        assert.equal(bus[k][1], eff[k][1])
        assert.equal(bus[i][1], bus[k][1])
        if i > 1 then assert.is_true(bus[k][1] > bus[k - 1][1]) end
        -- the ratio of two points' heights is the ratio of their figures (0.1 px rounding)
        local h1, h = height(bus[1], 300), height(bus[k], 300)
        assert.near(row[key].busbw_GBps / rows[1].op.busbw_GBps, h / h1, 0.02)
        h1, h = height(eff[1], 580), height(eff[k], 580)
        assert.near(row[key].eff_pct / rows[1].op.eff_pct, h / h1, 0.02)
      end
    end
  end)

  it("marks where RDMA between domains starts, between the counts on either side", function()
    local bus = circles(svg, "busbw")
    local x = tonumber(svg:match('<line class="split" x1="([%d.]+)"'))
    assert.near((bus[3][1] + bus[4][1]) / 2, x, 0.11)   -- between 8 and 16 PEs
    assert.matches(">RDMA beyond 8 PEs</text>", svg, 1, true)
    assert.is_nil(sweep.svg((small("allgather", "2,4,8"))):find('class="split"', 1, true))
  end)

  it("uses a linear axis for counts within a factor of 8, and draws a single count", function()
    local plot = require("shmemlab.plot")
    local lin = plot.pes_svg{ series = { { name = "a", color = "#000",
      points = { { 8, 10, 50 }, { 16, 20, 60 }, { 24, 30, 70 } } } } }
    assert.is_nil(lin:find("log scale", 1, true))
    local xs = {}
    for x in lin:gmatch('<circle class="busbw" cx="([%d.]+)"') do xs[#xs + 1] = tonumber(x) end
    assert.near(xs[2] - xs[1], xs[3] - xs[2], 0.11)
    local ticks = {}                                   -- y labels at round steps: 0..40 by 10
    for v in lin:gmatch('text%-anchor="end">([%d.]+)</text>') do ticks[#ticks + 1] = tonumber(v) end
    assert.same({ 0, 10, 20, 30, 40, 0, 20, 40, 60, 80, 100 }, ticks)
    local one = plot.pes_svg{ series = { { name = "a", color = "#000", points = { { 8, 10, 50 } } } } }
    assert.matches('<text class="pes" x="385.0"', one, 1, true)
    assert.has_error(function() plot.pes_svg{ series = { { name = "a", color = "#000", points = {} } } } end,
                     "bad argument #1 to 'pes_svg' (no points)")
  end)
end)

describe("run_op.lua --pes LIST (a PE sweep)", function()
  local run = require("spec.helpers.cli").run
  local small_argv = { "--count", "256", "-w", "1", "-n", "2" }
  -- argv .. small_argv
  local function argv_of(t)
    local all = {}
    for _, a in ipairs(t) do all[#all + 1] = a end
    for _, a in ipairs(small_argv) do all[#all + 1] = a end
    return all
  end

  it("prints the configuration, the table and nccl-tests' trailer from the printed busbw", function()
    local status, out, err = run(argv_of({ "allgather", "--pes", "2,4:16" }))
    assert.equal(0, status, err)
    assert.equal("", err)
    local results = small("allgather", "2,4:16")
    assert.equal(sweep.text(results), out:sub(1, #sweep.text(results)))
    local sum, lines = 0, table_lines(out)
    assert.equal(4, #lines)
    for _, cells in ipairs(lines) do sum = sum + tonumber(cells[9]) end
    assert.matches("\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : "   -- 16 PEs: the
      .. metrics.fmt3(sum / 4) .. " \n#\n$", out)              -- HCCL task plan checked too
  end)

  it("takes -p and the range forms alike", function()
    local _, a = run(argv_of({ "allgather", "--pes", "2,4,8" }))
    local _, b = run(argv_of({ "allgather", "-p", "2:8" }))
    local _, c = run(argv_of({ "allgather", "--pes=2:8:x2" }))
    assert.equal(a, b)
    assert.equal(a, c)
  end)

  local function assert_usage(argv, want)
    local status, out, err = run(argv)
    assert.equal(2, status, err)
    assert.equal("", out)
    assert.matches("^run_op.lua: [^\n]*\n$", err)
    assert.matches(want, err, 1, true)
  end

  it("is a usage error beyond the supported maximum, naming it", function()
    assert_usage(argv_of({ "allgather", "--pes", "8:2048:x2" }),
                 "option --pes: PE count 2048 is beyond the supported maximum of 1024")
    assert_usage(argv_of({ "allgather", "--pes", "512,1025" }),
                 "option --pes: PE count 1025 is beyond the supported maximum of 1024")
    assert_usage(argv_of({ "allgather", "--pes", "1025" }), "--pes must be an integer in 1..1024")
    assert.equal(2, require("shmemlab.cli").EXIT.usage)
  end)

  it("is a usage error for a bad form, a size sweep beside it, or a bad option at one count", function()
    assert_usage(argv_of({ "allgather", "--pes", "8:" }), "option --pes: '8:' is not a PE count or range")
    assert_usage(argv_of({ "allgather", "--pes", "64:8" }), "option --pes: range '64:8' runs backwards")
    assert_usage(argv_of({ "allgather", "--pes", "8:64:x1" }),
                 "option --pes: range '8:64:x1' needs a factor of at least 2")
    assert_usage(argv_of({ "allgather", "--pes", "2,4", "-b", "8K", "-e", "16K" }),
                 "a PE sweep (--pes with a list or range) and a size sweep (-b, -e) do not combine")
    assert_usage(argv_of({ "p2p", "--pes", "2,4", "--dst", "3" }), "--dst must be an integer in 0..1, got 3")
  end)

  it("plots bus bandwidth and efficiency against PE count", function()
    local path = os.tmpname()
    local status = run(argv_of({ "allgather", "--pes", "2:16", "--plot", path }))
    assert.equal(0, status)
    local svg = io.open(path):read("a")
    os.remove(path)
    assert.equal(sweep.svg((small("allgather", "2:16"))), svg)
  end)

  it("gives JSON rows that name their PEs, servers and domains", function()
    local status, out = run(argv_of({ "allgather", "--pes", "8,16", "--json" }))
    assert.equal(0, status)
    local doc = require("cjson").decode(out)
    assert.same({ 8, 16 }, { doc.rows[1].pes, doc.rows[2].pes })
    assert.same({ 1, 2 }, { doc.rows[1].servers, doc.rows[2].servers })
    assert.same({ 1, 2 }, { doc.rows[1].domains, doc.rows[2].domains })
    local rows = sweep.rows((small("allgather", "8,16")))
    assert.equal(rows[2].op.kernel_us, metrics.fmt3(doc.rows[2].shmem.latency_us))
  end)

  it("writes one output folder per count", function()
    local dir = os.tmpname()
    os.remove(dir)
    local status, out = run(argv_of({ "allgather", "--pes", "2,4", "--output", dir }))
    assert.equal(0, status)
    local lfs = require("lfs")
    for _, n in ipairs({ 2, 4 }) do
      local sub = string.format("%s/pes_%d", dir, n)
      assert.equal("file", lfs.attributes(sub .. "/result.csv", "mode"))
      assert.equal("file", lfs.attributes(sub .. "/hccl/result.csv", "mode"))
      assert.equal("directory", lfs.attributes(string.format("%s/PROF_000001_%d", sub, n - 1), "mode"))
      assert.is_nil(lfs.attributes(string.format("%s/PROF_000001_%d", sub, n), "mode"))
      assert.matches(sub .. "/result.csv", out, 1, true)
    end
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("passes --timing-only to every count: the data run's figures, #wrong N/A", function()
    local status, out = run(argv_of({ "allgather", "--pes", "2,8:16", "--timing-only" }))
    assert.equal(0, status)
    local _, data = run(argv_of({ "allgather", "--pes", "2,8:16" }))
    local timed, full = table_lines(out), table_lines(data)
    assert.equal(3, #timed)
    for i, cells in ipairs(timed) do
      assert.same({ "N/A", "N/A" }, { cells[10], cells[15] })
      cells[10], cells[15], full[i][10], full[i][15] = nil, nil, nil, nil
      assert.same(full[i], cells)
    end
  end)

  it("shows N/A for the wrong elements when the result check is off (-c 0)", function()
    local status, out = run(argv_of({ "allgather", "--pes", "2,4", "-c", "0" }))
    assert.equal(0, status)
    for _, cells in ipairs(table_lines(out)) do
      assert.same({ "N/A", "N/A" }, { cells[10], cells[15] })
    end
  end)
end)
