-- shmemlab.cli: `lua run_op.lua OP [options]`. Parses the options, runs the
-- operator and its baseline (one size, or an nccl-tests-style sweep), prints
-- the results and writes the msprof-style output folder.
-- Exit status (cli.EXIT): 0 all elements right, 1 any element wrong or a checked run's
-- reports, 2 usage error, 3 the run failed (kernel fault, deadlock, operator error).
local lab = require("shmemlab")
local runner = require("shmemlab.runner")
local metrics = require("shmemlab.metrics")
local report = require("shmemlab.report")

local cli = {}

-- the exit statuses, by the kind of the outcome
cli.EXIT = { ok = 0, wrong = 1, usage = 2, run = 3 }

cli.usage = [[
usage: lua run_op.lua OP [options]       OP: a name from ops/ (see --list) or a path to an op file
  --pes N            PEs, 1-1024 (default 8; more than pes_per_server = several servers)
  --soc NAME         Ascend910B (default), Ascend910_93, Ascend950
  --dtype T          int8 int16 int32 int64 uint8 fp16 bf16 fp32, or float half bfloat16
                     (default: the op's first)
  --count N          elements per PE (the op's shard)      --shape M,N   count = M*N
  -b MIN -e MAX -f F sweep sizes MIN..MAX bytes per PE, times F (sizes like 8K, 64M)
  --block-dim N      AIV blocks per PE (default: the op's, at most the SoC's cores)
  -w, --warmup N     warm-up launches (10)            -n, --iters N   measured launches (40)
  --baseline B       hccl (default) | none
  --prof-pe P        cycle profiling PE (default 0; -1 = off)
  --root R           root PE (broadcast)              --reduce OP    sum | max | min
  --src P --dst P    p2p PEs                          --mode M       p2p: put | get
  --tokens N --hidden N --topk K --experts E --routing uniform|lognormal|zipf|file
  --routes FILE      routing file (--routing file)
  --dispatch-dtype T dispatch: int8 (rows quantised in the kernel, per-token fp32 scale) or
                     the input dtype (default); the combine stays in the input dtype
  --set KEY=VALUE    override a SoC profile figure (e.g. --set hccs_GBps=14)
  --ub-bytes N       UB bytes an op may stage through (190K)
  --sym-bytes N      symmetric staging budget of an op (half the heap)
  --output DIR       msprof-style PROF_* folders, result.csv, records, timelines
  --json             print one JSON document instead of text
  --plot FILE.svg    sweep: bus bandwidth against size, op and baseline
  --check MODE       memcheck | racecheck | synccheck | initcheck | all (a checked run)
  --list             list the operators        -h, --help   this text
]]

-- a size like 8K, 64M, 1G, 4096
local function parse_size(s)
  local n, u = tostring(s):match("^(%d+)([KkMmGg]?)[Bb]?$")
  if not n then return nil end
  local mult = ({ [""] = 1, k = 1024, m = 1024 ^ 2, g = 1024 ^ 3 })[u:lower()]
  return math.tointeger(tonumber(n) * mult)
end

-- options that take a value: option -> {config key, kind}
local valued = {
  ["--pes"] = { "pes", "int" }, ["--soc"] = { "soc", "str" }, ["--dtype"] = { "dtype", "str" },
  ["--count"] = { "count", "int" }, ["--shape"] = { "shape", "shape" },
  ["-b"] = { "minbytes", "size" }, ["-e"] = { "maxbytes", "size" }, ["-f"] = { "factor", "int" },
  ["--block-dim"] = { "block_dim", "int" }, ["-w"] = { "warmup", "int" },
  ["--warmup"] = { "warmup", "int" }, ["-n"] = { "iters", "int" }, ["--iters"] = { "iters", "int" },
  ["--baseline"] = { "baseline", "str" }, ["--prof-pe"] = { "prof_pe", "int" },
  ["--root"] = { "root", "int" }, ["--reduce"] = { "reduce", "str" },
  ["--src"] = { "src_pe", "int" }, ["--dst"] = { "dst_pe", "int" }, ["--mode"] = { "mode", "str" },
  ["--tokens"] = { "local_tokens", "int" }, ["--hidden"] = { "hidden", "int" },
  ["--topk"] = { "topk", "int" }, ["--experts"] = { "experts", "int" },
  ["--routing"] = { "routing", "str" }, ["--routes"] = { "routes_file", "str" },
  ["--set"] = { "set", "set" }, ["--ub-bytes"] = { "ub_bytes", "size" },
  ["--sym-bytes"] = { "sym_bytes", "size" }, ["--output"] = { "output", "str" },
  ["--plot"] = { "plot", "str" }, ["--check"] = { "check", "str" },
  ["--dispatch-dtype"] = { "dispatch_dtype", "str" },
}
local flags = { ["--json"] = "json", ["--list"] = "list", ["--help"] = "help", ["-h"] = "help" }

-- argv -> options table, or nil and a one-line error
function cli.parse(argv)
  local o = { overrides = {} }
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local key, val = a:match("^(%-%-[%w-]+)=(.*)$")
    if key then a = key end
    if flags[a] then
      o[flags[a]] = true
    elseif valued[a] then
      if not val then i = i + 1; val = argv[i] end
      if val == nil then return nil, "option " .. a .. " needs a value" end
      local k, kind = valued[a][1], valued[a][2]
      if kind == "int" then
        local n = math.tointeger(tonumber(val))
        if not n then return nil, string.format("option %s needs an integer, got '%s'", a, val) end
        o[k] = n
      elseif kind == "size" then
        local n = parse_size(val)
        if not n or n <= 0 then
          return nil, string.format("option %s needs a size like 8K or 64M, got '%s'", a, val)
        end
        o[k] = n
      elseif kind == "shape" then
        local m, n = val:match("^(%d+),(%d+)$")
        if not m then return nil, "option --shape needs M,N, got '" .. val .. "'" end
        o.shape = { math.tointeger(tonumber(m)), math.tointeger(tonumber(n)) }
      elseif kind == "set" then
        local sk, sv = val:match("^([%w_]+)=(.+)$")
        if not sk then return nil, "option --set needs KEY=VALUE, got '" .. val .. "'" end
        o.overrides[sk] = tonumber(sv) or (sv == "true" and true) or (sv == "false" and false) or sv
      else
        o[k] = val
      end
    elseif a:sub(1, 1) == "-" then
      return nil, "unknown option " .. a
    elseif o.op == nil then
      o.op = a
    else
      return nil, "unexpected argument '" .. a .. "'"
    end
    i = i + 1
  end
  if o.help or o.list then return o end
  if o.op == nil then return nil, "no operator given" end
  local sweep = o.minbytes or o.maxbytes
  if sweep and not (o.minbytes and o.maxbytes) then return nil, "a sweep needs both -b and -e" end
  if sweep and o.minbytes > o.maxbytes then return nil, "-b must not exceed -e" end
  if o.factor and o.factor < 2 then return nil, "-f must be at least 2" end
  if o.baseline and o.baseline ~= "hccl" and o.baseline ~= "none" then
    return nil, "--baseline must be hccl or none"
  end
  return o
end

-- runner options from CLI options
local function run_opts(o)
  local r = {}
  for k, v in pairs(o) do
    if k ~= "op" and k ~= "json" and k ~= "plot" and k ~= "output" and k ~= "minbytes"
       and k ~= "maxbytes" and k ~= "factor" then
      r[k] = v
    end
  end
  r.trace = o.output ~= nil
  return r
end

-- append a machine's task rows to tasks_by_pe
local function collect_tasks(acc, res)
  for pe = 0, res.config_pes - 1 do
    acc[pe] = acc[pe] or {}
    for _, t in ipairs(res.machine:tasks(pe)) do acc[pe][#acc[pe] + 1] = t end
  end
end

-- the perftest CSV under dir: per size, each profiled block's time in the op's main frame
local function write_perftest(dir, results)
  local perf_rows = {}
  for _, r in ipairs(results) do
    local row = require("shmemlab.prof").perftest_row(r.shmem.prof, {
      data_bytes = r.config.count * lab.core.dtype_size(r.config.dtype), npus = r.config.pes,
      ub_kb = r.config.ub_bytes / 1024, launches = r.shmem.launches,
      frame = lab.frames.REMOTE_PUT_GET })
    if row then perf_rows[#perf_rows + 1] = row end
  end
  if #perf_rows > 0 then
    local pf = assert(io.open(dir .. "/perftest.csv", "w"))
    pf:write(require("shmemlab.prof").perftest_csv(perf_rows))
    pf:close()
  end
end

-- the msprof-style output of a run (or a sweep's runs) under dir
local function write_output(dir, results, cases)
  local msprof = require("shmemlab.msprof")
  local json = require("shmemlab.json")
  local stamp = os.date("!%Y%m%d%H%M%S")
  local parts = { { "", "shmem" }, { "/hccl", "baseline" } }
  local written = {}
  for run_id, part in ipairs(parts) do
    local root = dir .. part[1]
    local tasks, any = {}, false
    for _, r in ipairs(results) do
      local res = r[part[2]]
      if res then any = true; res.config_pes = r.config.pes; collect_tasks(tasks, res) end
    end
    if any then
      msprof.mkdir_p(root)
      msprof.write(root, run_id, stamp, tasks)
      msprof.write_cases(root, cases)
      local per = results[1][part[2]].iter_launches      -- msprof rows per iteration
      local _, info = msprof.statistics(root, { warmup = results[1].config.warmup * per,
                                                iters = results[1].config.iters * per })
      written[#written + 1] = info.result_csv
      -- timelines of the last measured launch of the last run
      local res = results[#results][part[2]]
      if res and res.trace then
        local events, flows = runner.trace_events(res)
        local merged = msprof.trace(events, flows)
        msprof.write_trace(root .. "/timeline.json", merged)
        for pe = 0, results[#results].config.pes - 1 do
          local mine = {}
          for _, e in ipairs(events) do if e.pe == pe then mine[#mine + 1] = e end end
          local path = string.format("%s/PROF_%06d_%d/mindstudio_profiler_output/msprof_%s.json",
                                     root, run_id, pe, stamp)
          msprof.write_trace(path, msprof.trace(mine))
        end
      end
    end
  end
  write_perftest(dir, results)
  local last = results[#results]
  local f = assert(io.open(dir .. "/record.txt", "w"))
  f:write(report.record(last.record), "\n", (report.perf_lines(last.metrics.per_pe)),
    report.perf_summary(last.record))
  f:close()
  f = assert(io.open(dir .. "/record.json", "w"))
  f:write(report.to_json(last.record), "\n")
  f:close()
  f = assert(io.open(dir .. "/perf.json", "w"))
  f:write(json.encode({ per_pe = last.metrics.per_pe }), "\n")
  f:close()
  return written
end

-- the sizes of a sweep
local function sweep_sizes(o)
  if not o.minbytes then return nil end
  local sizes, s = {}, o.minbytes
  while s <= o.maxbytes do sizes[#sizes + 1] = s; s = s * (o.factor or 2) end
  return sizes
end

-- the JSON of a measured run's checked-run reports, or nil when unchecked
local function json_checked(res)
  local sz = res.sanitizer
  if not sz then return nil end
  local reports = require("shmemlab.json").array()
  for _, rep in ipairs(sz.reports) do
    local row = {}
    for k, v in pairs(rep) do row[k] = v end
    row.text = require("shmemlab.check").format(res.machine, rep)
    reports[#reports + 1] = row
  end
  return { errors = sz.errors, reports = reports, summary = sz.text:match("[^\n]*\n?$"),
           frames_error = res.frame_error }
end

-- one JSON row of a result
local function json_row(r)
  local s = r.metrics.summary
  local row = {
    size = r.config.count * lab.core.dtype_size(r.config.dtype), count = r.config.count,
    dtype = r.config.dtype, record = r.record,
    shmem = { latency_us = s.latency_us, e2e_latency_us = s.e2e_latency_us,
              algo_bandwidth_GBps = s.algo_bandwidth_GBps,
              kernel_bus_bandwidth_GBps = s.kernel_bus_bandwidth_GBps,
              bound_us = s.bound_us, efficiency_pct = s.efficiency_pct,
              wrong = r.shmem.check.wrong, spread = r.shmem.spread, describe = r.shmem.describe,
              deepep_recv_rows = s.deepep_recv_rows, deepep_row_bytes = s.deepep_row_bytes,
              deepep_wire_dtype = s.deepep_wire_dtype,
              deepep_bandwidth_GBps = s.deepep_bandwidth_GBps, checked = json_checked(r.shmem) },
    verdict = s.verdict.text, ratio_pct = s.ratio_pct, e2e_ratio_pct = s.e2e_ratio_pct,
    bound_us = s.bound_us, efficiency_pct = s.efficiency_pct,
    bound = s.bound, per_pe = r.metrics.per_pe,
  }
  if r.baseline then
    local b = r.baseline.metrics.summary
    row.baseline = { name = r.baseline.op.title, latency_us = b.latency_us,
                     e2e_latency_us = b.e2e_latency_us,
                     kernel_bus_bandwidth_GBps = b.kernel_bus_bandwidth_GBps,
                     bound_us = b.bound_us, efficiency_pct = b.efficiency_pct,
                     wrong = r.baseline.check.wrong, spread = r.baseline.spread,
                     deepep_recv_rows = b.deepep_recv_rows, deepep_row_bytes = b.deepep_row_bytes,
                     deepep_wire_dtype = b.deepep_wire_dtype,
                     deepep_bandwidth_GBps = b.deepep_bandwidth_GBps,
                     checked = json_checked(r.baseline) }
  end
  return row
end

cli.SWEEP_LEGEND = "# basis: kernel_us, bound_us, eff_%, algbw, busbw (GB/s) and ratio_kernel on "
  .. "kernel time (eff_% = bound_us / kernel_us * 100; ratio_kernel = hccl kernel_us / kernel_us "
  .. "* 100); e2e_us and ratio_e2e end to end (ratio_e2e = hccl e2e_us / e2e_us * 100)\n"

-- the cells of one side (op or baseline) of a sweep row
local function sweep_cells(s, wrong, with_bound)
  local eff = s.efficiency_pct and metrics.fmt3(s.efficiency_pct) or "-"
  local cells = string.format("%10s", metrics.fmt3(s.latency_us))
  if with_bound then
    cells = cells .. string.format(" %10s", s.bound_us and metrics.fmt3(s.bound_us) or "-")
  end
  return cells .. string.format(" %8s %9s %9s %7d", eff, metrics.fmt3(s.algo_bandwidth_GBps),
    metrics.fmt3(s.kernel_bus_bandwidth_GBps), wrong)
end

-- the nccl-tests style table of a sweep: the op, its bound and the baseline on kernel time,
-- then the kernel ratio and the end-to-end comparison
local function sweep_table(results)
  local out = { cli.SWEEP_LEGEND }
  local base = results[1].baseline ~= nil
  local head = string.format("#%11s %12s %6s | %10s %10s %8s %9s %9s %7s |", "size", "count", "type",
    "kernel_us", "bound_us", "eff_%", "algbw", "busbw", "#wrong")
  if base then
    head = head .. string.format(" %10s %8s %9s %9s %7s | %12s %10s %10s %9s", "hccl_kern",
      "eff_%", "algbw", "busbw", "#wrong", "ratio_kernel", "e2e_us", "hccl_e2e", "ratio_e2e")
  else
    head = head .. string.format(" %10s", "e2e_us")
  end
  out[#out + 1] = head .. "\n"
  for _, r in ipairs(results) do
    local s = r.metrics.summary
    local line = string.format("%12d %12d %6s | %s |", r.config.count *
      lab.core.dtype_size(r.config.dtype), r.config.count, r.config.dtype,
      sweep_cells(s, r.shmem.check.wrong, true))
    if base then
      local b = r.baseline.metrics.summary
      line = line .. string.format(" %s | %12s %10s %10s %9s", sweep_cells(b, r.baseline.check.wrong),
        metrics.fmt(s.ratio_pct, 1) .. "%", metrics.fmt3(s.e2e_latency_us),
        metrics.fmt3(b.e2e_latency_us), metrics.fmt(s.e2e_ratio_pct, 1) .. "%")
    else
      line = line .. string.format(" %10s", metrics.fmt3(s.e2e_latency_us))
    end
    out[#out + 1] = line .. "\n"
  end
  return table.concat(out)
end

-- the folder of path and its mode (lfs), or the nearest existing one above it when up
local function folder_of(path, up)
  local lfs = require("lfs")
  local at = path
  repeat
    at = at:match("^(.*)/[^/]*$") or "."
    if at == "" then at = "/" end
  until not up or lfs.attributes(at, "mode") or at == "." or at == "/"
  return at, lfs.attributes(at, "mode")
end

-- a usage error unless path (a folder when dir) can be written; nothing is left behind
local function check_writable(path, what, dir)
  local mode = require("lfs").attributes(path, "mode")
  if mode and dir and mode ~= "directory" then runner.usage("%s %s is not a folder", what, path) end
  if mode == "directory" and not dir then runner.usage("%s %s is a folder", what, path) end
  if mode and not dir then                        -- an existing file: opened, not changed
    local f = io.open(path, "a")
    if not f then runner.usage("cannot write %s %s", what, path) end
    f:close()
    return
  end
  local at = path
  if not mode then                                -- msprof creates a folder's parents
    local m2
    at, m2 = folder_of(path, dir)
    if m2 ~= "directory" then runner.usage("cannot write %s %s (no folder %s)", what, path, at) end
  end
  local probe = string.format("%s/.shmemlab-probe-%d", at, os.time())
  local f = io.open(probe, "w")
  if not f then runner.usage("cannot write %s %s (folder %s is not writable)", what, path, at) end
  f:close()
  os.remove(probe)
end

-- the runner options of each run the CLI options ask for, all checked before any runs
local function plan(o, op)
  local opts, sizes = run_opts(o), sweep_sizes(o)
  local runs = { opts }
  if sizes then
    local c = runner.config(op, opts)             -- names a bad dtype
    runs = {}
    for _, bytes in ipairs(sizes) do
      local ro = {}
      for k, v in pairs(opts) do ro[k] = v end
      ro.count = math.max(1, bytes // lab.core.dtype_size(c.dtype))
      ro.shape = nil
      runs[#runs + 1] = ro
    end
  end
  for _, ro in ipairs(runs) do runner.config(op, ro) end
  if o.output then check_writable(o.output, "--output", true) end
  if o.plot then check_writable(o.plot, "--plot", false) end
  return runs, sizes
end

-- run everything the options ask for; returns the exit status
function cli.run(o, out)
  local op = runner.load_op(o.op)
  local runs, sizes = plan(o, op)
  local results = {}
  for _, ro in ipairs(runs) do results[#results + 1] = runner.run(op, ro) end
  local c = results[1].config
  if o.json then
    local json = require("shmemlab.json")
    local conf = {}
    for k, v in pairs(c) do if k ~= "profile" and k ~= "overrides" then conf[k] = v end end
    conf.profile = c.profile
    local rows = json.array()
    for _, r in ipairs(results) do rows[#rows + 1] = json_row(r) end
    out:write(json.encode({ version = lab.version, op = op.name, configuration = conf, rows = rows }), "\n")
  elseif sizes then
    out:write(runner.config_text(c, op))
    out:write(sweep_table(results))
    for _, r in ipairs(results) do
      if r.shmem.check.wrong > 0 then out:write(runner.check_text(op.name, r.shmem.check)) end
      for _, res in ipairs({ r.shmem, r.baseline }) do
        if res.sanitizer and res.sanitizer.errors > 0 then out:write(res.sanitizer.text) end
      end
    end
  else
    out:write(runner.text(results[1]))
  end
  if o.plot then
    local series = { { name = "shmemlab " .. op.name, color = "#1f77b4", points = {} } }
    if results[1].baseline then
      series[2] = { name = results[1].baseline.op.title, color = "#d62728", points = {} }
    end
    for _, r in ipairs(results) do
      local bytes = r.config.count * lab.core.dtype_size(r.config.dtype)
      table.insert(series[1].points, { bytes, r.metrics.summary.kernel_bus_bandwidth_GBps })
      if series[2] then
        table.insert(series[2].points, { bytes, r.baseline.metrics.summary.kernel_bus_bandwidth_GBps })
      end
    end
    local f = assert(io.open(o.plot, "w"))
    f:write(require("shmemlab.plot").svg{
      title = string.format("%s on %d PEs of %s (%s)", op.name, c.pes, c.soc, c.dtype),
      series = series })
    f:close()
  end
  if o.output then
    local cases = { header = { "DataSize", "Count", "Dtype", "Npus", "Blocks" }, rows = {} }
    for _, r in ipairs(results) do
      cases.rows[#cases.rows + 1] = { r.config.count * lab.core.dtype_size(r.config.dtype),
        r.config.count, r.config.dtype, r.config.pes, r.config.block_dim }
    end
    local files = write_output(o.output, results, cases)
    if not o.json then
      out:write("\noutput written under ", o.output, " (", table.concat(files, ", "), ")\n")
    end
  end
  for _, r in ipairs(results) do if runner.any_wrong(r) then return cli.EXIT.wrong end end
  return cli.EXIT.ok
end

-- the operator list
local function list(out)
  for _, name in ipairs(runner.list()) do
    local ok, op = pcall(runner.load_op, name)
    if ok then
      local has_base = runner.load_baseline(op) and "hccl baseline" or "no baseline"
      out:write(string.format("%-16s %-15s %-14s %s\n", name, op.collective, has_base,
                              table.concat(op.dtypes, " ")))
    else
      out:write(string.format("%-16s (cannot load: %s)\n", name, tostring(op)))
    end
  end
end

-- main(argv) -> exit status (cli.EXIT); a usage error is one line on stderr
function cli.main(argv, out, err)
  out, err = out or io.stdout, err or io.stderr
  local o, msg = cli.parse(argv or {})
  if not o then
    err:write("run_op.lua: ", msg, " (lua run_op.lua --help lists the options)\n")
    return cli.EXIT.usage
  end
  if o.help then out:write(cli.usage) return cli.EXIT.ok end
  if o.list then list(out) return cli.EXIT.ok end
  local ok, status = pcall(cli.run, o, out)
  if ok then return status end
  if runner.kind(status) == "usage" then
    err:write("run_op.lua: ", status.message, " (lua run_op.lua --help lists the options)\n")
    return cli.EXIT.usage
  end
  err:write("run_op.lua: ", tostring(status), "\n")
  return cli.EXIT.run
end

return cli
