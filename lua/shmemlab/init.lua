-- shmemlab: an operator lab for SHMEM-style communication operators on an
-- emulated cluster of Ascend-class NPUs. This is the facade: require("shmemlab").
-- The engine is C (shmemlab.core); this file builds machines from SoC profiles
-- and keeps the per-launch task records that msprof-style output is made of.

local core = require("shmemlab.core")

local lab = {
  frames = require("shmemlab.frames"),
  core = core,
  version = "0.1.0",
  SIGNAL_SET = core.SIGNAL_SET,
  SIGNAL_ADD = core.SIGNAL_ADD,
  events = core.events,
  SIZE_MAX = core.SIZE_MAX,   -- what wait_until_any / test_any return for "none" (C's SIZE_MAX)
  TEAM_WORLD = core.TEAM_WORLD, TEAM_INVALID = core.TEAM_INVALID,
  EVENT = core.EVENT,     -- hard event numbers: k:set_flag(lab.EVENT.MTE3_S, 0)
}
for _, name in ipairs({ "CMP_EQ", "CMP_NE", "CMP_GT", "CMP_GE", "CMP_LT", "CMP_LE" }) do
  lab[name] = core[name]
end

lab.socs = { "Ascend910B", "Ascend910_93", "Ascend950" }

-- a fresh copy of a SoC profile (users may edit it freely)
function lab.soc(name)
  if type(name) ~= "string" then
    error("bad argument #1 to 'soc' (SoC name expected, got " .. type(name) .. ")", 2)
  end
  local ok, prof = pcall(require, "shmemlab.socs." .. name)
  if not ok or type(prof) ~= "table" then
    error("bad argument #1 to 'soc' (unknown SoC '" .. name .. "'; known: "
          .. table.concat(lab.socs, ", ") .. ")", 2)
  end
  local copy = {}
  for k, v in pairs(prof) do copy[k] = v end
  return copy
end

-- edit distance of two strings (case counts as one edit)
local function distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or (a:sub(i, i):lower() == b:sub(j, j):lower()
                                                       and 0.5 or 1)
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

-- "; did you mean X or Y?" for the closest names of a set (keys of set), or ""
function lab.suggest(name, set)
  local best, list = math.huge, {}
  for k in pairs(set) do
    if type(k) == "string" then
      local d = distance(tostring(name), k)
      if d < best then best, list = d, { k } elseif d == best then list[#list + 1] = k end
    end
  end
  if best > #tostring(name) // 4 + 1 or #list == 0 then return "" end
  table.sort(list)
  return "; did you mean " .. table.concat(list, " or ", 1, math.min(#list, 3)) .. "?"
end

-- options of lab.machine that are not profile figures
local machine_opts = { soc = true, pes = true, prof_pe = true, profile = true, check = true,
                       data = true, task_rows = true, data_op_engine_type = true,
                       run_ahead = true, chain_flow = true }

-- task rows a machine keeps per PE unless told (lab.machine{task_rows =}; 0 = all)
lab.TASK_ROWS = 256

-- data_op_engine_type_t (shmem_common_types.h): the engines an init names,
-- as bits; lab.DATA_OP_MTE ... lab.DATA_OP_UDMA as ACLSHMEM_DATA_OP_*
lab.DATA_OP = { MTE = 0x01, SDMA = 0x02, ROCE = 0x04, UDMA = 0x08 }
for name, bit in pairs(lab.DATA_OP) do lab["DATA_OP_" .. name] = bit end

local DOP_HELP = "a nonzero OR of MTE=1 SDMA=2 ROCE=4 UDMA=8, e.g. \"MTE|ROCE\""

-- the bits of one name ("ROCE", "roce", "ACLSHMEM_DATA_OP_ROCE") or number
local function dop_bit(w)
  if math.type(w) == "integer" then return w end
  local b = type(w) == "string" and lab.DATA_OP[w:upper():gsub("^ACLSHMEM_DATA_OP_", "")]
  if not b then
    error("bad argument #1 to 'machine' (unknown data_op_engine_type '" .. tostring(w)
          .. "'; " .. DOP_HELP .. ")", 4)
  end
  return b
end

-- the bits of option data_op_engine_type (nil: MTE, and ROCE when the PEs
-- span servers), checked as the library's check_attr does, and against the
-- machine: the engines must exist, and PEs in other servers need ROCE
local function data_op_bits(v, p, pes)
  local domain = p.supernode_dies > 0 and p.supernode_dies or p.pes_per_server
  local spans = pes > domain
  if v == nil then return lab.DATA_OP.MTE | (spans and lab.DATA_OP.ROCE or 0) end
  local bits = 0
  if type(v) == "string" then
    for w in v:gmatch("[^|,%s]+") do bits = bits | dop_bit(w) end
  elseif type(v) == "table" then
    for _, w in ipairs(v) do bits = bits | dop_bit(w) end
  elseif math.type(v) == "integer" then bits = v
  else
    error("bad argument #1 to 'machine' (data_op_engine_type must be a string, a list or "
          .. "an integer)", 3)
  end
  if bits <= 0 or bits & ~0x0f ~= 0 then
    error("bad argument #1 to 'machine' (data_op_engine_type " .. tostring(bits)
          .. " is not valid: " .. DOP_HELP .. ")", 3)
  end
  local function need(bit, ok, why)
    if bits & bit ~= 0 and not ok then
      error("bad argument #1 to 'machine' (data_op_engine_type: " .. why .. ")", 4)
    end
  end
  need(lab.DATA_OP.UDMA, p.udma_GBps > 0, "UDMA, but this SoC has no UDMA engine "
       .. "(udma_GBps = 0; Ascend950 has one)")
  need(lab.DATA_OP.SDMA, p.sdma_GBps > 0, "SDMA, but this SoC has no SDMA engine "
       .. "(sdma_GBps = 0)")
  if spans and bits & lab.DATA_OP.ROCE == 0 then
    error(string.format("bad argument #1 to 'machine' (data_op_engine_type has no ROCE, but "
          .. "the %d PEs span %d servers of %d: only RoCE reaches across)", pes,
          (pes + domain - 1) // domain, domain), 3)
  end
  return bits
end

-- check modes and their engine bits (mssanitizer / compute-sanitizer tools)
lab.check_modes = { memcheck = 1, racecheck = 2, synccheck = 4, initcheck = 8, all = 15 }

-- the engine bits of a check option: "memcheck", "memcheck,initcheck", a list, "all"
local function check_bits(v)
  if v == nil or v == false or v == "none" then return 0 end
  local names = {}
  if type(v) == "table" then names = v
  elseif type(v) == "string" then for w in v:gmatch("[^,%s]+") do names[#names + 1] = w end
  else error("bad argument #1 to 'machine' (check must be a string or a list)", 3) end
  local bits = 0
  for _, w in ipairs(names) do
    local b = lab.check_modes[w]
    if not b then
      error("bad argument #1 to 'machine' (unknown check mode '" .. tostring(w)
            .. "'; memcheck racecheck synccheck initcheck all)", 3)
    end
    bits = bits | b
  end
  return bits
end

-- the profiled PE from the option or SHMEM_CYCLE_PROF_PE (option wins)
local function prof_pe_of(opt, pes)
  local v, from = opt, "option prof_pe"
  if v == nil then
    v = os.getenv("SHMEM_CYCLE_PROF_PE")
    from = "SHMEM_CYCLE_PROF_PE"
    if v == nil or v == "" then return -1 end
  end
  if v == false or v == -1 then return -1 end
  local n = math.tointeger(tonumber(v))
  if n == nil or n < 0 or n >= pes then
    error(string.format("%s=%s is not a PE number of this machine (0..%d)",
                        from, tostring(v), pes - 1), 3)
  end
  return n
end

-- the check modes that keep a shadow of every byte: refused without data
local SHADOWED = lab.check_modes.racecheck | lab.check_modes.initcheck

-- timing_only of option data (true: buffers hold bytes; false: timing-only)
local function timing_only(data, bits)
  if data == nil or data == true then return false end
  if data ~= false then error("bad argument #1 to 'machine' (data must be a boolean)", 3) end
  if bits & SHADOWED ~= 0 then
    error("bad argument #1 to 'machine' (racecheck and initcheck keep a shadow of every "
          .. "byte and need data = true; memcheck and synccheck work with data = false)", 3)
  end
  return true
end

-- the task_rows option: rows kept per PE (0 = all)
local function task_rows(n)
  if n == nil then return lab.TASK_ROWS end
  if math.type(n) ~= "integer" or n < 0 then
    error("bad argument #1 to 'machine' (task_rows must be an integer >= 0, got "
          .. tostring(n) .. ")", 3)
  end
  return n
end

-- a boolean option of lab.machine: v, or default when v is nil
local function bool_opt(name, v, default)
  if v == nil then return default end
  if type(v) ~= "boolean" then
    error("bad argument #1 to 'machine' (" .. name .. " must be a boolean, got " .. type(v) .. ")", 3)
  end
  return v
end

-- every key lab.machine takes with profile prof
local function machine_keys(prof)
  local keys = {}
  for k in pairs(prof) do keys[k] = true end
  for k in pairs(machine_opts) do keys[k] = true end
  return keys
end

-- lab.machine{soc = "Ascend910B", pes = 8, <profile field> = value, ...}
function lab.machine(opts)
  opts = opts or {}
  if type(opts) ~= "table" then
    error("bad argument #1 to 'machine' (table expected, got " .. type(opts) .. ")", 2)
  end
  local prof = opts.profile or lab.soc(opts.soc or "Ascend910B")
  local p = {}
  for k, v in pairs(prof) do p[k] = v end
  for k, v in pairs(opts) do
    if not machine_opts[k] then
      if prof[k] == nil then
        error("bad argument #1 to 'machine' (unknown option '" .. tostring(k) .. "'"
              .. lab.suggest(k, machine_keys(prof)) .. ")", 2)
      end
      if type(v) ~= type(prof[k]) then
        error(string.format("bad argument #1 to 'machine' (option '%s' must be a %s)",
                            k, type(prof[k])), 2)
      end
      p[k] = v
    end
  end
  local pes = opts.pes or p.pes_per_server
  if math.type(pes) ~= "integer" or pes < 1 then
    error("bad argument #1 to 'machine' (pes must be a positive integer)", 2)
  end
  p.pes = pes
  p.prof_pe = prof_pe_of(opts.prof_pe, pes)
  p.check = check_bits(opts.check)
  p.timing_only = timing_only(opts.data, p.check)
  -- run_ahead: a block runs ahead through primitives that only queue to its own
  -- pipes (false: it yields to every block due before it, more wake-ups, the same times)
  p.run_ahead = bool_opt("run_ahead", opts.run_ahead, true)
  -- chain_flow: a pipelined chain whose one leg sets the pace is one flow (doc/chain.md);
  -- on in every timing-only machine (it times as the chunked calls to the picosecond)
  p.chain_flow = bool_opt("chain_flow", opts.chain_flow, p.timing_only)
  p.data_op_engine_type = data_op_bits(opts.data_op_engine_type, p, pes)
  local ok, m = pcall(core.new, p)
  if not ok then error((tostring(m):gsub("^bad argument #1 to 'new'", "bad argument #1 to 'machine'")), 2) end
  local st = m:state()
  st.soc = p.name
  st.profile = p
  st.tasks = {}
  st.task_id = 0
  st.task_rows = task_rows(opts.task_rows)
  st.check = p.check
  st.timing_only = p.timing_only
  return m
end

local M = core.machine_methods
-- m:launch and m:memcpy (C) record their msprof task rows in m:state().tasks

-- m:tasks(pe): the task rows of one PE in launch order, each {name, type,
-- stream_id, task_id, start_us, stop_us}: the last task_rows of them
-- (lab.machine{task_rows = N}, lab.TASK_ROWS by default; 0 keeps every row).
-- The store (state.tasks[pe], core/lshmemlab_machine.c) keeps a row as 6
-- values in a row, in that order, at [0] how many rows it was given and at
-- [-1] the task_rows it is laid for; with N it is a ring of N rows (row r
-- goes over row r - N), so a machine looped over thousands of launches keeps
-- a bounded heap. A task_rows changed since (m:state()) lays it again at its
-- next row; until then it bounds the rows returned
local TASK_W = 6
function M.tasks(m, pe)
  local st = m:state()
  local flat, rows, want = st.tasks[pe] or {}, {}, st.task_rows
  local n, laid = flat[0] or 0, flat[-1] or 0
  local held = (laid > 0 and n > laid) and laid or n
  if math.type(want) == "integer" and want > 0 and want < held then held = want end
  for r = n - held + 1, n do
    local i = (laid > 0 and (r - 1) % laid or r - 1) * TASK_W
    rows[#rows + 1] = { name = flat[i + 1], type = flat[i + 2], stream_id = flat[i + 3],
                        task_id = flat[i + 4], start_us = flat[i + 5], stop_us = flat[i + 6] }
  end
  return rows
end

-- m:open_frames(): the frames blocks left open when their kernel returned (a
-- prof_start with no prof_end), by PE, block and frame, one row per PE, block,
-- frame and prof_start line: {pe, block, frame, depth (frames open), site
-- ("file:line" of the prof_start, nil when unknown), launches (how many ended so)};
-- at most 64 rows (later ones are counted in the rows they repeat, or dropped)
function M.open_frames(m)
  local rows, out = m:state().open_frames or {}, {}
  for i, r in ipairs(rows) do out[i] = r end
  table.sort(out, function(a, b)
    if a.pe ~= b.pe then return a.pe < b.pe end
    if a.block ~= b.block then return a.block < b.block end
    if a.frame ~= b.frame then return a.frame < b.frame end
    return (a.site or "") < (b.site or "")
  end)
  return out
end

-- m:clear_tasks(): forget the task rows (their ids start again at 1)
function M.clear_tasks(m)
  local st = m:state()
  st.tasks = {}
  st.task_id = 0
end

-- Host-initiated calls on a stream (include/host/data_plane/shmem_host_so.h,
-- shmem_host_p2p_sync.h, shmem_host_rma.h): the library runs each as a small
-- kernel on the calling PE's stream, so each is a launch of one block on
-- every PE (its launch cost and task row included). Every PE's host makes the
-- call; pe is the target PE, or a function of the calling PE returning it
-- (nil: that PE's host does not call).
local function on_stream(m, fname, argno, pe, body)
  local n = m:params().pes
  if type(pe) ~= "function" and (math.type(pe) ~= "integer" or pe < 0 or pe >= n) then
    error(string.format("bad argument #%d to '%s' (PE %s out of range 0..%d)",
                        argno, fname, tostring(pe), n - 1), 3)
  end
  local target = type(pe) == "function" and pe or function() return pe end
  return m:launch({ name = "aclshmemx_" .. fname, kernel = function(k)
    local p = target(k.pe)
    if p ~= nil then body(k, p) end
  end }, 1)
end

-- m:signal_op_on_stream(sig, value, op, pe): aclshmemx_signal_op_on_stream
function M.signal_op_on_stream(m, sig, value, op, pe)
  return on_stream(m, "signal_op_on_stream", 4, pe, function(k, p) k:signal_op(sig, value, op, p) end)
end

-- m:putmem_signal(dst, src, n, sig, value, op, pe): aclshmemx_putmem_signal,
-- the put, a quiet, then the signal; m:putmem_signal_nbi the same with a fence
function M.putmem_signal(m, dst, src, n, sig, value, op, pe)
  return on_stream(m, "putmem_signal", 7, pe, function(k, p)
    k:put_signal(dst, src, n, sig, value, op, p)
  end)
end
function M.putmem_signal_nbi(m, dst, src, n, sig, value, op, pe)
  return on_stream(m, "putmem_signal_nbi", 7, pe, function(k, p)
    k:put_signal_nbi(dst, src, n, sig, value, op, p)
  end)
end

-- m:putmem_on_stream(dst, src, n, pe) / m:getmem_on_stream: aclshmemx_*mem_on_stream
function M.putmem_on_stream(m, dst, src, n, pe)
  return on_stream(m, "putmem_on_stream", 4, pe, function(k, p) k:putmem(dst, src, n, p) end)
end
function M.getmem_on_stream(m, dst, src, n, pe)
  return on_stream(m, "getmem_on_stream", 4, pe, function(k, p) k:getmem(dst, src, n, p) end)
end

-- m:signal_wait_until_on_stream(sig, cmp, value): every PE's stream waits
-- until its own copy of sig compares true (a wait no one satisfies is the
-- launch's deadlock error, as the stream would hang)
function M.signal_wait_until_on_stream(m, sig, cmp, value)
  return m:launch({ name = "aclshmemx_signal_wait_until_on_stream", kernel = function(k)
    k:signal_wait_until(sig, cmp, value)
  end }, 1)
end

-- m:timing_only(): true when the machine's buffers hold no bytes (data = false)
function M.timing_only(m) return m:state().timing_only end

-- m:soc(): name of the SoC profile; m:profile(): the figures in force
function M.soc(m) return m:state().soc end
function M.profile(m) return m:params() end

-- m:get_prof(out, verbose): aclshmemx_get_prof. verbose prints the table of
-- the profiled PE; out (a table) receives {pe =, cycle2us =, rows = {...}}
function M.get_prof(m, out, verbose)
  local data = out or {}
  data.pe = m:prof_pe()
  data.cycle2us = m:params().cycle2us
  data.rows = m:prof_rows()
  if verbose then
    io.write(require("shmemlab.prof").format(data))
  end
  return data
end

return lab
