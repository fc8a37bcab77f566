-- shmemlab.runner: one measured run of an operator and of its HCCL-style
-- baseline, as the CANN SHMEM performance guide prescribes: warm-up launches, measured
-- launches, the output check, metrics, the frame report and the verdict.
local lab = require("shmemlab")
local metrics = require("shmemlab.metrics")
local report = require("shmemlab.report")

local runner = {}

-- the folder the operators live in: SHMEMLAB_OPS, ops/ beside lua/ in a checkout,
-- shmemlab/ops beside this module when installed (make install, luarocks), else ./ops
local function ops_dir()
  local env = os.getenv("SHMEMLAB_OPS")
  if env and env ~= "" then return env end
  local src = debug.getinfo(1, "S").source
  local repo = src:match("^@(.*)/lua/shmemlab/[^/]*$") or (src:match("^@lua/shmemlab/") and ".")
  if repo then return repo .. "/ops" end
  local here = src:match("^@(.*)/shmemlab/[^/]*$")
  if here then return here .. "/shmemlab/ops" end
  return "./ops"
end
runner.ops_dir = ops_dir

-- is there a file at path?
local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

-- an operator by name (ops/<name>.lua), by family and name (ops/<family>/<name>.lua,
-- where no file of that path exists) or by path to the user's own file
function runner.load_op(spec)
  if type(spec) == "table" then return spec end
  local path = spec
  if not spec:find("%.lua$") and (not spec:find("[/\\]") or not exists(spec)) then
    path = ops_dir() .. "/" .. spec .. ".lua"
  end
  if not exists(path) then
    runner.usage("unknown operator '%s' (no %s; see --list)", spec, path)
  end
  local ok, op = pcall(dofile, path)
  if not ok then error(string.format("cannot load operator %s: %s", path, op), 0) end
  if type(op) ~= "table" or type(op.run) ~= "function" then
    runner.usage("%s does not return an operator (op.define{...})", path)
  end
  op.path = path
  return op
end

-- the baselines --baseline names: each a folder of ops/ holding operators named as
-- the ops they measure (hccl: HCCL's algorithms; deepep: DeepEP-Ascend's normal-mode
-- MoE kernels; mc2: CANN's MoeDistributeDispatch/Combine, the low-latency ones)
runner.BASELINES = { "hccl", "hccl-aiv", "hccl-sdma", "deepep", "mc2" }

-- the folder of ops/ a family's operators live in: HCCL's expansion modes share
-- ops/hccl/ (the operator reads c.baseline: doc/hccl.md)
runner.BASELINE_DIR = { ["hccl-aiv"] = "hccl", ["hccl-sdma"] = "hccl" }

-- MoE modes (--moe-mode) and the baseline each defaults to: the shipping kernels
runner.MOE_BASELINE = { normal = "deepep", ll = "mc2" }

-- the most tokens per rank that run in low-latency mode when --moe-mode is not given:
-- serving systems run LL for decode batches, normal mode above (doc/moe.md: MoE modes)
runner.LL_MAX_TOKENS = 256

-- the file of an operator's baseline of family (default "hccl"): op.baseline (a
-- name in ops/<family>/ or a path), else ops/<family>/<op.name>.lua, else (families
-- other than hccl) ops/<family>/<op.collective>.lua; and whether it exists
function runner.baseline_path(op, family)
  family = runner.BASELINE_DIR[family] or family or "hccl"
  local b = op.baseline or op.name
  if b:find("[/\\]") or b:find("%.lua$") then return b, exists(b) end
  local path = string.format("%s/%s/%s.lua", ops_dir(), family, b)
  if not exists(path) and family ~= "hccl" and op.collective then
    local alt = string.format("%s/%s/%s.lua", ops_dir(), family, op.collective)
    if exists(alt) then return alt, true end
  end
  return path, exists(path)
end

-- the baseline of family of an operator, or nil
function runner.load_baseline(op, family)
  local path, found = runner.baseline_path(op, family)
  if not found then return nil end
  return runner.load_op(path)
end

-- the baseline the header names: what will run (a family, "none") and, when
-- an op asks for one that does not exist, why none will
local function baseline_text(c, op)
  if c.baseline == "none" or type(op) ~= "table" then return c.baseline end
  local path, found = runner.baseline_path(op, c.baseline)
  local mode = c.moe_mode and string.format(" (moe mode %s)", c.moe_mode) or ""
  local b = found and c.profile and runner.load_op(path)
  local plan = b and b.plan_text and b.plan_text(c)      -- HCCL beyond one server
  if plan then mode = string.format("%s (%s)", mode, plan) end
  if found then return c.baseline .. mode end
  return string.format("none (no %s: name one with op.define{baseline = ...})", path)
end

