-- shmemlab.cli: `lua run_op.lua OP [options]`. Parses the options, runs the
-- operator and its baseline (one size, or an nccl-tests-style sweep), prints
-- the results and writes the msprof-style output folder.
-- Exit status (cli.EXIT): 0 all elements right, 1 any element wrong or a checked run's
-- reports, 2 usage error, 3 the run failed (kernel fault, deadlock, operator error).
local lab = require("shmemlab")
local runner = require("shmemlab.runner")
local metrics = require("shmemlab.metrics")
local report = require("shmemlab.report")
local sweep = require("shmemlab.sweep")

local cli = {}

-- the exit statuses, by the kind of the outcome
cli.EXIT = { ok = 0, wrong = 1, usage = 2, run = 3 }

-- a size like 8K, 64M, 1G, 4096
local function parse_size(s)
  local n, u = tostring(s):match("^(%d+)([KkMmGg]?)[Bb]?$")
  if not n then return nil end
  local mult = ({ [""] = 1, k = 1024, m = 1024 ^ 2, g = 1024 ^ 3 })[u:lower()]
  return math.tointeger(tonumber(n) * mult)
end

-- each kind of option value: kind -> function(text, option name) -> value, or nil and
-- the one-line error. A helper adds a kind here (e.g. "pes" for PE lists and ranges).
cli.kinds = {}
function cli.kinds.int(v, name)
  local n = math.tointeger(tonumber(v))
  if not n then return nil, string.format("option %s needs an integer, got '%s'", name, v) end
  return n
end
function cli.kinds.str(v) return v end
-- 0 or 1: off or on
function cli.kinds.bool(v, name)
  if v == "0" or v == "1" then return v == "1" end
  return nil, string.format("option %s must be 0 (off) or 1 (on), got '%s'", name, v)
