-- shmemlab.msprof -- msprof-like output (CANN SHMEM performance guide section 2;
-- doc/metrics.md) and Chrome traces.
--
--   msprof.write(root, run_id, timestamp, tasks_by_pe)
--       -> <root>/PROF_<run_id>_<pe>/mindstudio_profiler_output/task_time_<timestamp>.csv
--   msprof.write_cases(root, cases)          -> <root>/results.csv (the tiling table)
--   msprof.statistics(root [, opts])         -> the data_statistic.py step, <root>/result.csv
--   msprof.trace(events, flows)              -> Chrome trace table (pid = PE, tid = block)
--   msprof.check_trace(t), msprof.write_trace(path, t)
-- CSV helpers: msprof.parse_csv(text), msprof.read_csv(path) -> {header=, rows=}.

local lfs = require("lfs")
local json = require("shmemlab.json")

local M = {}

M.TASK_COLUMNS = { "Device_id", "kernel_name", "kernel_type", "stream_id", "task_id",
  "task_time(us)", "task_start(us)", "task_stop(us)" }
-- op_summary_*.csv's columns for kernel rows: msprof's header for a single operator without
-- PMU metrics (--aic-metrics off), in its column order. Newer msprof (CANN 8.x) writes
-- `Mix Block Dim` after `Block Dim` (the vector blocks of a Mix operator, N/A otherwise) and
-- `Context ID` after `Output Formats` (the FFTS+ context, N/A otherwise); the PMU columns,
-- when collected, follow `Context ID`. Sources: the "op_summary (Operator Details)" field
-- table of the CANN profiling guide
-- (https://www.hiascend.com/document/detail/en/mindstudio/700/TITools/Profiling/atlasprofiling_16_0067.html),
-- and the op_summary header CANN's msprof smoke tests expect ("... Task Wait Time(us),
-- Block Dim, Mix Block Dim, HF32 Eligible, Input Shapes, ..., Output Formats, Context ID,
-- aicore_time(us), ..."), which torch_npu's kernel_details.csv keeps under its own names.
M.OP_SUMMARY_COLUMNS = { "Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type",
  "OP State", "Task Type", "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)",
  "Block Dim", "Mix Block Dim", "HF32 Eligible", "Input Shapes", "Input Data Types",
  "Input Formats", "Output Shapes", "Output Data Types", "Output Formats", "Context ID" }
-- the kernel_type (task_time) and Task Type (op_summary) msprof writes for an engine task
-- type: a vector kernel is AI_VECTOR_CORE; others (MIX_AIV, MEMCPY_ASYNC) as they are
M.KERNEL_TYPE = { AIV = "AI_VECTOR_CORE" }
-- task types that are not kernels (no op_summary row)
M.NOT_KERNEL = { MEMCPY_ASYNC = true }
M.OUTPUT_DIR = "mindstudio_profiler_output"
M.WARMUP = 10   -- WARM_UP_TIMES of data_statistic.py
M.ITERS = 40    -- PERF_TEST_CYCLE_TIMES
M.KERNEL_TID = 1000   -- Chrome-trace thread of kernel-level slices (block == nil)
M.TRACE_EPS_US = 1e-6 -- overlap tolerance of check_trace (1 ps)

------------------------------------------------------------------------------------------
-- files and folders

local function mkdir_p(path)
  local acc = path:sub(1, 1) == "/" and "/" or ""
  for part in path:gmatch("[^/]+") do
    acc = acc .. part
    local mode = lfs.attributes(acc, "mode")
    if mode == nil then
      local ok, err = lfs.mkdir(acc)
      if not ok and lfs.attributes(acc, "mode") ~= "directory" then
        error("msprof: cannot create folder '" .. acc .. "': " .. tostring(err), 0)
      end
    elseif mode ~= "directory" then
      error("msprof: '" .. acc .. "' exists and is not a folder", 0)
    end
    acc = acc .. "/"
  end
end
M.mkdir_p = mkdir_p

local function list_dir(path)
  local names = {}
  for name in lfs.dir(path) do
    if name ~= "." and name ~= ".." then names[#names + 1] = name end
  end
  table.sort(names)
  return names
end

local function write_file(path, text)
  local f, err = io.open(path, "wb")
  if not f then error("msprof: cannot write '" .. path .. "': " .. tostring(err), 0) end
  f:write(text)
  f:close()
end

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then error("msprof: cannot read '" .. path .. "': " .. tostring(err), 0) end
  local s = f:read("a")
  f:close()
  return s
end

------------------------------------------------------------------------------------------
-- CSV

-- msprof.parse_csv(text [, where]) -> {header = {names}, rows = {{cells}, ...}}
-- RFC 4180: quoted fields (with "" for a quote, commas and newlines inside), CRLF or LF,
-- a UTF-8 BOM, blank lines skipped. Cells are strings.
function M.parse_csv(text, where)
  where = where or "csv"
  if text:sub(1, 3) == "\239\187\191" then text = text:sub(4) end
  local records, row = {}, {}
  local pos, n = 1, #text
  while pos <= n do
    local field
    if text:sub(pos, pos) == '"' then
      local buf = {}
      pos = pos + 1
      while true do
        local q = text:find('"', pos, true)
        if not q then error(where .. ": unterminated quoted field in record " .. (#records + 1), 0) end
        buf[#buf + 1] = text:sub(pos, q - 1)
        if text:sub(q + 1, q + 1) == '"' then
          buf[#buf + 1] = '"'
          pos = q + 2
        else
          pos = q + 1
          break
        end
      end
      field = table.concat(buf)
    else
      local s = text:find("[,\r\n]", pos)
      if s then field, pos = text:sub(pos, s - 1), s
      else field, pos = text:sub(pos), n + 1 end
    end
    row[#row + 1] = field
    local d = text:sub(pos, pos)
    if d == "," then
      pos = pos + 1
      if pos > n then row[#row + 1] = "" end
    elseif d == "\r" or d == "\n" or d == "" then
      pos = pos + ((d == "\r" and text:sub(pos + 1, pos + 1) == "\n") and 2 or 1)
      if not (#row == 1 and row[1] == "") then records[#records + 1] = row end
      row = {}
    else
      error(string.format("%s: unexpected '%s' after a quoted field in record %d", where, d,
        #records + 1), 0)
    end
  end
  if #row > 0 and not (#row == 1 and row[1] == "") then records[#records + 1] = row end
  if #records == 0 then error(where .. ": empty CSV (no header)", 0) end
  local header = table.remove(records, 1)
  for i, h in ipairs(header) do header[i] = h:match("^%s*(.-)%s*$") end
  return { header = header, rows = records }
end

function M.read_csv(path)
  return M.parse_csv(read_file(path), path)
end

local function csv_cell(v)
  local s = tostring(v)
  if s:find('[,"\r\n]') or s:match("^%s") or s:match("%s$") then
    s = '"' .. s:gsub('"', '""') .. '"'
  end
  return s
end

local function csv_line(cells)
  local out = {}
  for i, c in ipairs(cells) do out[i] = csv_cell(c) end
  return table.concat(out, ",")
end

local function column(t, name, where)
  for i, h in ipairs(t.header) do if h == name then return i end end
  error(string.format("%s: no column '%s' (header: %s)", where, name, table.concat(t.header, ",")), 0)
end

------------------------------------------------------------------------------------------
-- PROF_* output

local function id_text(v, what, fname)
  if math.type(v) == "integer" then return v end
  if type(v) == "string" and v:match("^[%w%-]+$") then return v end
  error(string.format("bad argument to '%s' (%s must be an integer or a name of letters, digits, '-')",
    fname, what), 3)
end

-- the op_summary CSV lines of one PE's tasks: a row per kernel (not MEMCPY_ASYNC), Task Wait
-- Time = its start - the previous kernel's end (0 for the first); no shapes (N/A); Mix Block
-- Dim the task's mix_block_dim (N/A: the lab's kernels are not Mix operators unless a task
-- says so); Context ID N/A (no FFTS+ contexts)
local function op_summary_lines(pe, tasks)
  local lines, prev = { table.concat(M.OP_SUMMARY_COLUMNS, ",") }, nil
  for i, t in ipairs(tasks) do
    if not M.NOT_KERNEL[t.type] then
      local wait = prev and math.max(0, t.start_us - prev) or 0
      lines[#lines + 1] = csv_line({ pe, "N/A", t.task_id or (i - 1), t.stream_id or 0, t.name,
        t.name, "N/A", M.KERNEL_TYPE[t.type] or t.type, string.format("%.3f", t.start_us),
        string.format("%.3f", t.stop_us - t.start_us), string.format("%.3f", wait),
        t.block_dim or "N/A", t.mix_block_dim or "N/A", "NO", "N/A", "N/A", "N/A", "N/A", "N/A",
        "N/A", "N/A" })
      prev = t.stop_us
    end
  end
  return lines
end

-- msprof.write(root, run_id, timestamp, tasks_by_pe) -> list of the task_time CSV paths (by
-- PE); op_summary_<timestamp>.csv (its kernel rows) is written beside each.
-- tasks_by_pe[pe] = {{name=, type="AIV"|"MIX_AIV"|"MEMCPY_ASYNC"|..., stream_id=, task_id=,
--   start_us=, stop_us=, block_dim=}, ...} in launch order; pe is an integer key (0 allowed).
-- Folder PROF_<run_id>_<pe> (a number run_id printed as %06d); task_time(us) = stop - start;
-- times with 3 decimals; Device_id = pe; kernel_type as msprof writes it (M.KERNEL_TYPE).
function M.write(root, run_id, timestamp, tasks_by_pe)
  if type(root) ~= "string" or root == "" then
    error("bad argument #1 to 'write' (folder name expected)", 2)
  end
  run_id = id_text(run_id, "run_id", "write")
  timestamp = id_text(timestamp, "timestamp", "write")
  if type(tasks_by_pe) ~= "table" then
    error("bad argument #4 to 'write' (table of task lists by PE expected)", 2)
  end
  local pes = {}
  for pe in pairs(tasks_by_pe) do
    if math.type(pe) ~= "integer" or pe < 0 then
      error("bad argument #4 to 'write' (keys must be PE numbers >= 0, got " .. tostring(pe) .. ")", 2)
    end
    pes[#pes + 1] = pe
  end
  table.sort(pes)
  local run = math.type(run_id) == "integer" and string.format("%06d", run_id) or run_id
  local paths = {}
  for _, pe in ipairs(pes) do
    local lines = { table.concat(M.TASK_COLUMNS, ",") }
    for i, t in ipairs(tasks_by_pe[pe]) do
      if type(t.name) ~= "string" or type(t.type) ~= "string" or type(t.start_us) ~= "number"
        or type(t.stop_us) ~= "number" or t.stop_us < t.start_us then
        error(string.format("bad argument #4 to 'write' (PE %d task %d needs name, type and "
          .. "start_us <= stop_us)", pe, i), 2)
      end
      lines[#lines + 1] = csv_line({ pe, t.name, M.KERNEL_TYPE[t.type] or t.type, t.stream_id or 0,
        t.task_id or (i - 1),
        string.format("%.3f", t.stop_us - t.start_us), string.format("%.3f", t.start_us),
        string.format("%.3f", t.stop_us) })
    end
    local dir = string.format("%s/PROF_%s_%d/%s", root, run, pe, M.OUTPUT_DIR)
    mkdir_p(dir)
    local path = string.format("%s/task_time_%s.csv", dir, timestamp)
    write_file(path, table.concat(lines, "\n") .. "\n")
    write_file(string.format("%s/op_summary_%s.csv", dir, timestamp),
               table.concat(op_summary_lines(pe, tasks_by_pe[pe]), "\n") .. "\n")
    paths[#paths + 1] = path
  end
  return paths
end

-- msprof.write_cases(root, cases) -> path of <root>/results.csv
-- cases = {header = {"DataSize", "Blocks", ...}, rows = {{1024, 8}, ...}}
function M.write_cases(root, cases)
  if type(cases) ~= "table" or type(cases.header) ~= "table" or type(cases.rows) ~= "table" then
    error("bad argument #2 to 'write_cases' (table {header=, rows=} expected)", 2)
  end
  mkdir_p(root)
  local lines = { csv_line(cases.header) }
  for _, r in ipairs(cases.rows) do lines[#lines + 1] = csv_line(r) end
  local path = root .. "/results.csv"
  write_file(path, table.concat(lines, "\n") .. "\n")
  return path
end

local function is_kernel(kernel_type)
  return kernel_type:find("CORE", 1, true) ~= nil or kernel_type:find("AIV", 1, true) ~= nil
end

-- The steps of msprof.statistics (below): each raises its errors at level 3, i.e. at
-- the line that called msprof.statistics.

-- validation: warmup, iters and the case table (opts.cases or <root>/results.csv)
local function stat_args(root, opts)
  if type(root) ~= "string" then error("bad argument #1 to 'statistics' (folder name expected)", 3) end
  local warmup, iters = opts.warmup or M.WARMUP, opts.iters or M.ITERS
  if opts.kernel ~= nil and type(opts.kernel) ~= "function" then
    error("bad argument #2 to 'statistics' (opts.kernel must be a function)", 3)
  end
  if math.type(warmup) ~= "integer" or warmup < 0 or math.type(iters) ~= "integer" or iters < 1 then
    error("bad argument #2 to 'statistics' (warmup must be an integer >= 0 and iters >= 1)", 3)
  end
  if lfs.attributes(root, "mode") ~= "directory" then
    error("statistics: '" .. root .. "' is not a folder", 3)
  end
  local cases = opts.cases
  if cases == nil then
    local p = root .. "/results.csv"
    if lfs.attributes(p, "mode") ~= "file" then
      error("statistics: no results.csv in '" .. root .. "' and no opts.cases", 3)
    end
    cases = M.read_csv(p)
  elseif type(cases) ~= "table" or type(cases.header) ~= "table" or type(cases.rows) ~= "table" then
    error("bad argument #2 to 'statistics' (opts.cases must be {header=, rows=})", 3)
  end
  if #cases.rows == 0 then error("statistics: the case table of '" .. root .. "' has no rows", 3) end
  return warmup, iters, cases
end

-- discovery: the PROF_* folders under root, sorted by name
local function prof_folders(root)
  local folders = {}
  for _, name in ipairs(list_dir(root)) do
    if name:match("^PROF_") and lfs.attributes(root .. "/" .. name, "mode") == "directory" then
      folders[#folders + 1] = name
    end
  end
  if #folders == 0 then error("statistics: no PROF_* folder in '" .. root .. "'", 3) end
  return folders
end

-- discovery: the first task_time*.csv (by name) of a folder's profiler output
local function task_time_file(root, folder)
  local out_dir = root .. "/" .. folder .. "/" .. M.OUTPUT_DIR
  if lfs.attributes(out_dir, "mode") == "directory" then
    for _, name in ipairs(list_dir(out_dir)) do
      if name:match("^task_time.*%.csv$") and lfs.attributes(out_dir .. "/" .. name, "mode") == "file" then
        return out_dir .. "/" .. name
      end
    end
  end
  error(string.format("statistics: %s has no %s/task_time*.csv", folder, M.OUTPUT_DIR), 3)
end

-- parsing: task_time(us) of the kernel rows of a file (keep(kernel_type) true: by default
-- is_kernel, kernel_type contains CORE or AIV)
local function kernel_times(file, folder, keep)
  local ok, t = pcall(M.read_csv, file)
  if not ok then error("statistics: " .. folder .. ": " .. tostring(t), 3) end
  local ok2, ci, ti = pcall(function()
    return column(t, "kernel_type", folder), column(t, "task_time(us)", folder)
  end)
  if not ok2 then error("statistics: " .. tostring(ci), 3) end
  local times = {}
  for r, row in ipairs(t.rows) do
    if keep(row[ci] or "") then
      local v = tonumber(row[ti])
      if not v then
        error(string.format("statistics: %s: row %d has task_time(us) '%s', not a number", folder, r,
          tostring(row[ti])), 3)
      end
      times[#times + 1] = v
    end
  end
  return times
end

-- averaging: the mean of each case's measured rows of one folder, and rows per case
local function case_means(times, n_cases, warmup, iters, folder)
  local per_case = #times // n_cases
  if per_case < warmup + iters then
    error(string.format("statistics: %s has %d kernel rows for %d case(s): %d per case, fewer than "
      .. "warmup %d + iters %d", folder, #times, n_cases, per_case, warmup, iters), 3)
  end
  local means = {}
  for i = 0, n_cases - 1 do
    local first = i * per_case + warmup + 1
    local s = 0
    for k = first, first + iters - 1 do s = s + times[k] end
    means[i + 1] = s / iters
  end
  return means, per_case
end

-- writing: the case table plus Time(us) with 3 decimals
local function write_result(path, cases, means)
  local header = {}
  for i, h in ipairs(cases.header) do header[i] = h end
  header[#header + 1] = "Time(us)"
  local lines = { csv_line(header) }
  for i, row in ipairs(cases.rows) do
    local cells = {}
    for j = 1, #cases.header do cells[j] = row[j] or "" end
    cells[#cells + 1] = string.format("%.3f", means[i])
    lines[#lines + 1] = csv_line(cells)
  end
  write_file(path, table.concat(lines, "\n") .. "\n")
end

-- msprof.statistics(root [, opts]) -> means, info
-- The CANN SHMEM performance guide's data_statistic.py: every PROF_* folder under
-- root (sorted by name); in its mindstudio_profiler_output the first task_time*.csv
-- by name; rows whose kernel_type
-- contains CORE or AIV; rows_per_case = kernel rows // n_cases; case i (0-based) averages
-- task_time(us) over kernel rows [i*rows_per_case + warmup + 1, ... + iters]; the means of
-- all folders are averaged. The cases (tiling table) come from opts.cases = {header=, rows=}
-- or <root>/results.csv; <root>/result.csv (or opts.result_path) gets the same columns plus
-- Time(us) with 3 decimals, unless opts.write == false.
-- opts.kernel(kernel_type) -> true for a kernel row replaces the CORE-or-AIV filter (the
-- filters of other scripts: hicann/shmem's data_statistic.py keeps VEC, the guide's CORE).
-- opts = {warmup = 10, iters = 40, cases = nil, result_path = nil, write = true, kernel = nil}
-- means[i] = mean time of case i (1-based); info = {folders=, files=, per_folder = {{folder=,
--   file=, kernel_rows=, rows_per_case=, means=}}, n_cases=, warmup=, iters=, result_csv=}
function M.statistics(root, opts)
  opts = opts or {}
  local warmup, iters, cases = stat_args(root, opts)
  local n_cases = #cases.rows
  local folders = prof_folders(root)
  local info = { folders = folders, files = {}, per_folder = {}, n_cases = n_cases,
    warmup = warmup, iters = iters }
  local sums = {}
  for i = 1, n_cases do sums[i] = 0 end
  for _, folder in ipairs(folders) do
    local file = task_time_file(root, folder)
    info.files[#info.files + 1] = file
    local times = kernel_times(file, folder, opts.kernel or is_kernel)
    local means, per_case = case_means(times, n_cases, warmup, iters, folder)
    for i = 1, n_cases do sums[i] = sums[i] + means[i] end
    info.per_folder[#info.per_folder + 1] = { folder = folder, file = file, kernel_rows = #times,
      rows_per_case = per_case, means = means }
  end
  local means = {}
  for i = 1, n_cases do means[i] = sums[i] / #folders end
  if opts.write ~= false then
    info.result_csv = opts.result_path or (root .. "/result.csv")
    write_result(info.result_csv, cases, means)
  end
  return means, info
end

------------------------------------------------------------------------------------------
-- Chrome trace

local function finite(v) return type(v) == "number" and v == v and v > -math.huge and v < math.huge end

M.LANE_TID = 2000     -- MTE lanes: 2000 + 2 * block (+1 for MTE3)
M.SIGNAL_TID = 4000   -- signal writes: 4000 + block

-- the thread (tid, name) of a block's code (lane nil) or of one of its lanes: "MTE2",
-- "MTE3" (a pipe's copies) or "signal" (its signal writes)
local function track_of(block, fname, what, lane)
  if block == nil or block == "kernel" then return M.KERNEL_TID, "kernel" end
  if math.type(block) ~= "integer" or block < 0 or block >= M.KERNEL_TID then
    error(string.format("bad argument to '%s' (%s: block must be an integer in [0, %d) or nil)",
      fname, what, M.KERNEL_TID), 3)
  end
  if lane == nil then return block, "block " .. block end
  if lane == "signal" then return M.SIGNAL_TID + block, "block " .. block .. " signal" end
  return M.LANE_TID + 2 * block + (lane == "MTE3" and 1 or 0), "block " .. block .. " " .. lane
end

-- the "s"/"f" events of trace's flows; use(pid, tid, name) names their threads
local function trace_flows(flows, use)
  local flow_events = {}
  for i, f in ipairs(flows) do
    local what = "flows[" .. i .. "]"
    if f.id == nil or type(f.from) ~= "table" or type(f.to) ~= "table" then
      error("bad argument #2 to 'trace' (" .. what .. " needs id, from and to)", 3)
    end
    for _, side in ipairs({ "from", "to" }) do
      local p = f[side]
      if math.type(p.pe) ~= "integer" or p.pe < 0 or not finite(p.ts) then
        error("bad argument #2 to 'trace' (" .. what .. "." .. side .. " needs pe and ts)", 3)
      end
    end
    local ft, fname = track_of(f.from.block, "trace", what .. ".from", f.from.lane)
    local tt, tname = track_of(f.to.block, "trace", what .. ".to", f.to.lane)
    use(f.from.pe, ft, fname)
    use(f.to.pe, tt, tname)
    local name, cat = f.name or "flow", f.cat or "flow"
    flow_events[#flow_events + 1] = { name = name, cat = cat, ph = "s", id = f.id, pid = f.from.pe,
      tid = ft, ts = f.from.ts }
    flow_events[#flow_events + 1] = { name = name, cat = cat, ph = "f", bp = "e", id = f.id,
      pid = f.to.pe, tid = tt, ts = f.to.ts }
  end
  return flow_events
end

-- msprof.trace(events [, flows]) -> {traceEvents = {...}, displayTimeUnit = "ns"}
-- events = {{pe=, block= (nil: kernel-level), name=, cat=, ts= us, dur= us, args={...}}, ...}
-- flows = {{id=, name=, cat=, from = {pe=, block=, ts=}, to = {pe=, block=, ts=}}, ...}
-- Process pid = PE ("PE <n>"), thread tid = block ("block <b>"), kernel-level slices on
-- tid KERNEL_TID ("kernel"), a lane of a block (event.lane, flow end .lane: "MTE2", "MTE3",
-- "signal") on its own thread; "M" metadata first, then "X" slices sorted by (ts, longest
-- first, pid, tid, input order), then the "s"/"f" flow pairs (an end's bp, "e" by default:
-- msprof.bind places them so that they bind).

function M.trace(events, flows)
  if type(events) ~= "table" then error("bad argument #1 to 'trace' (list of events expected)", 2) end
  if flows ~= nil and type(flows) ~= "table" then
    error("bad argument #2 to 'trace' (list of flows expected)", 2)
  end
  local threads = {}   -- pid -> {tid -> name}
  local function use(pid, tid, tname)
    threads[pid] = threads[pid] or {}
    threads[pid][tid] = tname
  end
  local slices = {}
  for i, e in ipairs(events) do
    local what = "events[" .. i .. "]"
    if math.type(e.pe) ~= "integer" or e.pe < 0 then
      error("bad argument #1 to 'trace' (" .. what .. ".pe must be an integer >= 0)", 2)
    end
    if type(e.name) ~= "string" or not finite(e.ts) or not finite(e.dur) then
      error("bad argument #1 to 'trace' (" .. what .. " needs name, ts and dur)", 2)
    end
    local tid, tname = track_of(e.block, "trace", what, e.lane)
    use(e.pe, tid, tname)
    slices[#slices + 1] = { i = i, ev = { name = e.name, cat = e.cat or "shmemlab", ph = "X",
      ts = e.ts, dur = e.dur, pid = e.pe, tid = tid, args = e.args } }
  end
  table.sort(slices, function(a, b)
    local x, y = a.ev, b.ev
    if x.ts ~= y.ts then return x.ts < y.ts end
    if x.dur ~= y.dur then return x.dur > y.dur end
    if x.pid ~= y.pid then return x.pid < y.pid end
    if x.tid ~= y.tid then return x.tid < y.tid end
    return a.i < b.i
  end)
  local flow_events = trace_flows(flows or {}, use)

  local list = json.array()
  local pids = {}
  for pid in pairs(threads) do pids[#pids + 1] = pid end
  table.sort(pids)
  for _, pid in ipairs(pids) do
    list[#list + 1] = { name = "process_name", ph = "M", pid = pid, args = { name = "PE " .. pid } }
    list[#list + 1] = { name = "process_sort_index", ph = "M", pid = pid, args = { sort_index = pid } }
    local tids = {}
    for tid in pairs(threads[pid]) do tids[#tids + 1] = tid end
    table.sort(tids)
    for _, tid in ipairs(tids) do
      list[#list + 1] = { name = "thread_name", ph = "M", pid = pid, tid = tid,
        args = { name = threads[pid][tid] } }
      list[#list + 1] = { name = "thread_sort_index", ph = "M", pid = pid, tid = tid,
        args = { sort_index = tid } }
    end
  end
  for _, s in ipairs(slices) do list[#list + 1] = s.ev end
  for _, f in ipairs(flow_events) do list[#list + 1] = f end
  return { traceEvents = list, displayTimeUnit = "ns" }
end

-- the slices of events by "pe/block" (lanes included), each {ts=, stop=, lane=, lands=}
-- by start; lands: when the slice's write lands (event.lands, else its end)
local function slices_by_block(events)
  local by = {}
  for _, e in ipairs(events) do
    if e.block ~= nil and e.dur > 0 then
      local k = e.pe .. "/" .. e.block
      by[k] = by[k] or {}
      table.insert(by[k], { ts = e.ts, stop = e.ts + e.dur, lane = e.lane,
                            lands = e.lands or e.ts + e.dur })
    end
  end
  for _, list in pairs(by) do table.sort(list, function(a, b) return a.ts < b.ts end) end
  return by
end

-- the start of a flow: the slice of the write that landed at p.ts on its block's lanes
-- (one that lands then, else the last signal or MTE3 write started by then; the write's
-- start), else the block's code slice enclosing p.ts; nil when there is none
local function bind_start(slices, p)
  local eps = M.TRACE_EPS_US
  local last
  for _, s in ipairs(slices) do
    if s.lane ~= nil and math.abs(s.lands - p.ts) <= eps then
      return { pe = p.pe, block = p.block, lane = s.lane, ts = s.ts }
    end
    if (s.lane == "signal" or s.lane == "MTE3") and s.ts <= p.ts + eps then last = s end
  end
  if last then return { pe = p.pe, block = p.block, lane = last.lane, ts = last.ts } end
  for i = #slices, 1, -1 do
    local s = slices[i]
    if s.lane == nil and s.ts <= p.ts and p.ts < s.stop - eps then
      return { pe = p.pe, block = p.block, ts = p.ts }
    end
  end
end

-- the end of a flow leaving at t0: the start of the waiter's first code slice at or after
-- p.ts (what the wake released), else inside its slice ending at p.ts (the wait), FLOW_LEAD_US
-- before its end; nil when there is none
M.FLOW_LEAD_US = 0.001
local function bind_end(slices, p, t0)
  local eps = M.TRACE_EPS_US
  for _, s in ipairs(slices) do
    if s.lane == nil and s.ts >= p.ts - eps then return { pe = p.pe, block = p.block, ts = s.ts } end
  end
  for _, s in ipairs(slices) do
    local ts = math.max(s.ts, t0, p.ts - M.FLOW_LEAD_US)
    if s.lane == nil and math.abs(s.stop - p.ts) <= eps and ts < s.stop - eps then
      return { pe = p.pe, block = p.block, ts = ts }
    end
  end
end

-- msprof.bind(events, writes) -> flows, unbound: the arrows of writes that released waits,
-- placed so that Chrome and Perfetto bind them as meant (Trace Event Format: an "s" binds
-- to the slice enclosing it on its thread, an "f" with bp "e" to the slice enclosing it).
-- writes = {{id=, name=, cat=, from = {pe=, block=, ts = when the write landed}, to = {pe=,
-- block=, ts = when the waiter woke}}, ...}; events as msprof.trace takes them (a write's
-- slice may say when it lands: event.lands, e.g. a signal's S-pipe issue). A flow
-- leaves from the start of the write's slice (bind_start) and arrives at the start of the
-- slice the wake released (bind_end); a write with no slice to bind is in unbound.
function M.bind(events, writes)
  local by = slices_by_block(events)
  local flows, unbound = {}, {}
  for _, w in ipairs(writes) do
    local from = bind_start(by[w.from.pe .. "/" .. w.from.block] or {}, w.from)
    local to = from and bind_end(by[w.to.pe .. "/" .. w.to.block] or {}, w.to, from.ts)
    if to then
      flows[#flows + 1] = { id = w.id, name = w.name, cat = w.cat, from = from, to = to }
    else
      unbound[#unbound + 1] = w
    end
  end
  return flows, unbound
end

local function slice_text(e)
  return string.format("'%s' [%.3f, %.3f]", tostring(e.name), e.ts, e.ts + e.dur)
end

-- check_trace's flow checks: both ends, "f" not before "s", each end bound to a slice
local function check_flows(flows, tracks)
  local eps = M.TRACE_EPS_US
  local fkeys = {}
  for k in pairs(flows) do fkeys[#fkeys + 1] = k end
  table.sort(fkeys)
  for _, k in ipairs(fkeys) do
    local s, f = flows[k].s, flows[k].f
    if not s or not f then
      error(string.format("check_trace: flow %s has no '%s' event", k, s and "f" or "s"), 3)
    end
    if f.ts < s.ts - eps then
      error(string.format("check_trace: flow %s arrives (%.3f) before it leaves (%.3f)", k, f.ts, s.ts), 3)
    end
    for _, e in ipairs({ s, f }) do
      if not M.binding(tracks, e) then
        error(string.format("check_trace: flow %s's '%s' at %.3f on pid %s tid %s binds to no slice "
          .. "(it must lie in a slice of its thread, [ts, ts + dur))", k, e.ph, e.ts,
          tostring(e.pid), tostring(e.tid)), 3)
      end
    end
  end
end

-- msprof.check_trace(t) -> true, or an error: a slice whose end is before its start, two
-- slices of one (pid, tid) track that partially overlap (a slice fully inside another is
-- fine: Perfetto nests it), a flow without both ends or whose "f" is before its "s".
-- Comparisons allow TRACE_EPS_US of rounding.
function M.check_trace(t)
  if type(t) ~= "table" or type(t.traceEvents) ~= "table" then
    error("bad argument #1 to 'check_trace' (table with traceEvents expected)", 2)
  end
  local eps = M.TRACE_EPS_US
  local tracks, flows = {}, {}
  for i, e in ipairs(t.traceEvents) do
    if e.ph == "X" then
      if not finite(e.ts) or not finite(e.dur) then
        error(string.format("check_trace: traceEvents[%d] '%s' has no numeric ts and dur", i,
          tostring(e.name)), 2)
      end
      if e.dur < 0 then
        error(string.format("check_trace: slice %s on pid %s tid %s ends before it starts", slice_text(e),
          tostring(e.pid), tostring(e.tid)), 2)
      end
      local key = tostring(e.pid) .. "/" .. tostring(e.tid)
      tracks[key] = tracks[key] or {}
      table.insert(tracks[key], e)
    elseif e.ph == "s" or e.ph == "f" then
      local key = tostring(e.cat) .. "/" .. tostring(e.id)
      flows[key] = flows[key] or {}
      if flows[key][e.ph] then
        error(string.format("check_trace: flow %s has two '%s' events", key, e.ph), 2)
      end
      flows[key][e.ph] = e
    end
  end
  local keys = {}
  for k in pairs(tracks) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, key in ipairs(keys) do
    local list = tracks[key]
    table.sort(list, function(a, b)
      if a.ts ~= b.ts then return a.ts < b.ts end
      return a.dur > b.dur
    end)
    local stack = {}
    for _, e in ipairs(list) do
      while #stack > 0 and stack[#stack].ts + stack[#stack].dur <= e.ts + eps do stack[#stack] = nil end
      local top = stack[#stack]
      if top and e.ts + e.dur > top.ts + top.dur + eps then
        error(string.format("check_trace: slices %s and %s partially overlap on pid %s tid %s",
          slice_text(top), slice_text(e), tostring(e.pid), tostring(e.tid)), 2)
      end
      stack[#stack + 1] = e
    end
  end
  check_flows(flows, tracks)
  return true
end

-- msprof.binding(tracks, e) -> the slice a flow event binds to in Chrome and Perfetto, or
-- nil. tracks: the "X" slices by "pid/tid"; an "s", or an "f" with bp "e", binds to the
-- innermost slice of its thread enclosing it, [ts, ts + dur) (a slice starting at the
-- event's time is open, one ending then is closed); an "f" without bp to the first slice
-- of its thread starting at or after it.
function M.binding(tracks, e)
  local list, best = tracks[tostring(e.pid) .. "/" .. tostring(e.tid)] or {}, nil
  local eps = M.TRACE_EPS_US
  for _, x in ipairs(list) do
    if e.ph == "f" and e.bp ~= "e" then
      if x.ts >= e.ts - eps and (not best or x.ts < best.ts) then best = x end
    elseif x.ts <= e.ts + eps and e.ts < x.ts + x.dur - eps
           and (not best or x.ts >= best.ts and x.dur <= best.dur) then
      best = x
    end
  end
  return best
end

-- msprof.write_trace(path, t [, as_array]) -> path; checks t, makes the parent folder, writes
-- JSON: the object t, or with as_array its traceEvents as a JSON array (as msprof writes
-- msprof_*.json, which scripts read with events.extend(json.load(f)))
function M.write_trace(path, t, as_array)
  if type(path) ~= "string" or path == "" then
    error("bad argument #1 to 'write_trace' (file name expected)", 2)
  end
  local ok, err = pcall(M.check_trace, t)
  if not ok then error(err, 2) end
  local dir = path:match("^(.*)/[^/]*$")
  if dir and dir ~= "" then mkdir_p(dir) end
  write_file(path, json.encode(as_array and t.traceEvents or t))
  return path
end

return M