-- names of the operators in ops/ (sorted)
function runner.list()
  local lfs = require("lfs")
  local names = {}
  for f in lfs.dir(ops_dir()) do
    local n = f:match("^(.-)%.lua$")
    if n then names[#names + 1] = n end
  end
  table.sort(names)
  return names
end

-- errors of a run, typed by kind (never told apart by their text):
-- "usage" a bad option, found before anything runs; "run" the run failed (a kernel
-- fault, a deadlock, an error in the operator's code); "refused" the operator cannot
-- run this configuration as its kernel is written (a plan the UB of a core cannot
-- hold), found at setup
local Error = { __tostring = function(e) return e.message end }
runner.Error = Error

-- an error object of kind with message
function runner.error_of(kind, message)
  return setmetatable({ kind = kind, message = message }, Error)
end

-- the kind of an error value ("usage", "run"), or nil for a plain error
function runner.kind(e)
  return getmetatable(e) == Error and e.kind or nil
end

-- raise a usage error (string.format arguments)
function runner.usage(fmt, ...)
  error(runner.error_of("usage", string.format(fmt, ...)), 0)
end

-- the PE counts a run may have (doc/cli.md)
runner.MIN_PES, runner.MAX_PES = 1, 1024

-- dtype names the engine accepts besides the ops' own
runner.DTYPE_ALIASES = { float = "fp32", half = "fp16", bfloat16 = "bf16" }

-- run configuration keys every operator may receive (an op's defaults add its own)
local KNOWN = {}
for k in ([[soc pes warmup iters prof_pe root ub_bytes baseline overrides dtype count shape
  block_dim sym_bytes check trace reduce mode algo src_pe dst_pe local_tokens hidden topk experts
  routing routes_file dispatch_dtype moe_mode seed sigma zipf_s flags timing_only verify
  combine mem_limit settle_ns chain_flow]]):gmatch("%S+") do
  KNOWN[k] = true
end

runner.suggest = lab.suggest

-- a usage error unless v is an integer in lo..hi
local function int_in(v, what, lo, hi)
  if math.type(v) ~= "integer" or v < lo or (hi and v > hi) then
    runner.usage("%s must be an integer %s, got %s", what,
                 hi and string.format("in %d..%d", lo, hi) or string.format(">= %d", lo),
                 tostring(v))
  end
end

-- a usage error unless v (when set) is one of the words of list
local function one_of(v, what, list)
  if v == nil then return end
  for w in list:gmatch("%S+") do if v == w then return end end
  runner.usage("%s must be one of %s, got '%s'", what, list:gsub(" ", ", "), tostring(v))
end

-- the profile's overrides checked: known keys, values of the profile's types
local function check_overrides(prof, overrides)
  for k, v in pairs(overrides) do
    if prof[k] == nil or k == "name" then
      runner.usage("unknown profile figure '%s'%s", tostring(k), runner.suggest(k, prof))
    end
    if type(v) ~= type(prof[k]) or (type(v) == "number" and not (v >= 0 and v < math.huge)) then
      runner.usage("profile figure %s needs a %s, got '%s'", k,
                   type(prof[k]) == "number" and "number >= 0" or type(prof[k]), tostring(v))
    end
    prof[k] = v
  end
end

-- the options an operator takes: the known keys and its defaults
local function check_keys(op, opts)
  local known = {}
  for k in pairs(KNOWN) do known[k] = true end
  for k in pairs(op.defaults or {}) do known[k] = true end
  for _, knob in ipairs(op.tune and op.tune.knobs or {}) do known[knob.name] = true end
  for k in pairs(opts) do
    if not known[k] then
      runner.usage("unknown option '%s' of operator %s%s", tostring(k), op.name,
                   runner.suggest(k, known))
    end
  end
end

-- what the engine (the profile's ranges) and an MoE op's own resolution refuse, as
-- usage errors: an error raised by these checks is an error of the options
local function check_resolved(op, c)
  local ok, m = pcall(lab.machine, { profile = c.profile, pes = 1, prof_pe = -1 })
  if not ok then runner.usage("--set: %s", tostring(m)) end
  m:close()
  if op.collective == "dispatch" or op.collective == "combine" then
    local copy = {}
    for k, v in pairs(c) do copy[k] = v end
    local moe = require("shmemlab.moe")
    local fine, e = pcall(function()
      local cfg = moe.config(copy)
      if op.collective == "dispatch" then moe.wire(copy, { hidden = cfg.hidden, esize = 1 }) end
    end)
    if not fine then runner.usage("%s", tostring(e)) end
  end
end

-- the first of op's tune constraints (op.define's tune) that the configuration c
-- refuses, or nil: its why (a constraint that raises an error refuses)
function runner.refused(op, c)
  for _, con in ipairs(op.tune and op.tune.constraints or {}) do
    local ok, fine = pcall(con.ok, c)
    if not (ok and fine) then return con.why end
  end
  return nil
end

-- the configuration's values checked before anything runs (usage errors)
local function check_config(op, c)
  int_in(c.pes, "--pes", runner.MIN_PES, runner.MAX_PES)
  if c.count ~= nil then int_in(c.count, "--count", 1) end
  if c.mem_limit ~= nil then int_in(c.mem_limit, "mem_limit", 0) end
  int_in(c.warmup, "--warmup", 0)
  int_in(c.iters, "--iters", 1)
  int_in(c.block_dim, "--block-dim", 1)
  int_in(c.ub_bytes, "--ub-bytes", 32, c.profile.ub_bytes)      -- one UB block .. a core's UB
  int_in(c.prof_pe, "--prof-pe", -1, c.pes - 1)
  for key, opt in pairs({ root = "--root", src_pe = "--src", dst_pe = "--dst" }) do
    if c[key] ~= nil then int_in(c[key], opt, 0, c.pes - 1) end
  end
  one_of(c.reduce, "--reduce", "sum max min")
  one_of(c.mode, "--mode", "put get")
  one_of(c.algo, "--algo", "flat hier")
  one_of(c.baseline, "--baseline", table.concat(runner.BASELINES, " ") .. " none")
  one_of(c.combine, "--average", "max mean min pe0")
  if c.verify ~= nil and type(c.verify) ~= "boolean" then
    runner.usage("--check (verify) must be a boolean, got '%s'", tostring(c.verify))
  end
  if c.chain_flow ~= nil and type(c.chain_flow) ~= "boolean" then
    runner.usage("--chain-flow (chain_flow) must be a boolean, got '%s'", tostring(c.chain_flow))
  end
  if c.check ~= nil and c.check ~= "none" then
    for w in tostring(c.check):gmatch("[^,%s]+") do
      if c.timing_only and (w == "racecheck" or w == "initcheck" or w == "all") then
        runner.usage("--tool %s keeps a shadow of every byte: it needs data (drop "
                     .. "--timing-only); memcheck and synccheck work without", w)
      end
      if not lab.check_modes[w] then
        runner.usage("--check must be memcheck, racecheck, synccheck, initcheck or all, got '%s'%s",
                     w, runner.suggest(w, lab.check_modes))
      end
    end
  end
  check_resolved(op, c)
  local why = runner.refused(op, c)
  if why then runner.usage("operator %s refuses this configuration: it needs %s", op.name, why) end
end

-- the MoE mode of a run and its baseline, once the options are checked: --moe-mode,
-- else "ll" at or under LL_MAX_TOKENS tokens per rank and "normal" above; the
-- baseline, unless given, the shipping kernels of that mode (hccl for other ops)
local function resolve_baseline(op, c)
  if op.collective ~= "dispatch" and op.collective ~= "combine" then
    if c.moe_mode ~= nil then
      runner.usage("--moe-mode applies to the MoE ops (dispatch, combine), not to %s",
                   tostring(op.collective))
    end
    c.baseline = c.baseline or "hccl"
    return
  end
  one_of(c.moe_mode, "--moe-mode", "normal ll")
  if c.moe_mode == nil then
    local copy = {}
    for k, v in pairs(c) do copy[k] = v end
    local tokens = require("shmemlab.moe").config(copy).tokens   -- checked by check_config
    c.moe_mode = tokens <= runner.LL_MAX_TOKENS and "ll" or "normal"
  end
  c.baseline = c.baseline or runner.MOE_BASELINE[c.moe_mode]
end

-- the run configuration: defaults < the op's defaults < the user's options;
-- a bad option is a usage error (runner.usage) raised before anything runs
function runner.config(op, opts)
  opts = opts or {}
  check_keys(op, opts)
  local c = {
    soc = "Ascend910B", pes = 8, warmup = 10, iters = 40, prof_pe = 0, root = 0,
    ub_bytes = 190 * 1024, overrides = {},
  }
  for k, v in pairs(op.defaults or {}) do c[k] = v end
  for k, v in pairs(opts) do c[k] = v end
  c.dtype = runner.DTYPE_ALIASES[c.dtype] or c.dtype or op.dtypes[1]
  local supported = false
  for _, d in ipairs(op.dtypes) do supported = supported or d == c.dtype end
  if not supported then
    runner.usage("operator %s does not support dtype %s (supported: %s)", op.name,
                 tostring(c.dtype), table.concat(op.dtypes, " "))
  end
  if c.shape then c.count = c.shape[1] * (c.shape[2] or 1) end
  if type(c.soc) ~= "string" or not pcall(require, "shmemlab.socs." .. c.soc) then
    runner.usage("unknown SoC '%s' (known: %s)%s", tostring(c.soc), table.concat(lab.socs, ", "),
                 runner.suggest(c.soc, (function(t) for _, n in ipairs(lab.socs) do t[n] = true end
                                          return t end)({})))
  end
  local prof = lab.soc(c.soc)
  check_overrides(prof, c.overrides)
  if c.settle_ns ~= nil then               -- --settle-ns: the profile's window, for this run
    int_in(c.settle_ns, "--settle-ns", 0, 1000 * 1000 * 1000)
    prof.settle_ns = c.settle_ns
  end
  c.cores = prof.aiv_cores
  c.block_dim = c.block_dim or 16
  if math.type(c.block_dim) == "integer" and c.block_dim > c.cores then
    c.block_dim_asked = c.block_dim
    c.block_dim = c.cores
  end
  c.sym_bytes = c.sym_bytes or prof.sym_heap_bytes // 2
  c.profile = prof
  check_config(op, c)
  resolve_baseline(op, c)
  if c.mem_limit ~= nil then runner.check_memory(op, c, c.mem_limit, "mem_limit")
  else runner.check_memory(op, c, runner.available_bytes()) end
  return c
end

-- the memory a run may use: SHMEMLAB_MEM_LIMIT (bytes; tests set it to spec a
-- refusal without allocating), else MemAvailable of /proc/meminfo; nil when unknown.
-- Returns the bytes and where they come from
function runner.available_bytes()
  local env = os.getenv("SHMEMLAB_MEM_LIMIT")
  if env and env ~= "" then
    local n = math.tointeger(tonumber(env))
    if n == nil or n < 0 then
      runner.usage("SHMEMLAB_MEM_LIMIT must be a number of bytes, got '%s'", env)
    end
    return n, "SHMEMLAB_MEM_LIMIT"
  end
  local f = io.open("/proc/meminfo", "r")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  local kb = text:match("MemAvailable:%s*(%d+)")
  return kb and math.tointeger(tonumber(kb)) * 1024 or nil, "MemAvailable"
end

-- host bytes of one AIV block besides its UB (its coroutine and k table, the
-- engine's block state, its events and instructions): measured in timing-only
-- runs, about 7 KiB (doc/scale.md: Memory checked up front)
runner.BLOCK_BYTES = 8192

-- host bytes per routed row (token, k) of an MoE op: the routing's Lua tables
runner.ROW_BYTES = 128

-- shards of --count elements a PE's buffers hold (input, output, reference,
-- staging) by collective, unless the op says (op.shards(c)); others 3
local SHARDS = {
  allgather = function(n) return n + 2 end, reduce_scatter = function(n) return n + 2 end,
  alltoall = function(n) return 3 * n end, allreduce = function() return 4 end,
}

-- the memory a run needs, estimated before anything is allocated:
-- {data =, timing_only =, fixed =, per_unit =, unit =, units =} where data =
-- fixed + per_unit * units (units of the size option unit: --count or --tokens).
-- Buffers: every PE's input, output and the reference (an allgather's output, a
-- reduce-scatter's input and an alltoall's hold pes shards; an MoE dispatch's receive buffer and
-- reference about topk rows per token), on the op's machine (what op.shards(c)
-- says, when the op says) and the baseline's (the collective's; both alive at
-- the end of a run); UB: every block's, as far as it stages (at
-- most a shard); each block's state. A timing-only run keeps the block state and
-- the routing alone
function runner.memory_need(op, c)
  local esize = lab.core.dtype_size(c.dtype)
  local machines = c.baseline ~= "none" and 2 or 1
  local blocks = c.pes * (c.block_dim + (machines == 2 and math.min(c.pes, c.cores) or 0))
  local fixed = blocks * runner.BLOCK_BYTES
  local per, units, unit, shard, base
  if op.collective == "dispatch" or op.collective == "combine" then
    local copy = {}
    for k, v in pairs(c) do copy[k] = v end
    local cfg = require("shmemlab.moe").config(copy)
    fixed = fixed + c.pes * cfg.tokens * cfg.topk * runner.ROW_BYTES
    per, units, unit = cfg.hidden * esize * (2 + 2 * cfg.topk), cfg.tokens, "--tokens"
    shard, base = cfg.tokens * cfg.hidden * esize, per
  else
    base = SHARDS[op.collective]
    base = (base and base(c.pes) or 3) * esize          -- the baseline's: the collective's
    per, units, unit = op.shards and op.shards(c) * esize or base, c.count or 0, "--count"
    shard = units * esize
  end
  local per_unit = c.pes * (per + (machines - 1) * base)
  local ub = blocks * math.min(c.ub_bytes, shard)     -- a block stages at most a shard
  return { data = fixed + ub + per_unit * units, timing_only = fixed, fixed = fixed + ub,
           per_unit = per_unit, unit = unit, units = units }