end
-- --pes: one count (an integer, checked with the run's options), or a PE sweep's list or
-- range of counts (text with ',' or ':', sweep.parse_pes)
function cli.kinds.pes(v, name)
  if not v:find("[,:]") then return cli.kinds.int(v, name) end
  local counts, why = sweep.parse_pes(v)
  if not counts then return nil, string.format("option %s: %s", name, why) end
  return counts
end
function cli.kinds.size(v, name)
  local n = parse_size(v)
  if not n or n <= 0 then
    return nil, string.format("option %s needs a size like 8K or 64M, got '%s'", name, v)
  end
  return n
end
function cli.kinds.shape(v)
  local m, n = v:match("^(%d+),(%d+)$")
  if not m then return nil, "option --shape needs M,N, got '" .. v .. "'" end
  return { math.tointeger(tonumber(m)), math.tointeger(tonumber(n)) }
end
function cli.kinds.knob(v)
  local k, sv = v:match("^([%a_][%w_]*)=(.+)$")
  if not k then return nil, "option --knob needs KEY=VALUE, got '" .. v .. "'" end
  return { k, math.tointeger(tonumber(sv)) or (sv == "true" and true) or (sv == "false" and false)
              or sv }
end
function cli.kinds.set(v)
  local k, sv = v:match("^([%w_]+)=(.+)$")
  if not k then return nil, "option --set needs KEY=VALUE, got '" .. v .. "'" end
  return { k, tonumber(sv) or (sv == "true" and true) or (sv == "false" and false) or sv }
end
-- -c 0|1, nccl-tests' result check; the sanitizer's old spelling names its new one
function cli.kinds.onoff(v, name)
  local on = cli.kinds.bool(v, name)
  if on ~= nil then return on end
  local tool = true
  for w in v:gmatch("[^,%s]+") do tool = tool and lab.check_modes[w] ~= nil end
  if tool and v:find("%a") then
    return nil, string.format("%s is the result check, 0 or 1 (as nccl-tests' -c); the "
      .. "sanitizer is --tool %s", name, v)
  end
  return nil, string.format("%s must be 0 (result check off) or 1 (on), got '%s'", name, v)
end
-- --tool, mssanitizer's: memcheck | racecheck | synccheck | initcheck | all, or a list
function cli.kinds.tool(v, name)
  for w in v:gmatch("[^,%s]+") do
    if not lab.check_modes[w] then
      return nil, string.format("%s must be memcheck, racecheck, synccheck, initcheck or all, "
        .. "got '%s'%s", name, w, lab.suggest(w, lab.check_modes))
    end
  end
  return v
end
-- -a, nccl-tests' --average: how the per-PE figures combine into the op's
cli.COMBINE = { ["0"] = "pe0", ["1"] = "mean", ["2"] = "min", ["3"] = "max",
                pe0 = "pe0", mean = "mean", min = "min", max = "max" }
function cli.kinds.combine(v, name)
  if cli.COMBINE[v] then return cli.COMBINE[v] end
  return nil, string.format("%s must be 0 (PE 0), 1 (mean), 2 (min) or 3 (max, the default), "
    .. "got '%s'", name, v)
end

-- Every option, in help order: a group title, or {names (the first is the one errors
-- name), value name (nil: a flag), result key, kind (cli.kinds), help}. Adding an option
-- is one row here.
cli.OPTIONS = {
  "Machine",
  { "--pes -p", "N|LIST", "pes", "pes", "PEs, 1-1024 (default 8; more than pes_per_server = "
    .. "several servers); a PE sweep: 8,16,32 or A:B[:xF|:+S] (8:1024:x2, 8:64:+8)" },
  { "--soc", "NAME", "soc", "str", "Ascend910B (default), Ascend910_93, Ascend950" },
  { "--set", "KEY=VALUE", "set", "set", "override a SoC profile figure (e.g. --set hccs_GBps=14; "
    .. "the keys are below)" },
  "Data",
  { "--dtype -d", "T", "dtype", "str", "int8 int16 int32 int64 uint8 uint16 uint32 uint64 fp16 "
    .. "bf16 fp32, or float half bfloat16 (default: the op's first)" },
  { "--count", "N", "count", "int", "elements per PE (the op's shard)" },
  { "--shape", "M,N", "shape", "shape", "count = M*N" },
  { "-b --minbytes", "MIN", "minbytes", "size", "sweep sizes MIN..MAX bytes per PE (sizes like 8K, "
    .. "64M) ..." },
  { "-e --maxbytes", "MAX", "maxbytes", "size", "... up to MAX ..." },
  { "-f --stepfactor", "F", "factor", "int", "... times F (default 2)" },
  "Operator",
  { "--root -r", "R", "root", "int", "root PE (broadcast)" },
  { "--reduce -o", "OP", "reduce", "str", "sum | max | min" },
  { "--src", "P", "src_pe", "int", "p2p: source PE" },
  { "--dst", "P", "dst_pe", "int", "p2p: destination PE" },
  { "--mode", "M", "mode", "str", "p2p: put | get" },
  { "--algo", "A", "algo", "str", "flat | hier: the op's one-level design or its relay across "
    .. "the server or card cut (default: the op chooses from the topology and the size)" },
  { "--block-dim", "N", "block_dim", "int", "AIV blocks per PE (default: the op's, at most the "
    .. "SoC's cores)" },
  { "--ub-bytes", "N", "ub_bytes", "size", "UB bytes an op may stage through (190K)" },
  { "--sym-bytes", "N", "sym_bytes", "size", "symmetric staging budget of an op (half the heap)" },
  { "--tokens", "N", "local_tokens", "int", "MoE: tokens per PE" },
  { "--hidden", "N", "hidden", "int", "MoE: hidden size" },
  { "--topk", "K", "topk", "int", "MoE: experts per token" },
  { "--experts", "E", "experts", "int", "MoE: experts in all" },
  { "--routing", "R", "routing", "str", "MoE: uniform | lognormal | zipf | file" },
  { "--routes", "FILE", "routes_file", "str", "MoE: routing file (--routing file)" },
  { "--dispatch-dtype", "T", "dispatch_dtype", "str", "dispatch: int8 (rows quantised in the "
    .. "kernel, per-token fp32 scale) or the input dtype (default); the combine stays in the "
    .. "input dtype" },
  { "--moe-mode", "M", "moe_mode", "str", "MoE: normal | ll (default: ll at or under 256 tokens "
    .. "per PE, normal above)" },
  "Measurement",
  { "--warmup -w", "N", "warmup", "int", "warm-up launches (10)" },
  { "--iters -n", "N", "iters", "int", "measured launches (40)" },
  { "--check -c", "0|1", "verify", "onoff", "result check: 1 compares every element (default), "
    .. "0 skips it (#wrong N/A)" },
  { "--average -a", "A", "combine", "combine", "how the per-PE figures combine: 0 PE 0, 1 mean, "
    .. "2 min, 3 max (default; the slowest PE)" },
  { "--baseline", "B", "baseline", "str", "hccl | hccl-aiv | hccl-sdma | deepep | mc2 | none "
    .. "(default: hccl; MoE ops the shipping kernels of --moe-mode: deepep for normal, mc2 for ll; "
    .. "hccl-aiv, hccl-sdma: HCCL's expansion modes, doc/hccl.md)" },
  { "--prof-pe", "P", "prof_pe", "int", "cycle profiling PE (default 0; -1 = off)" },
  { "--settle-ns", "N", "settle_ns", "int", "the flow solver's window: flow starts and ends "
    .. "within N ns settle together, faster at scale, each off by < N ns (default: the profile's "
    .. "settle_ns, 0 = exact)" },
  { "--chain-flow", "0|1", "chain_flow", "bool", "timing-only: 1 issues a pipelined chain whose "
    .. "one leg sets the pace as one flow, timed as its chunks (doc/chain.md; default: 1)" },
  { "--timing-only", nil, "timing_only", nil, "buffers hold no bytes: every copy, signal and "
    .. "barrier timed as with data, the result not checked (racecheck, initcheck refused)" },
  "Output",
  { "--output", "DIR", "output", "str", "msprof-style PROF_* folders, result.csv, records, "
    .. "timelines" },
  { "--json", nil, "json", nil, "print one JSON document instead of text" },
  { "--plot", "FILE.svg", "plot", "str", "a sweep's plot, op and baseline: bus bandwidth against size, or "
    .. "bus bandwidth and efficiency against PE count (--pes LIST)" },
  { "--tool", "MODE", "check", "tool", "a checked run (mssanitizer's --tool): memcheck | "
    .. "racecheck | synccheck | initcheck | all" },
  "Tuning and parallel runs",
  { "--tune", nil, "tune", nil, "search the op's tuning space (its knobs) at the given size(s) and "
    .. "PE count(s): a ranked table, the best as a command line and JSON, re-run with data and "
    .. "checked (doc/tune.md)" },
  { "--tune-points", "N", "tune_points", "int", "a tuning space of at most N valid points runs "
    .. "whole (default 64), a larger one by coordinate descent" },
  { "--knob", "KEY=VALUE", "knobs", "knob", "set one of the op's tune knobs (e.g. --knob "
    .. "buffers=1; doc/tune.md lists them)" },
  { "-j --jobs", "N", "jobs", "int", "worker processes for the points of a sweep or a --tune "
    .. "(default: the cores; 1: all in this process); the output is the same" },
  { "--shards", "DIR", "shards", "str", "run this process's shard of the points and write it to "
    .. "DIR (`merge DIR` prints the whole run); the shard from --shard or the launcher" },
  { "--shard", "I/N", "shard", "str", "shard I (0-based) of N (default: SLURM_ARRAY_TASK_ID/"
    .. "COUNT, OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE)" },
  "Other",
  { "--list", nil, "list", nil, "list the operators" },
  { "-h --help", nil, "help", nil, "this text" },
}

-- the option rows (not the group titles), and the names of the options taking a value
local function option_rows()
  local rows, valued = {}, {}
  for _, row in ipairs(cli.OPTIONS) do
    if type(row) == "table" then
      rows[#rows + 1] = row
      if row[2] then for n in row[1]:gmatch("%S+") do valued[n] = true end end
    end
  end
  return rows, valued
end

-- the argparse parser of the options, named prog (as the usage line names the command)
local function parser(prog)
  local argparse = require("argparse")
  local p = argparse(prog):add_help(false):help_max_width(96)
    :usage(string.format("usage: %s OP [options]    OP: a name from ops/ (see --list) or a path "
      .. "to an op file", prog))
  p:argument("op"):args("?"):hidden(true)
  p:argument("extra"):args("*"):hidden(true)
  local groups = {}
  for _, row in ipairs(cli.OPTIONS) do
    if type(row) == "string" then
      groups[#groups + 1] = { row }
    else
      local names, argname, key, kind = row[1], row[2], row[3], row[4]
      local o = (argname and p:option(names) or p:flag(names)):target(key):description(row[5])
      if argname then
        local first = names:match("%S+")          -- the name errors give
        o:argname(argname):convert(function(v) return cli.kinds[kind](v, first) end)
        if kind == "set" or kind == "knob" then o:count("*") end
      end
      table.insert(groups[#groups], o)
    end
  end
  for _, g in ipairs(groups) do p:group(table.unpack(g)) end
  return p
end
-- units of the profile figures --help lists: by name, else by the name's ending
local UNITS = { aiv_cores = "cores", pes_per_server = "PEs", dies_per_card = "dies",
  supernode_dies = "dies (0: the server)", queue_depth = "instructions", cycle2us = "MHz",
  dma_queue_depth = "descriptors",
  instruction_budget = "instructions (0: none)", spin_limit = "primitives (0: none)",
  primitive_limit = "primitives (0: none)" }
local ENDINGS = { { "_bytes_per_cycle$", "B/cycle" }, { "_GBps$", "GB/s" }, { "_bytes$", "B" },
  { "_ns$", "ns" }, { "_us$", "us" }, { "_ghz$", "GHz" }, { "_eff$", "fraction" } }

-- the unit of profile figure k (value v)
local function unit_of(k, v)
  if type(v) == "boolean" then return "true|false" end
  if UNITS[k] then return UNITS[k] end
  for _, e in ipairs(ENDINGS) do if k:find(e[1]) then return e[2] end end
  return ""
end

-- the text after the options: exit statuses, environment, and with_keys the --set keys of
-- the profile (each with its value and unit)
local function epilog(prog, with_keys)
  local prof, keys = lab.soc(lab.socs[1]), {}
  for k, v in pairs(prof) do
    if k ~= "name" and type(v) ~= "table" then keys[#keys + 1] = k end
  end
  table.sort(keys)
  local lines = { "Exit status (cli.EXIT):",
    "   0 every element right (and a checked run reported nothing)",
    "   1 an element wrong (--check 1), or a checked run's reports (--tool)",
    "   2 a usage error: one line on stderr, nothing run or written",
    "   3 the run failed: a kernel fault, a deadlock, an error in the operator",
    "",
    "Environment: SHMEMLAB_OPS names the folder of operators (default: ops/ beside lua/ in a "
    .. "checkout, PREFIX/share/lua/5.4/shmemlab/ops when installed); SHMEMLAB_PROGRESS=1 shows "
    .. "a long run's progress on stderr when it is not a terminal (0: never).",
    "",
    string.format("Shards: %s merge DIR [--json] [--plot FILE.svg] prints the run whose shards "
      .. "--shards DIR wrote, as one process would have (doc/tune.md).", prog),
    "",
    string.format("--set keys (%s's value, unit; %s --soc NAME --set KEY=VALUE):", prof.name, prog) }
  if not with_keys then lines[#lines] = string.format("%s --help also lists the --set keys, with "
    .. "%s's value and unit of each.", prog, prof.name) end
  for _, k in ipairs(with_keys and keys or {}) do
    lines[#lines + 1] = string.format("   %-22s %-12s %s", k, tostring(prof[k]), unit_of(k, prof[k]))
  end
  return table.concat(lines, "\n")
end

-- argv with a negative number after an option taking a value joined to it
-- (--prof-pe -1 -> --prof-pe=-1): argparse would read "-1" as an option
local function join_negative(argv, valued)
  local t, i = {}, 1
  while i <= #argv do
    local a, nxt = argv[i], argv[i + 1]
    if valued[a] and type(nxt) == "string" and nxt:match("^%-%.?%d") then
      t[#t + 1] = a:match("^%-%-") and a .. "=" .. nxt or a .. nxt
      i = i + 2
    else
      t[#t + 1] = a
      i = i + 1
    end
  end
  return t
end

-- the command's name in usage and errors
cli.PROG = "lua run_op.lua"

-- the help text of the command named prog (--help): with the --set keys unless no_keys
function cli.help(prog, no_keys)
  return parser(prog or cli.PROG):epilog(epilog(prog or cli.PROG, not no_keys)):get_help() .. "\n"
end

-- argv -> options table, or nil and a one-line error
function cli.parse(argv, prog)
  local rows, valued = option_rows()
  local ok, r = parser(prog or cli.PROG):pparse(join_negative(argv, valued))
  if not ok then return nil, (r:gsub("\n(%a)", function(c) return "; " .. c:lower() end)) end
  local o = { overrides = {} }
  for _, row in ipairs(rows) do
    local v = r[row[3]]
    if row[4] == "set" then
      for _, kv in ipairs(v) do o.overrides[kv[1]] = kv[2] end
    elseif row[4] == "knob" then
      if #v > 0 then o.knobs = {} end
      for _, kv in ipairs(v) do o.knobs[kv[1]] = kv[2] end
    elseif v ~= nil then
      o[row[3]] = v
    end
  end
  o.op = r.op
  if r.extra[1] then return nil, "unexpected argument '" .. r.extra[1] .. "'" end
  if o.help or o.list then return o end
  if o.op == nil then return nil, "no operator given" end
  local sizes = o.minbytes or o.maxbytes
  if sizes and not (o.minbytes and o.maxbytes) then return nil, "a sweep needs both -b and -e" end
  if sizes and o.minbytes > o.maxbytes then return nil, "-b must not exceed -e" end
  if sizes and type(o.pes) == "table" then
    return nil, "a PE sweep (--pes with a list or range) and a size sweep (-b, -e) do not combine"
  end
  if o.factor and o.factor < 2 then return nil, "-f must be at least 2" end
  local families, known = table.concat(runner.BASELINES, ", "), { none = true }
  for _, f in ipairs(runner.BASELINES) do known[f] = true end
  if o.baseline and not known[o.baseline] then
    return nil, "--baseline must be " .. families .. " or none"
  end
  if o.moe_mode and o.moe_mode ~= "normal" and o.moe_mode ~= "ll" then
    return nil, "--moe-mode must be normal or ll"
  end
  return o
end

-- the docs' usage block (doc/cli.md): the help without the --set keys (they follow the profile)
cli.usage = cli.help(nil, true)

-- the options of the command line itself, not of a run
local NOT_RUN = {}
for k in ([[op json plot output minbytes maxbytes factor tune tune_points knobs jobs shards shard
  argv prog merged shard_run]]):gmatch("%S+") do NOT_RUN[k] = true end

-- runner options from CLI options: --knob's knobs as options of their own
local function run_opts(o)
  local r = {}
  for k, v in pairs(o) do
    if not NOT_RUN[k] then r[k] = v end
  end
  for k, v in pairs(o.knobs or {}) do r[k] = v end
  r.trace = o.output ~= nil
  return r
end

-- append a machine's task rows to tasks_by_pe, each with the run's block_dim
local function collect_tasks(acc, res, block_dim)
  for pe = 0, res.config_pes - 1 do
    acc[pe] = acc[pe] or {}
    for _, t in ipairs(res.machine:tasks(pe)) do
      local row = { block_dim = block_dim }
      for k, v in pairs(t) do row[k] = v end
      acc[pe][#acc[pe] + 1] = row
    end
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

-- the timelines of a run's last measured launch under root: timeline.json (all PEs, with
-- the signal arrows) and each PE's msprof_<stamp>.json (a JSON array of events, as msprof's)
local function write_timelines(root, run_id, stamp, res, pes)
  local msprof = require("shmemlab.msprof")
  local events, flows = runner.trace_events(res)
  msprof.write_trace(root .. "/timeline.json", msprof.trace(events, flows))
  for pe = 0, pes - 1 do
    local mine = {}
    for _, e in ipairs(events) do if e.pe == pe then mine[#mine + 1] = e end end
    local path = string.format("%s/PROF_%06d_%d/%s/msprof_%s.json", root, run_id, pe,
                               msprof.OUTPUT_DIR, stamp)
    msprof.write_trace(path, msprof.trace(mine), true)
  end
end

-- the frame breakdown of a measured run as an SVG: each frame's share per PE (per block
-- on one PE)
local function write_frames_plot(path, res)
  local plot = require("shmemlab.plot")
  local bars, by = plot.frame_bars(res.frames, lab.frames.names)
  if #bars == 0 then return end
  local f = assert(io.open(path, "w"))
  f:write(plot.frames_svg{ bars = bars, title = string.format("frames of %s per %s (measured "
    .. "launches)", res.op.title or ("shmemlab " .. res.op.name), by == "pe" and "PE" or "block") })
  f:close()
end

-- the msprof-style output of a run (or a sweep's runs) under dir
local function write_output(dir, results, cases)
  local msprof = require("shmemlab.msprof")
  local json = require("shmemlab.json")
  local stamp = os.date("!%Y%m%d%H%M%S")
  local family = results[1].config.baseline
  local parts = { { "", "shmem" }, { "/" .. family, "baseline" } }
  local written = {}
  for run_id, part in ipairs(parts) do
    local root = dir .. part[1]
    local tasks, any = {}, false
    for _, r in ipairs(results) do
      local res = r[part[2]]
      if res then
        any = true
        res.config_pes = r.config.pes
        collect_tasks(tasks, res, r.config.block_dim)
      end
    end
    if any then
      msprof.mkdir_p(root)
      msprof.write(root, run_id, stamp, tasks)
      msprof.write_cases(root, cases)
      local per = results[1][part[2]].iter_launches      -- msprof rows per iteration
      local _, info = msprof.statistics(root, { warmup = results[1].config.warmup * per,
                                                iters = results[1].config.iters * per })
      written[#written + 1] = info.result_csv
      local res = results[#results][part[2]]
      if res and res.trace then write_timelines(root, run_id, stamp, res, results[#results].config.pes) end
      if res then write_frames_plot(root .. "/frames.svg", res) end
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
    row.text = rep.text or require("shmemlab.check").format(res.machine, rep)
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
              wrong = r.shmem.check.wrong, result_check = not r.shmem.check.unchecked,
              spread = r.shmem.spread, describe = r.shmem.describe,
              deepep_recv_rows = s.deepep_recv_rows, deepep_row_bytes = s.deepep_row_bytes,
              deepep_wire_dtype = s.deepep_wire_dtype,
              deepep_bandwidth_GBps = s.deepep_bandwidth_GBps,
              deepep_wire_row_bytes = s.deepep_wire_row_bytes,
              deepep_wire_bandwidth_GBps = s.deepep_wire_bandwidth_GBps,
              checked = json_checked(r.shmem) },
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
                     wrong = r.baseline.check.wrong, result_check = not r.baseline.check.unchecked,
                     spread = r.baseline.spread,
                     deepep_recv_rows = b.deepep_recv_rows, deepep_row_bytes = b.deepep_row_bytes,
                     deepep_wire_dtype = b.deepep_wire_dtype,
                     deepep_bandwidth_GBps = b.deepep_bandwidth_GBps,
                     deepep_wire_row_bytes = b.deepep_wire_row_bytes,
                     deepep_wire_bandwidth_GBps = b.deepep_wire_bandwidth_GBps,
                     checked = json_checked(r.baseline) }
  end
  return row
end

-- the legend of a sweep table whose baseline is family
function cli.sweep_legend(family)
  return string.format("# basis: kernel_us, bound_us, eff_%%, algbw, busbw (GB/s) and ratio_kernel "
    .. "on kernel time (eff_%% = bound_us / kernel_us * 100; ratio_kernel = %s kernel_us / "
    .. "kernel_us * 100); e2e_us and ratio_e2e end to end (ratio_e2e = %s e2e_us / e2e_us * "
    .. "100)\n", family, family)
end

-- nccl-tests' trailer, which its parsers read: the wrong elements of every run (op and
-- baseline) and the mean of the op's bus bandwidth over the rows (busbw[i] in place of
-- result i's, when given: a PE sweep's printed figures)
function cli.trailer(results, busbw)
  local wrong, bw, skipped = 0, 0, false
  for i, r in ipairs(results) do
    bw = bw + (busbw and busbw[i] or r.metrics.summary.kernel_bus_bandwidth_GBps)
    for _, res in ipairs({ r.shmem, r.baseline }) do
      wrong, skipped = wrong + res.check.wrong, skipped or res.check.unchecked
    end
  end
  local oob = skipped and "N/A" or string.format("%d %s", wrong, wrong > 0 and "FAILED" or "OK")
  return string.format("# Out of bounds values : %s\n# Avg bus bandwidth    : %s \n#\n", oob,
    metrics.fmt3(bw / #results))
end

-- the cells of one side (op or baseline) of a sweep row
local function sweep_cells(s, wrong, with_bound)
  local eff = s.efficiency_pct and metrics.fmt3(s.efficiency_pct) or "-"
  local cells = string.format("%10s", metrics.fmt3(s.latency_us))
  if with_bound then
    cells = cells .. string.format(" %10s", s.bound_us and metrics.fmt3(s.bound_us) or "-")
  end
  return cells .. string.format(" %8s %9s %9s %7s", eff, metrics.fmt3(s.algo_bandwidth_GBps),
    metrics.fmt3(s.kernel_bus_bandwidth_GBps), wrong)
end

-- the redop and root columns of nccl-tests for op run with c: the reduction of the
-- reducing collectives, else "none"; the root of a rooted one, else -1
function cli.redop_root(op, c)
  local reduces = op.collective == "allreduce" or op.collective == "reduce_scatter"
  return reduces and c.reduce or "none", op.collective == "broadcast" and c.root or -1
end

-- the head of the nccl-tests style table of a sweep whose first result is r1: the legend
-- and the header (the op, its bound and the baseline on kernel time, then the kernel ratio
-- and the end-to-end comparison)
local function sweep_head(r1)
  local family = r1.config.baseline
  local head = string.format("#%11s %12s %6s %6s %5s | %10s %10s %8s %9s %9s %7s |", "size",
    "count", "type", "redop", "root", "kernel_us", "bound_us", "eff_%", "algbw", "busbw", "#wrong")
  if r1.baseline then
    head = head .. string.format(" %10s %8s %9s %9s %7s | %12s %10s %10s %9s", family .. "_kern",
      "eff_%", "algbw", "busbw", "#wrong", "ratio_kernel", "e2e_us", family .. "_e2e", "ratio_e2e")
  else
    head = head .. string.format(" %10s", "e2e_us")
  end
  return cli.sweep_legend(family) .. head .. "\n"
end

-- the line of one result of a sweep table
local function sweep_line(r)
  local s = r.metrics.summary
  local redop, root = cli.redop_root(r.op, r.config)
  local line = string.format("%12d %12d %6s %6s %5d | %s |", r.config.count *
    lab.core.dtype_size(r.config.dtype), r.config.count, r.config.dtype, redop, root,
    sweep_cells(s, runner.wrong_cell(r.shmem.check), true))
  if r.baseline then
    local b = r.baseline.metrics.summary
    line = line .. string.format(" %s | %12s %10s %10s %9s",
      sweep_cells(b, runner.wrong_cell(r.baseline.check)), metrics.fmt(s.ratio_pct, 1) .. "%",
      metrics.fmt3(s.e2e_latency_us), metrics.fmt3(b.e2e_latency_us),
      metrics.fmt(s.e2e_ratio_pct, 1) .. "%")
  else
    line = line .. string.format(" %10s", metrics.fmt3(s.e2e_latency_us))
  end
  return line .. "\n"
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
  if not mode then                  -- msprof and --plot create a path's missing folders
    local m2
    at, m2 = folder_of(path, true)
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
  if type(o.pes) == "table" then
    opts.pes = nil
    runs = sweep.plan(op, opts, o.pes)
  elseif sizes then
    local c = runner.config(op, opts)             -- names a bad dtype
    runs = {}
    for _, bytes in ipairs(sizes) do
      local ro = {}
      for k, v in pairs(opts) do ro[k] = v end
      ro.count = math.max(1, bytes // lab.core.dtype_size(c.dtype))
      ro.shape = nil
      runs[#runs + 1] = ro
    end
    local first = runner.config(op, runs[1])     -- one MoE mode and baseline a sweep:
    for _, ro in ipairs(runs) do                 -- the first size's
      ro.moe_mode, ro.baseline = first.moe_mode, first.baseline
    end
  end
  for _, ro in ipairs(runs) do runner.config(op, ro) end
  if o.output then check_writable(o.output, "--output", true) end
  if o.plot then check_writable(o.plot, "--plot", false) end
  return runs, sizes
end

-- the JSON document of the results; a PE sweep's rows name their PEs, servers and domains
local function json_doc(op, results, pe_sweep)
  local json = require("shmemlab.json")
  local c, conf = results[1].config, {}
  for k, v in pairs(c) do if k ~= "profile" and k ~= "overrides" then conf[k] = v end end
  conf.profile = c.profile
  local rows = json.array()
  for i, r in ipairs(results) do
    rows[i] = json_row(r)
    if pe_sweep then
      rows[i].pes, rows[i].servers, rows[i].domains = r.config.pes,
        sweep.servers(r.config.profile, r.config.pes)
    end
  end
  return json.encode({ version = lab.version, op = op.name, configuration = conf, rows = rows })
    .. "\n"
end

-- the end of a size sweep's text: wrong checks and reports, trailer
local function size_sweep_tail(op, results)
  local out = {}
  for _, r in ipairs(results) do
    if r.shmem.check.wrong > 0 then out[#out + 1] = runner.check_text(op.name, r.shmem.check) end
    for _, res in ipairs({ r.shmem, r.baseline }) do
      if res.sanitizer and res.sanitizer.errors > 0 then out[#out + 1] = res.sanitizer.text end
    end
  end
  out[#out + 1] = cli.trailer(results)
  return table.concat(out)
end

-- the SVG of --plot: a PE sweep against PE count, else bus bandwidth against size
local function plot_svg(op, results, pe_sweep)
  if pe_sweep then return sweep.svg(results) end
  local c = results[1].config
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
  return require("shmemlab.plot").svg{
    title = string.format("%s on %d PEs of %s (%s)", op.name, c.pes, c.soc, c.dtype),
    series = series }
end

-- --output: the results under dir (a PE sweep: one folder per count, dir/pes_N); the
-- files written
local function write_folders(dir, results, pe_sweep)
  local groups = { { dir = dir, results = results } }
  if pe_sweep then
    groups = {}
    for i, r in ipairs(results) do
      groups[i] = { dir = string.format("%s/pes_%d", dir, r.config.pes), results = { r } }
    end
  end
  local files = {}
  for _, g in ipairs(groups) do
    local cases = { header = { "DataSize", "Count", "Dtype", "Npus", "Blocks" }, rows = {} }
    for _, r in ipairs(g.results) do
      cases.rows[#cases.rows + 1] = { r.config.count * lab.core.dtype_size(r.config.dtype),
        r.config.count, r.config.dtype, r.config.pes, r.config.block_dim }
    end
    for _, f in ipairs(write_output(g.dir, g.results, cases)) do files[#files + 1] = f end
  end
  return files
end

-- for an op that leaves PEs idle (op.active_pes, e.g. p2p): what its result.csv averages,
-- said where the files are announced; "" for the others. The guide's data_statistic.py
-- averages every PROF_* folder, so the idle PEs' near-empty kernels are averaged in, while
-- the record's latency_us is over the active PEs alone.
function cli.idle_note(op, results)
  if not op.active_pes then return "" end
  local c = results[1].config
  local active = op.active_pes(c)
  local folders, idle = string.format("all %d PE folders", c.pes),
    string.format("the %d idle PEs'", c.pes - #active)
  if c.pes ~= results[#results].config.pes then          -- a PE sweep: a folder per count
    folders, idle = "every PE folder", "the idle PEs'"
  end
  local list = {}
  for i, pe in ipairs(active) do list[i] = tostring(pe) end
  return string.format("result.csv: Time(us) is the mean task time over %s, including %s, as the "
    .. "guide's data_statistic.py averages every PROF_* folder; latency_us is over the active "
    .. "PEs %s alone\n", folders, idle, table.concat(list, " and "))
end

-- the streaming printer of a sweep's text: each(i, r) writes what the text has up to row
-- i (the configuration and the head with the first), finish(results) the rest; the same
-- bytes as the whole text written at once
local function text_printer(op, o, out, runs, sizes)
  local pe_sweep = type(o.pes) == "table"
  local each = function(i, r)
    if pe_sweep then
      if i == 1 then out:write(sweep.text_head(r, sweep.counts_text(o.pes))) end
      out:write(sweep.line(sweep.row(r)))
    elseif sizes then
      if i == 1 then out:write(runner.config_text(r.config, op), sweep_head(r)) end
      out:write(sweep_line(r))
    end
    if out.flush then out:flush() end
  end
  local finish = function(results)
    if pe_sweep then
      local busbw = {}
      for i, row in ipairs(sweep.rows(results)) do busbw[i] = row.op.busbw_GBps end
      out:write(sweep.text_tail(results), cli.trailer(results, busbw))
    elseif sizes then
      out:write(size_sweep_tail(op, results))
    else
      out:write(runner.text(results[1]), "\n", cli.trailer(results))
    end
  end
  if o.json or #runs == 0 then each = nil end
  return each, finish
end

-- the shard this process runs (--shards DIR): index, count from --shard I/N or the
-- launcher's environment (par.shard_env); nil when not sharded
local function shard_of(o)
  if not o.shards then
    if o.shard then runner.usage("--shard needs --shards DIR (where the shard writes its rows)") end
    return nil
  end
  if o.output then runner.usage("--output does not combine with --shards (each folder needs "
    .. "its machines: run it without shards)") end
  local index, count
  if o.shard then
    index, count = o.shard:match("^(%d+)/(%d+)$")
    index, count = math.tointeger(tonumber(index)), math.tointeger(tonumber(count))
  else
    index, count = require("shmemlab.par").shard_env()
    if not index then runner.usage("--shards needs --shard I/N or a launcher's environment "
      .. "(SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT, OMPI_COMM_WORLD_RANK and "
      .. "OMPI_COMM_WORLD_SIZE, PMI_RANK and PMI_SIZE)") end
  end
  if not (index and count and count >= 1 and index >= 0 and index < count) then
    runner.usage("--shard must be I/N with 0 <= I < N, got '%s'", tostring(o.shard))
  end
  check_writable(o.shards, "--shards", true)
  require("shmemlab.msprof").mkdir_p(o.shards)
  return { index = index, count = count }
end

-- run the points (par points) as the options ask: from a merge's shards, as this process's
-- shard (writes its file; returns nil), or here and in workers (par.map); each(i, r) in
-- order
local function execute(o, op, points, err, each)
  local par = require("shmemlab.par")
  if o.merged then
    if #points ~= o.merged.points then
      runner.usage("merge: the shards hold %d points, their command line plans %d",
                   o.merged.points, #points)
    end
    local results = {}
    for i = 1, #points do
      if not o.merged.results[i] then runner.usage("merge: the shards lack point %d", i) end
      results[i] = par.attach(o.merged.results[i], op)
      if each then each(i, results[i]) end
    end
    return results
  end
  local jobs = o.jobs or par.cores()
  if jobs < 1 then runner.usage("-j must be at least 1, got %d", jobs) end
  local popts = { jobs = jobs, output = o.output ~= nil, err = par.progress_stream(err),
                  what = op.name }
  local sh = o.shard_run
  if not sh then return par.map(op, points, popts, each) end
  local mine, list = par.share(#points, sh.index, sh.count), {}
  for j, i in ipairs(mine) do list[j] = points[i] end
  local got, results = par.map(op, list, popts), {}
  for j, i in ipairs(mine) do results[i] = par.portable(got[j]) end
  local path = par.write_shard(o.shards, sh.index, sh.count,
    { argv = o.argv, points = #points, index = sh.index, count = sh.count, results = results })
  err:write(string.format("%s: shard %d of %d: %d of %d points written to %s (merge: %s "
    .. "merge %s)\n", op.name, sh.index, sh.count, #mine, #points, path, o.prog or cli.PROG,
    o.shards))
  return nil
end

-- run everything the options ask for; returns the exit status
function cli.run(o, out, err)
  err = err or io.stderr
  local op = runner.load_op(o.op)
  local known, list = {}, {}
  for _, k in ipairs(op.tune and op.tune.knobs or {}) do known[k.name], list[#list + 1] = true, k.name end
  for name in pairs(o.knobs or {}) do
    if not known[name] then
      runner.usage("operator %s has no tune knob '%s' (its knobs: %s)", op.name, name,
                   #list > 0 and table.concat(list, ", ") or "none")
    end
  end
  o.shard_run = o.shard_run or shard_of(o)
  if o.tune then return cli.tune(o, op, out, err) end
  local runs, sizes = plan(o, op)
  local points = {}
  for i, ro in ipairs(runs) do points[i] = { opts = ro } end
  local each, finish = text_printer(op, o, out, runs, sizes)
  local results = execute(o, op, points, err, (sizes or type(o.pes) == "table") and each or nil)
  if not results then return cli.EXIT.ok end       -- a shard: its rows are in its file
  local pe_sweep = type(o.pes) == "table"
  if o.json then
    out:write(json_doc(op, results, pe_sweep))
  else
    finish(results)
  end
  if o.plot then
    local folder = folder_of(o.plot, false)       -- created with its parents, as --output's
    if not require("lfs").attributes(folder, "mode") then require("shmemlab.msprof").mkdir_p(folder) end
    local f = assert(io.open(o.plot, "w"))
    f:write(plot_svg(op, results, pe_sweep))
    f:close()
  end
  if o.output then
    local files = write_folders(o.output, results, pe_sweep)
    if not o.json then
      out:write("\noutput written under ", o.output, " (", table.concat(files, ", "), ")\n",
                cli.idle_note(op, results))
    end
  end
  for _, r in ipairs(results) do            -- the output is whole: then the run's error
    local e = runner.run_error(r)
    if e then return cli.EXIT.run, e end
  end
  for _, r in ipairs(results) do if runner.any_wrong(r) then return cli.EXIT.wrong end end
  return cli.EXIT.ok
end

------------------------------------------------------------------------------
-- --tune

-- the CLI option of each runner key (its long name and kind), from cli.OPTIONS
local function option_of()
  local by = {}
  for _, row in ipairs(cli.OPTIONS) do
    if type(row) == "table" then
      local long = row[1]:match("%-%-[%w-]+")
      by[row[3]] = { name = long, kind = row[4], flag = row[2] == nil }
    end
  end
  return by
end

-- a shell word (quoted when it needs it)
local function shell_word(w)
  w = tostring(w)
  if w:match("^[%w%-_./=,:+@%%]+$") then return w end
  return "'" .. w:gsub("'", "'\\''") .. "'"
end

-- the command line (argv, without the program) that runs op with runner options ro:
-- each option the user gave, in the help's order, then --knob for knobs without one
function cli.command_argv(op_arg, op, ro)
  local by, argv, done = option_of(), { op_arg }, {}
  local function add(...) for _, w in ipairs({ ... }) do argv[#argv + 1] = tostring(w) end end
  for _, row in ipairs(cli.OPTIONS) do
    local key = type(row) == "table" and row[3]
    local v = key and ro[key]
    local spec = key and by[key]
    if key and v ~= nil and not done[key] and key ~= "timing_only" and key ~= "json" then
      done[key] = true
      if key == "overrides" then
        local keys = {}
        for k in pairs(v) do keys[#keys + 1] = k end
        table.sort(keys)
        for _, k in ipairs(keys) do add("--set", k .. "=" .. tostring(v[k])) end
      elseif spec.flag then
        if v == true then add(spec.name) end
      elseif spec.kind == "shape" then
        add(spec.name, string.format("%d,%d", v[1], v[2] or 1))
      elseif spec.kind == "onoff" or spec.kind == "bool" then
        add(spec.name, v and "1" or "0")
      else
        add(spec.name, v)
      end
    end
  end
  for _, k in ipairs(op.tune.knobs) do
    if ro[k.name] ~= nil and not by[k.name] then add("--knob", k.name .. "=" .. tostring(ro[k.name])) end
  end
  return argv
end

-- the command of argv as one shell line
function cli.command_text(prog, argv)
  local words = { prog }
  for i, w in ipairs(argv) do words[i + 1] = shell_word(w) end
  return table.concat(words, " ")
end

-- the best point of a group re-run with data and checked: {wrong, kernel_us (printed),
-- equal (to the timing-only run's printed kernel_us), text} or {skipped = why}
local function data_check(op, g, best)
  local ro = {}
  for k, v in pairs(g.opts) do ro[k] = v end
  for k, v in pairs(best.knobs) do ro[k] = v end
  ro.timing_only, ro.verify, ro.baseline, ro.trace = nil, true, "none", false
  local ok, r = pcall(runner.run, op, ro, true)
  if not ok then
    if runner.kind(r) == "usage" then return { skipped = tostring(r) } end
    error(r, 0)
  end
  local k = metrics.fmt3(r.metrics.summary.latency_us)
  local t = metrics.fmt3(best.kernel_us)
  return { wrong = r.shmem.check.wrong, check = r.shmem.check, kernel_us = k, equal = k == t,
           timing_kernel_us = t }
end

-- the JSON of a group's search
local function tune_json(o, op, g, rows, best, chk)
  local json = require("shmemlab.json")
  local c = g.default_result.config          -- as the op resolved it (MoE: count)
  local list = json.array()
  for i, r in ipairs(rows) do
    list[i] = { rank = r.rank, knobs = r.knobs, kernel_us = tonumber(r.kernel_us),
                bound_us = tonumber(r.bound_us), efficiency_pct = tonumber(r.eff),
                ratio_pct = r.ratio ~= "-" and tonumber(r.ratio:sub(1, -2)) or nil,
                default = r.default or nil }
  end
  local argv = cli.command_argv(o.op, op, best.opts)
  return { pes = c.pes, count = c.count, dtype = c.dtype, soc = c.soc,
           search = g.exhaustive and "exhaustive" or "coordinate descent",
           points_run = #g.order, points_valid = #g.space, refused = g.refused, rows = list,
           best = { knobs = best.knobs, kernel_us = tonumber(metrics.fmt3(best.kernel_us)),
                    argv = argv, command = cli.command_text(o.prog or cli.PROG, argv) },
           data_check = chk.skipped and { skipped = chk.skipped }
             or { wrong = chk.wrong, kernel_us = tonumber(chk.kernel_us), equal = chk.equal } }
end

-- the text of a group's search: configuration, search line, table, best, its check
local function tune_text(op, g, doc)
  local tune = require("shmemlab.tune")
  local json = require("shmemlab.json")
  local table_text = tune.table(op, g)
  local best = doc.best
  local chk = doc.data_check
  local check_line
  if chk.skipped then
    check_line = string.format("check of the best, with data: not run (%s)\n", chk.skipped)
  else
    check_line = string.format("check of the best, with data: %d wrong elements; kernel_us %s "
      .. "(timing-only %s: %s)\n", chk.wrong, metrics.fmt3(chk.kernel_us),
      metrics.fmt3(best.kernel_us), chk.equal and "equal" or "DIFFERENT")
  end
  return runner.config_text(g.default_result.config, op) .. tune.search_text(g) .. table_text
    .. "best: " .. best.command .. "\n"
    .. "best (JSON): " .. json.encode({ op = op.name, pes = doc.pes, count = doc.count,
         dtype = doc.dtype, knobs = best.knobs, kernel_us = best.kernel_us,
         argv = best.argv }) .. "\n" .. check_line
end

-- --tune: search the op's space at each planned size and PE count; returns the exit status
function cli.tune(o, op, out, err)
  local tune = require("shmemlab.tune")
  tune.knobs(op)
  for _, opt in ipairs({ { "output", "--output" }, { "plot", "--plot" } }) do
    if o[opt[1]] then runner.usage("%s does not combine with --tune (run the best's command "
      .. "line with it)", opt[2]) end
  end
  local runs = plan(o, op)
  local groups = {}
  for i, ro in ipairs(runs) do
    groups[i] = tune.group(op, ro, o.tune_points)
    if o.shard_run or o.merged then groups[i].exhaustive = true end   -- shards: every point
  end
  local searched = tune.search(op, groups, function(pts) return execute(o, op, pts, err) end)
  if not searched then return cli.EXIT.ok end      -- a shard: its points are in its file
  local docs, status = {}, cli.EXIT.ok
  for i, g in ipairs(groups) do
    local rows = tune.rows(g)
    local best = rows[1].entry
    best.opts = {}
    for k, v in pairs(g.opts) do best.opts[k] = v end
    for k, v in pairs(best.knobs) do best.opts[k] = v end
    local chk = data_check(op, g, best)
    if chk.wrong and (chk.wrong > 0 or not chk.equal) then status = cli.EXIT.wrong end
    docs[i] = tune_json(o, op, g, rows, best, chk)
    if not o.json then out:write(i > 1 and "\n" or "", tune_text(op, g, docs[i])) end
    if out.flush then out:flush() end
  end
  if o.json then
    local json = require("shmemlab.json")
    out:write(json.encode({ version = lab.version, op = op.name, tune = docs }), "\n")
  end
  return status
end

-- the operator list
local function list(out)
  for _, name in ipairs(runner.list()) do
    local ok, op = pcall(runner.load_op, name)
    if ok then
      local has = {}
      for _, f in ipairs(runner.BASELINES) do     -- a mode of another family's folder: not listed
        if not runner.BASELINE_DIR[f] and runner.load_baseline(op, f) then has[#has + 1] = f end
      end
      local has_base = #has > 0 and "baseline " .. table.concat(has, ",") or "no baseline"
      out:write(string.format("%-16s %-15s %-25s %s\n", name, op.collective, has_base,
                              table.concat(op.dtypes, " ")))
    else
      out:write(string.format("%-16s (cannot load: %s)\n", name, tostring(op)))
    end
  end
end

-- the options of how a run is spread (they change no figure): a shard's, the workers'
local SPREAD = { ["--shard"] = true, ["--shards"] = true, ["-j"] = true, ["--jobs"] = true }

-- argv without the options that spread the run (--shard, --shards, -j): what every shard
-- of a run has alike, and what `merge` runs again
function cli.shard_argv(argv)
  local t, skip = {}, false
  for _, a in ipairs(argv or {}) do
    if skip then
      skip = false
    elseif SPREAD[a] then
      skip = true
    elseif not (a:match("^%-%-shards?=") or a:match("^%-%-jobs=") or a:match("^%-j=?%d")) then
      t[#t + 1] = a
    end
  end
  return t
end

-- `merge DIR [options]`: the shards under DIR joined into the output of the run that made
-- them (its command line, with options added here such as --json or --plot FILE)
function cli.merge(argv, out, err, prog)
  local dir = argv[2]
  if not dir or dir:match("^%-") then runner.usage("merge needs the folder of the shards: merge DIR") end
  local all = require("shmemlab.par").read_shards(dir)
  local again = {}
  for _, a in ipairs(all.argv) do again[#again + 1] = a end
  for i = 3, #argv do again[#again + 1] = argv[i] end
  local m, msg = cli.parse(again, prog)
  if not m then runner.usage("merge: %s", msg) end
  if m.shards or m.shard then runner.usage("merge: the shards' command line names a shard") end
  if m.output then runner.usage("merge: --output needs the machines of the runs (run without shards)") end
  m.merged, m.prog, m.argv = all, prog, all.argv
  return cli.run(m, out, err)
end

-- main(argv[, out, err, prog]) -> exit status (cli.EXIT); a usage error is one line on
-- stderr. prog is the command's name (cli.PROG, or "shmemlab" for the installed command).
function cli.main(argv, out, err, prog)
  out, err, prog = out or io.stdout, err or io.stderr, prog or cli.PROG
  local me = prog:match("%S+$")
  local hint = " (" .. prog .. " --help lists the options)\n"
  argv = argv or {}
  local o, msg
  if argv[1] ~= "merge" then
    o, msg = cli.parse(argv, prog)
    if not o then
      err:write(me, ": ", msg, hint)
      return cli.EXIT.usage
    end
    if o.help then out:write(cli.help(prog)) return cli.EXIT.ok end
    if o.list then list(out) return cli.EXIT.ok end
    o.prog, o.argv = prog, cli.shard_argv(argv)
  end
  local ok, status, why = pcall(function()
    if not o then return cli.merge(argv, out, err, prog) end
    return cli.run(o, out, err)
  end)
  if ok then
    if why then err:write(me, ": ", why, "\n") end
    return status
  end
  if runner.kind(status) == "usage" then
    err:write(me, ": ", status.message, hint)
    return cli.EXIT.usage
  end
  if runner.kind(status) == "run" and status.output and not (o and o.json) then
    out:write(status.output)                -- what the failed run could still report
  end
  err:write(me, ": ", tostring(status), "\n")
  return cli.EXIT.run
end

return cli