end

-- bytes as a short figure: 1.5 GiB
local function human(n)
  local units, i = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" }, 1
  while n >= 1024 and i < #units do n, i = n / 1024, i + 1 end
  return string.format(i == 1 and "%d %s" or "%.1f %s", n, units[i])
end

-- refuse, before anything is allocated, a run that needs more than avail bytes
-- (from where): a "usage" error whose field memory = {need =, available =,
-- timing_only =, max_units =, unit =} says what would fit; the message names it
function runner.check_memory(op, c, avail, from)
  if avail == nil then return end
  local n = runner.memory_need(op, c)
  local need = c.timing_only and n.timing_only or n.data
  if need <= avail then return end
  local fits = {}
  if not c.timing_only and n.timing_only <= avail then
    fits[#fits + 1] = string.format("--timing-only (about %d bytes)", n.timing_only)
  end
  local max_units = n.per_unit > 0 and (avail - n.fixed) // n.per_unit or 0
  if not c.timing_only and max_units >= 1 then
    fits[#fits + 1] = string.format("a smaller %s (at most %d)", n.unit, max_units)
  end
  fits[#fits + 1] = c.timing_only and "fewer --pes or a smaller --block-dim" or "fewer --pes"
  local e = runner.error_of("usage", string.format("%d PEs at %s %d need about %d bytes (%s) "
    .. "of memory%s, %d (%s) are available (%s): use %s", c.pes, n.unit:sub(3), n.units, need,
    human(need), c.timing_only and " in timing-only mode" or "", avail, human(avail),
    from or "MemAvailable", table.concat(fits, " or ")))
  e.memory = { need = need, available = avail, timing_only = n.timing_only, unit = n.unit,
               max_units = not c.timing_only and max_units >= 1 and max_units or nil }
  error(e, 0)
end

-- a fresh machine for c
local function machine(c)
  local o = { profile = c.profile, pes = c.pes, prof_pe = c.prof_pe, check = c.check,
              data = not c.timing_only, task_rows = 0,   -- every row of a run: --output
              chain_flow = c.chain_flow }
  return lab.machine(o)
end

-- one launch as the benches time it: the operator spec (runner.load_op) configured
-- with opts for a single run (no warm-up, one iteration, no baseline), and a fresh
-- machine for it with PE profiling off and machine_opts added (run_ahead, say).
-- Returns op, c and the machine; op.setup(m, c) and op.run(m, c, s) are the caller's
-- (it times them)
function runner.one_launch(spec, opts, machine_opts)
  local op = runner.load_op(spec)
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  o.warmup, o.iters, o.baseline = 0, 1, "none"
  local c = runner.config(op, o)
  local mo = { profile = c.profile, pes = c.pes, prof_pe = -1, data = not c.timing_only,
               chain_flow = c.chain_flow }
  for k, v in pairs(machine_opts or {}) do mo[k] = v end
  return op, c, lab.machine(mo)
end

-- per-PE statistics of the measured kernel times: mean per PE, max, min, skew
local function spread(per_pe)
  local mx, mn, sum = -math.huge, math.huge, 0
  for _, r in ipairs(per_pe) do
    mx = math.max(mx, r.kernel_us); mn = math.min(mn, r.kernel_us); sum = sum + r.kernel_us
  end
  local mean = sum / #per_pe
  return { max_us = mx, min_us = mn, mean_us = mean,
           skew_pct = mean > 0 and (mx - mn) / mean * 100 or 0 }
end

-- the fields describe must return, each with the check of its value
local DESCRIBE = {
  { "algorithm", "a string", function(v) return type(v) == "string" end },
  { "chunk_elems", "an integer >= 0", function(v) return math.type(v) == "integer" and v >= 0 end },
  { "ub_bytes", "an integer >= 0 (the UB bytes a block stages through)",
    function(v) return math.type(v) == "integer" and v >= 0 end },
  { "cores", "an integer >= 0", function(v) return math.type(v) == "integer" and v >= 0 end },
}

-- op.describe(c, s) checked: a table with every field of DESCRIBE, else an error
-- naming the op and the field (shmemlab.op's header)
function runner.describe(op, c, s)
  local d = op.describe(c, s)
  if type(d) ~= "table" then
    error(string.format("operator %s: describe must return a table {algorithm =, chunk_elems =, "
                        .. "ub_bytes =, cores =}, got %s", op.name, type(d)), 0)
  end
  for _, f in ipairs(DESCRIBE) do
    if not f[3](d[f[1]]) then
      error(string.format("operator %s: describe must return %s as %s, got %s", op.name, f[1],
                          f[2], tostring(d[f[1]])), 0)
    end
  end
  return d
end

-- warm up, measure and check one operator on a fresh machine. A run that fails
-- (a kernel fault, a runaway, a deadlock, an error in the op) raises a "run" error
-- that keeps what can still be reported: in a checked run the reports made before
-- the failure (e.reports, the sanitizer's summary text)
function runner.measure(op, c)
  local m = machine(c)
  local ok, r = pcall(runner.measure_on, m, op, c)
  if ok then return r end
  local e = runner.kind(r) and r or runner.error_of("run", tostring(r))
  if e.kind == "run" and c.check and c.check ~= "none" then
    local check = require("shmemlab.check")
    local fine, text = pcall(check.summary, m, op.title or op.name)
    if fine then e.reports = text end
  end
  m:close()
  error(e, 0)
end

-- runner.measure on the machine m
function runner.measure_on(m, op, c)
  local s = op.setup(m, c)
  for _ = 1, c.warmup do op.run(m, c, s) end
  m:reset_prof()
  local bytes0 = m:path_bytes()
  local sum_k, sum_e, launches = {}, 0, 0
  for pe = 1, c.pes do sum_k[pe] = 0 end
  for i = 1, c.iters do
    if c.trace and i == c.iters then m:trace(2000000) end   -- the last launch
    local t0 = m:now()
    local t = require("shmemlab.op").total(op.run(m, c, s), c.pes)
    for pe = 1, c.pes do sum_k[pe] = sum_k[pe] + t.kernel_us[pe] end
    sum_e = sum_e + (m:now() - t0)   -- end to end: launches, kernels and host copies
    launches = launches + t.launches
  end
  local per_pe = {}
  for pe = 1, c.pes do
    per_pe[pe] = { pe = pe - 1, kernel_us = sum_k[pe] / c.iters, e2e_us = sum_e / c.iters }
  end
  if op.active_pes then         -- ops that leave PEs idle (p2p) are judged on the others
    local keep, seen = {}, {}
    for _, pe in ipairs(op.active_pes(c)) do
      if not seen[pe] then seen[pe] = true; keep[#keep + 1] = per_pe[pe + 1] end
    end
    per_pe = keep
  end
  local bytes1, moved = m:path_bytes(), {}
  for k, v in pairs(bytes1) do moved[k] = (v - bytes0[k]) // c.iters end
  local trace
  if c.trace then trace = m:trace_records(true); m:trace(0) end
  local check = { wrong = 0, unchecked = c.timing_only and "timing-only"   -- no bytes to compare
                                      or c.verify == false and "--check 0"
                                      or op.unchecked and op.unchecked(c, s) or nil }
  if not check.unchecked then
    local wrong, at, pe, want, got = op.check(m, c, s)
    check = { wrong = wrong, index = at, pe = pe, expected = want, actual = got }
  end
  local sanitizer
  if c.check and c.check ~= "none" then
    local text, n, reports = require("shmemlab.check").summary(m, op.title or op.name)
    sanitizer = { text = text, errors = n, reports = reports }
  end
  return {
    sanitizer = sanitizer,
    op = op, machine = m, state = s, per_pe = per_pe, spread = spread(per_pe),
    e2e_us = sum_e / c.iters, launches = launches, path_bytes = moved,
    check = check,
    describe = runner.describe(op, c, s), frames = m:shadow_rows(), prof = m:get_prof(nil, false),
    open_frames = m:open_frames(),
    deepep = op.deepep and op.deepep(c, s) or nil,
    trace = trace, iter_launches = launches // c.iters, signal_us = c.profile.signal_ns / 1000,
  }
end

-- timeline events and flows of a measured run's traced launch (msprof.trace input): the
-- kernel slices of the PEs that ran, frames, MTE copies and signal writes (each on its
-- S pipe for the profile's signal_ns, then in flight) and an arrow from each write that
-- released a wait to what the waiter went on with (msprof.bind)
function runner.trace_events(res)
  local events, writes = {}, {}
  local m = res.machine
  local signal_us = res.signal_us                       -- the machine may be released
  for _, row in ipairs(res.per_pe) do                 -- the kernel slices
    local tasks = m:tasks(row.pe)
    for i = #tasks - res.iter_launches + 1, #tasks do
      local t = tasks[i]
      events[#events + 1] = { pe = row.pe, name = t.name, cat = "kernel", ts = t.start_us,
                              dur = t.stop_us - t.start_us, args = { type = t.type } }
    end
  end
  for _, r in ipairs(res.trace or {}) do
    if r.kind == "mte" then
      events[#events + 1] = { pe = r.pe, block = r.block, lane = r.pipe, cat = "mte",
        name = r.pipe .. " " .. r.path, ts = r.ts, dur = r.dur,
        args = { bytes = r.bytes, path = r.path, peer_pe = r.peer_pe } }
    elseif r.kind == "frame" then
      events[#events + 1] = { pe = r.pe, block = r.block, cat = "frame",
        name = lab.frames.names[r.frame] or ("frame " .. r.frame), ts = r.ts, dur = r.dur }
    elseif r.kind == "signal" then
      events[#events + 1] = { pe = r.pe, block = r.block, lane = "signal", cat = "signal",
        name = "signal to PE " .. r.peer_pe, ts = r.ts - signal_us, dur = signal_us,
        lands = r.ts + r.dur, args = { peer_pe = r.peer_pe, path = r.path, lands_us = r.ts + r.dur } }
    elseif r.kind == "wake" then
      writes[#writes + 1] = { id = #writes + 1, name = "signal", cat = "signal",
        from = { pe = r.pe, block = r.block, ts = r.ts },
        to = { pe = r.peer_pe, block = r.peer_block, ts = r.ts + r.dur } }
    end
  end
  return events, (require("shmemlab.msprof").bind(events, writes))
end

-- the peak bandwidth an operator is judged against on this machine
local function peak_of(op, c)
  return metrics.peak{ soc = c.profile, op = op.collective, n_pes = c.pes,
                       link_GBps = c.profile.hccs_GBps, link_type = "HCCS",
                       pes_per_server = require("shmemlab.bound").domain_pes(c.profile),
                       topology = c.profile.hccs_switch and "hccs_switch" or "hccs_mesh" }
end

-- metrics of a measured run (with an optional measured baseline) against the op's bound
local function evaluate(op, c, res, bound, base)
  local payload = metrics.payload_bytes(op.collective, op.payload(c))
  local mt = metrics.compute{
    op = op.collective, n_pes = c.pes, payload_bytes = payload, per_pe = res.per_pe,
    peak = peak_of(op, c), bound = bound, combine = c.combine,
    baseline = base and { name = base.op.title or base.op.name, per_pe = base.per_pe } or nil,
  }
  if res.deepep then metrics.deepep(mt, res.deepep, base and base.deepep) end  -- MoE ops
  return mt
end

-- the reason of a frame an operator leaves unused on a machine of one PE
runner.ONE_PE_REASON = "one PE: no peer to move data to or to wait for"

-- the text naming the frames a run's blocks left open (m:open_frames rows), or nil
function runner.open_frames_text(rows)
  if rows == nil or #rows == 0 then return nil end
  local out, names = {}, lab.frames.names
  for i, r in ipairs(rows) do
    if i > 4 then
      out[#out + 1] = string.format("and %d more", #rows - 4)
      break
    end
    out[#out + 1] = string.format("frame %d (%s) on PE %d block %d, prof_start at %s (%d launch%s)",
      r.frame, names[r.frame] or "no name", r.pe, r.block, r.site or "an unknown line",
      r.launches, r.launches == 1 and "" or "es")
  end
  return "left open (a prof_start with no prof_end when the kernel returned; its time is "
    .. "not counted): " .. table.concat(out, "; ")
end

-- the frame report of a measured run {rows, text}; a frame the op does not
-- use and gives no reason for is an error naming the op, and a frame its blocks
-- left open is named (runner.open_frames_text): a note under the report, or, when
-- the report cannot be made, the report's text and an error (open = true) the CLI
-- prints after the rest of the output (exit 3)
function runner.frames(res, op, c)
  local open = runner.open_frames_text(res.open_frames)
  if open then
    local ok, fr = pcall(runner.frames_closed, res, op, c)
    if ok then
      fr.text = fr.text .. "frames " .. open .. "\n"
      return fr
    end
    local msg = string.format("operator %s: frames %s", op.name, open)
    return { rows = {}, text = "(no frame report: " .. msg .. ")\n", error = msg, open = true }
  end
  return runner.frames_closed(res, op, c)
end

-- the frame report of a measured run whose blocks closed every frame
function runner.frames_closed(res, op, c)
  local e2e = res.e2e_us / math.max(1, res.launches // c.iters)
  local reasons = op.unused
  if c.pes == 1 then                 -- a collective of one is a copy: no peer, no wait
    reasons = {}
    for id in pairs(lab.frames.names) do reasons[id] = runner.ONE_PE_REASON end
    for id, why in pairs(op.unused) do reasons[id] = why end
  end
  local ok, rows, text = pcall(report.frame_report, {
    cycle2us = c.profile.cycle2us, e2e_us = e2e, launches = res.launches,
    rows = res.frames, reasons = reasons, frames = lab.frames })
  if not ok then
    error(string.format("operator %s: %s (add it to the op's `unused` with the reason)",
                        op.name, tostring(rows):gsub("^.-: ", "")), 0)
  end
  return { rows = rows, text = text, e2e_us = e2e }
end

-- the op's frame report beside its baseline's (report.frame_compare), when both were made
local function frame_compare(op, frames, base)
  if not (base and base.frame_report) or frames.error or base.frame_report.error then return nil end
  local rows, text = report.frame_compare(
    { name = "shmemlab " .. op.name, rows = frames.rows, e2e_us = frames.e2e_us },
    { name = base.op.title or base.op.name, rows = base.frame_report.rows,
      e2e_us = base.frame_report.e2e_us })
  return { rows = rows, text = text }
end

-- call f(...); an error that is not typed becomes a "run" error (the run failed)
local function guarded(f, ...)
  local ok, a, b = pcall(f, ...)
  if ok then return a, b end
  if runner.kind(a) then error(a, 0) end
  error(runner.error_of("run", tostring(a)), 0)
end

-- the frame report of a measured run; in a checked run with errors the reports
-- explain a frame left open (a deadlock salvaged): the report is replaced by a note
local function frames_of(res, op, c)
  if not (res.sanitizer and res.sanitizer.errors > 0) then
    local fr = guarded(runner.frames, res, op, c)
    if fr.open then res.frame_error = fr.error end
    return fr
  end
  local ok, fr = pcall(runner.frames, res, op, c)
  if ok then return fr end
  res.frame_error = tostring(fr)
  return { rows = {}, text = "(no frame report: the checked run reported errors; "
    .. tostring(fr):gsub("%s*%(add it.*$", "") .. ")\n", error = tostring(fr) }
end

-- close a measured run's machine: its engine memory is freed at once; what the result
-- keeps (task rows, checked-run reports, frames, profile) stays readable, m:tasks and
-- check.format read the facade's state. Idempotent.
function runner.release(res)
  if res and res.machine then res.machine:close() end
  return res
end

-- run an operator (name, path or table) with options; measures the baseline
-- too unless opts.baseline == "none". A bad option raises a "usage" error before
-- anything runs; a failed run (kernel fault, deadlock, op error) a "run" error.
-- release: close each machine as soon as it is measured (runner.release), so the
-- op's machine is gone before the baseline's is built (a sweep's runs)
function runner.run(spec, opts, release)
  local op = guarded(runner.load_op, spec)
  local c = runner.config(op, opts)
  local ok, res = pcall(guarded, runner.measure, op, c)
  if not ok then             -- the output that can still be made: the configuration, reports
    if runner.kind(res) == "run" then
      res.output = runner.config_text(c, op) .. (res.reports and res.reports .. "\n" or "")
    end
    error(res, 0)
  end
  if release then runner.release(res) end
  local bound = require("shmemlab.bound").of(op.collective, c)   -- the baseline's too
  local base
  if c.baseline ~= "none" then
    local bop = runner.load_baseline(op, c.baseline)
    if bop then
      base = guarded(runner.measure, bop, c)
      if release then runner.release(base) end
      base.metrics = evaluate(bop, c, base, bound)
    end
  end
  local mt = evaluate(op, c, res, bound, base)
  local frames = frames_of(res, op, c)
  if base then base.frame_report = frames_of(base, base.op, c) end
  local compare = frame_compare(op, frames, base)
  local record = report.make_record({ op_name = op.name, dtype = c.dtype,
    shape = c.shape and string.format("M=%d, N=%d", c.shape[1], c.shape[2] or 1)
            or string.format("count=%d", c.count) },
    mt.summary)
  return { op = op, config = c, shmem = res, baseline = base, metrics = mt, bound = bound,
           record = record, frames = frames, frame_compare = compare }
end

-- a short number
local function f3(x) return metrics.fmt3(x) end

-- the effective configuration, printed before results; pes_text (a PE sweep's counts)
-- in place of c.pes
function runner.config_text(c, op, pes_text)
  return string.format("# shmemlab %s | op %s (%s) | %s, %s PEs (%d per server) | dtype %s | "
    .. "count %d per PE | block_dim %d%s | ub %d B | warmup %d, iters %d | baseline %s | "
    .. "prof PE %s%s\n", lab.version, op.name, op.path or "table", c.soc, pes_text or c.pes,
    c.profile.pes_per_server, c.dtype, c.count, c.block_dim,
    c.block_dim_asked and string.format(" (asked %d; the SoC has %d cores)", c.block_dim_asked,
                                        c.cores) or "",
    c.ub_bytes, c.warmup, c.iters, baseline_text(c, op), tostring(c.prof_pe),
    c.timing_only and " | timing-only (no data)" or "")
end

-- the #wrong cell of a check: the count, or N/A when not checked (--check 0, as nccl-tests;
-- timing-only)
function runner.wrong_cell(ch)
  return ch.unchecked and "N/A" or tostring(ch.wrong)
end

-- the check line of a measured run
function runner.check_text(name, ch)
  if ch.unchecked then return string.format("check %s: not checked (%s)\n", name, ch.unchecked) end
  if ch.wrong == 0 then return string.format("check %s: 0 wrong elements\n", name) end
  return string.format("check %s: %d wrong elements; first at index %d on PE %d: "
    .. "expected %s, got %s\n", name, ch.wrong, ch.index, ch.pe, tostring(ch.expected),
    tostring(ch.actual))
end

-- the per-PE spread and what ran, launches per measured iteration of iters (and,
-- for MoE ops, the routing's token counts)
local function run_text(name, res, iters, routing)
  local d, sp = res.describe, res.spread
  local text = string.format("%s: algorithm: %s; chunk %s elements, UB %s B, %s cores per PE; "
    .. "kernel per PE max %s us, min %s us, skew %s%%; %d launches per measured iteration\n",
    name, d.algorithm, tostring(d.chunk_elems), tostring(d.ub_bytes), tostring(d.cores),
    f3(sp.max_us), f3(sp.min_us), f3(sp.skew_pct), res.launches // iters)
  if routing and d.routing then text = text .. d.routing:gsub("\n?$", "\n") end
  return text
end

-- the whole text report of runner.run's result
function runner.text(r)
  local out = {}
  local c = r.config
  out[#out + 1] = runner.config_text(c, r.op)
  for _, res in ipairs({ r.shmem, r.baseline }) do       -- a checked run's reports first
    if res.sanitizer then out[#out + 1] = res.sanitizer.text .. "\n" end
  end
  out[#out + 1] = run_text("shmemlab " .. r.op.name, r.shmem, c.iters, true)
  out[#out + 1] = runner.check_text("shmemlab " .. r.op.name, r.shmem.check)
  if r.baseline then
    out[#out + 1] = run_text(r.baseline.op.title or r.baseline.op.name, r.baseline, c.iters)
    out[#out + 1] = runner.check_text(r.baseline.op.title or r.baseline.op.name, r.baseline.check)
  end
  out[#out + 1] = "\n" .. report.record(r.record)
  out[#out + 1] = "\n" .. (report.perf_lines(r.metrics.per_pe)) .. report.perf_summary(r.record)
  out[#out + 1] = "\n" .. report.formula_text(r.metrics.summary, r.shmem.path_bytes)
  if r.shmem.prof.pe >= 0 and #r.shmem.prof.rows > 0 then
    out[#out + 1] = string.format("\ncycle profiling of PE %d, measured launches "
      .. "(aclshmemx_get_prof(nullptr, true)):\n", r.shmem.prof.pe)
      .. require("shmemlab.prof").format(r.shmem.prof)
  end
  out[#out + 1] = "\nframes (all PEs, measured launches):\n" .. r.frames.text
  if r.baseline and r.baseline.frame_report then
    out[#out + 1] = "\nframes of " .. (r.baseline.op.title or r.baseline.op.name) .. ":\n"
      .. r.baseline.frame_report.text
  end
  if r.frame_compare then
    out[#out + 1] = "\nframes, op against baseline:\n" .. r.frame_compare.text
  end
  local v = r.metrics.summary.verdict
  out[#out + 1] = string.format("\nverdict: %s (%s)\n", v.text, v.detail or v.rule)
  return table.concat(out)
end

-- the error of a run whose output is whole but whose op is wrong in a way that
-- fails the run (a frame left open with no frame report: runner.frames), or nil
function runner.run_error(r)
  for _, fr in ipairs({ r.frames, r.baseline and r.baseline.frame_report or false }) do
    if fr and fr.open then return fr.error end
  end
  return nil
end

-- true when any element of the op or its baseline is wrong, or a checked run
-- reported errors
function runner.any_wrong(r)
  for _, res in ipairs({ r.shmem, r.baseline }) do
    if res.check.wrong > 0 or (res.sanitizer and res.sanitizer.errors > 0) then return true end
  end
  return false
end

return runner
