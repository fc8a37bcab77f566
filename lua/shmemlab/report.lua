-- shmemlab.report -- the printed forms of a measurement (doc/metrics.md; CANN SHMEM performance guide 6.3):
-- the fixed result record, [PERF] lines per PE, JSON, the formula explanation and the
-- per-frame table built from cycle-profiling rows, and two such tables side by side.
--
-- Numbers are printed with metrics.fmt (decimal rounding, half away from zero): times,
-- bandwidths and percentages with 3 decimals, the record's ratio with 1 ("115.3%").

local metrics = require("shmemlab.metrics")
local frames_mod = require("shmemlab.frames")
local json = require("shmemlab.json")

local M = {}

local fmt3 = metrics.fmt3

-- the CANN SHMEM performance guide's 6.3 record (doc/metrics.md): latency on kernel
-- time, ratio = baseline_latency_us / latency_us,
-- then the end-to-end comparison on its own lines, then the lower bound and efficiency
M.RECORD_KEYS = { "op_name", "dtype", "shape", "n_pes", "data_bytes", "latency_us",
  "algo_bandwidth_GBps", "kernel_bus_bandwidth_GBps", "baseline", "baseline_latency_us", "ratio",
  "e2e_latency_us", "baseline_e2e_latency_us", "e2e_ratio", "bound_us", "efficiency_pct" }

M.TIMING_BOUNDARY = "kernel_us: first block start to last MTE completion of the kernel on that PE; "
  .. "e2e_us: kernel launch + host copies + kernel"

local function int_or_3(v)
  local i = math.tointeger(v)
  if i then return string.format("%d", i) end
  return fmt3(v)
end

-- shape_text(shape): "M1024, N8" stays; {1024, 8} -> "1024x8"; {{"M", 1024}, {"N", 8}} -> "M1024, N8"
local function shape_text(shape)
  if type(shape) ~= "table" then return tostring(shape) end
  local parts = {}
  for i, d in ipairs(shape) do
    if type(d) == "table" then parts[i] = tostring(d[1]) .. tostring(d[2])
    else parts[i] = tostring(d) end
  end
  return table.concat(parts, type(shape[1]) == "table" and ", " or "x")
end

-- report.make_record(meta, summary) -> record table for report.record / report.to_json
-- meta = {op_name=, dtype=, shape=}; summary = metrics.compute(...).summary
function M.make_record(meta, s)
  if type(meta) ~= "table" or type(s) ~= "table" then
    error("bad argument #1 to 'make_record' (meta and summary tables expected)", 2)
  end
  return {
    op_name = meta.op_name or s.op, dtype = meta.dtype, shape = meta.shape,
    n_pes = s.n_pes, data_bytes = s.payload_bytes, latency_us = s.latency_us,
    algo_bandwidth_GBps = s.algo_bandwidth_GBps, kernel_bus_bandwidth_GBps = s.kernel_bus_bandwidth_GBps,
    baseline = s.baseline and s.baseline.name or nil, baseline_latency_us = s.baseline_latency_us,
    ratio = s.ratio_pct, e2e_latency_us = s.e2e_latency_us,
    baseline_e2e_latency_us = s.baseline_e2e_latency_us, e2e_ratio = s.e2e_ratio_pct,
    bound_us = s.bound_us, efficiency_pct = s.efficiency_pct,
    deepep_wire_dtype = s.deepep_wire_dtype, deepep_recv_rows = s.deepep_recv_rows,
    deepep_row_bytes = s.deepep_row_bytes, deepep_bandwidth_GBps = s.deepep_bandwidth_GBps,
    deepep_wire_row_bytes = s.deepep_wire_row_bytes,
    deepep_wire_bandwidth_GBps = s.deepep_wire_bandwidth_GBps,
    baseline_deepep_bandwidth_GBps = s.baseline and s.baseline.deepep_bandwidth_GBps or nil,
  }
end

-- the record lines of an MoE op, after the fixed ones, when its summary has
-- them (metrics.deepep): how each is printed
M.DEEPEP_KEYS = { "deepep_wire_dtype", "deepep_recv_rows", "deepep_row_bytes",
  "deepep_bandwidth_GBps", "deepep_wire_row_bytes", "deepep_wire_bandwidth_GBps",
  "baseline_deepep_bandwidth_GBps" }

-- report.record(r) -> the fixed "key: value" lines (RECORD_KEYS order), each ending in "\n".
-- r.ratio and r.e2e_ratio are percentage numbers (115.26 -> "115.3%"); without a baseline
-- the baseline lines read "baseline: none", "baseline_latency_us: -", "ratio: -",
-- "baseline_e2e_latency_us: -", "e2e_ratio: -"; without a bound, bound_us and
-- efficiency_pct read "-". An absent e2e_latency_us reads "-".
function M.record(r)
  if type(r) ~= "table" then
    error("bad argument #1 to 'record' (table expected, got " .. type(r) .. ")", 2)
  end
  for _, k in ipairs({ "op_name", "dtype", "shape", "n_pes", "data_bytes", "latency_us",
    "algo_bandwidth_GBps", "kernel_bus_bandwidth_GBps" }) do
    if r[k] == nil then error("bad argument #1 to 'record' (field " .. k .. " missing)", 2) end
  end
  local v = {
    op_name = tostring(r.op_name), dtype = tostring(r.dtype), shape = shape_text(r.shape),
    n_pes = int_or_3(r.n_pes), data_bytes = int_or_3(r.data_bytes), latency_us = fmt3(r.latency_us),
    algo_bandwidth_GBps = fmt3(r.algo_bandwidth_GBps),
    kernel_bus_bandwidth_GBps = fmt3(r.kernel_bus_bandwidth_GBps),
    baseline = r.baseline and tostring(r.baseline) or "none",
    baseline_latency_us = r.baseline_latency_us and fmt3(r.baseline_latency_us) or "-",
    ratio = r.ratio and (metrics.fmt(r.ratio, 1) .. "%") or "-",
    e2e_latency_us = r.e2e_latency_us and fmt3(r.e2e_latency_us) or "-",
    baseline_e2e_latency_us = r.baseline_e2e_latency_us and fmt3(r.baseline_e2e_latency_us) or "-",
    e2e_ratio = r.e2e_ratio and (metrics.fmt(r.e2e_ratio, 1) .. "%") or "-",
    bound_us = r.bound_us and fmt3(r.bound_us) or "-",
    efficiency_pct = r.efficiency_pct and fmt3(r.efficiency_pct) or "-",
  }
  local out = {}
  for i, k in ipairs(M.RECORD_KEYS) do out[i] = k .. ": " .. v[k] .. "\n" end
  for _, k in ipairs(M.DEEPEP_KEYS) do
    local x = r[k]
    if x ~= nil then
      out[#out + 1] = k .. ": " .. (type(x) == "string" and x
        or k:find("GBps$") and fmt3(x) or int_or_3(x)) .. "\n"
    end
  end
  return table.concat(out)
end

M.PERF_FIELDS = { "e2e_us", "kernel_us", "bandwidth_time_us", "algo_bandwidth_GBps",
  "e2e_bus_bandwidth_GBps", "kernel_bus_bandwidth_GBps", "bandwidth_utilization_pct",
  "payload_bytes", "bus_factor", "peak_bandwidth_GBps", "bound_us", "efficiency_pct" }
local PERF_OPTIONAL = { bound_us = true, efficiency_pct = true }

-- report.perf_lines(rows) -> text, list of lines: one "[PERF] pe=<id> key=value ..." per PE
-- (rows = metrics.compute(...).per_pe; payload_bytes as an integer, the rest 3 decimals;
-- bound_us and efficiency_pct read "-" when the run has no bound)
function M.perf_lines(rows)
  if type(rows) ~= "table" then
    error("bad argument #1 to 'perf_lines' (list of per-PE rows expected)", 2)
  end
  local lines = {}
  for i, r in ipairs(rows) do
    local parts = { "[PERF] pe=" .. tostring(r.pe) }
    for _, f in ipairs(M.PERF_FIELDS) do
      local x = r[f]
      if x == nil and f == "bandwidth_time_us" then x = r.kernel_us end
      if x == nil and PERF_OPTIONAL[f] then
        parts[#parts + 1] = f .. "=-"
      elseif type(x) ~= "number" then
        error(string.format("bad argument #1 to 'perf_lines' (rows[%d].%s missing)", i, f), 2)
      else
        parts[#parts + 1] = f .. "=" .. (f == "payload_bytes" and int_or_3(x) or fmt3(x))
      end
    end
    if r.deepep_bandwidth_GBps then                  -- MoE ops (metrics.deepep)
      parts[#parts + 1] = "deepep_recv_rows=" .. int_or_3(r.deepep_recv_rows)
      parts[#parts + 1] = "deepep_row_bytes=" .. int_or_3(r.deepep_row_bytes)
      parts[#parts + 1] = "deepep_bandwidth_GBps=" .. fmt3(r.deepep_bandwidth_GBps)
      parts[#parts + 1] = "deepep_wire_row_bytes=" .. int_or_3(r.deepep_wire_row_bytes)
      parts[#parts + 1] = "deepep_wire_bandwidth_GBps=" .. fmt3(r.deepep_wire_bandwidth_GBps)
    end
    lines[i] = table.concat(parts, " ")
  end
  return (#lines > 0 and table.concat(lines, "\n") .. "\n" or ""), lines
end

M.PERF_SUMMARY_FIELDS = { "latency_us", "baseline_latency_us", "ratio", "e2e_latency_us",
  "baseline_e2e_latency_us", "e2e_ratio", "bound_us", "efficiency_pct" }

-- report.perf_summary(r) -> "[PERF] op=<name> key=value ...\n": the op's comparison in one
-- line beside the per-PE ones, from a record r (make_record): latencies and bound with 3
-- decimals, the ratios with 1 and a "%" as in the record, "-" for what is absent
function M.perf_summary(r)
  if type(r) ~= "table" then
    error("bad argument #1 to 'perf_summary' (record expected, got " .. type(r) .. ")", 2)
  end
  local parts = { "[PERF] op=" .. tostring(r.op_name) }
  for _, f in ipairs(M.PERF_SUMMARY_FIELDS) do
    local x, text = r[f], "-"
    if type(x) == "number" then
      text = (f == "ratio" or f == "e2e_ratio") and (metrics.fmt(x, 1) .. "%") or fmt3(x)
    end
    parts[#parts + 1] = f .. "=" .. text
  end
  return table.concat(parts, " ") .. "\n"
end

-- report.to_json(r [, opts]) -> JSON object of the record (raw numbers, sorted keys,
-- indented by 2 unless opts.indent); a missing baseline, baseline_latency_us or ratio is null.
-- Extra fields of r (verdict, notes, ...) are kept.
function M.to_json(r, opts)
  if type(r) ~= "table" then
    error("bad argument #1 to 'to_json' (table expected, got " .. type(r) .. ")", 2)
  end
  local t = {}
  for k, v in pairs(r) do t[k] = v end
  for _, k in ipairs(M.RECORD_KEYS) do if t[k] == nil then t[k] = json.null end end
  if type(t.shape) == "table" then t.shape = shape_text(t.shape) end
  return json.encode(t, { indent = (opts and opts.indent) or 2 })
end

local PATHS = { "local", "hccs", "sio", "rdma" }

-- the bound, efficiency and baseline lines of formula_text, through add(fmt, ...)
local function comparison_lines(s, add)
  if s.bound then
    add("%s", s.bound.formula or ("bound_us = " .. fmt3(s.bound_us)))
    add("efficiency_pct = bound_us / latency_us * 100 = %s (per PE: over its bandwidth_time_us)",
      fmt3(s.efficiency_pct))
  end
  if s.baseline then
    add("baseline: %s, latency_us %s, e2e_latency_us %s, kernel_bus_bandwidth_GBps %s%s",
      s.baseline.name, fmt3(s.baseline.latency_us), fmt3(s.baseline.e2e_latency_us),
      fmt3(s.baseline.kernel_bus_bandwidth_GBps), s.baseline.efficiency_pct
        and (", efficiency_pct " .. fmt3(s.baseline.efficiency_pct)) or "")
    add("ratio = baseline_latency_us / latency_us * 100 = %s / %s * 100 = %s%% (kernel time; "
      .. "over 100%% = faster than the baseline)", fmt3(s.baseline.latency_us), fmt3(s.latency_us),
      metrics.fmt(s.ratio_pct, 1))
    add("e2e_ratio = baseline_e2e_latency_us / e2e_latency_us * 100 = %s / %s * 100 = %s%% "
      .. "(end to end: launches and host copies included)", fmt3(s.baseline.e2e_latency_us),
      fmt3(s.e2e_latency_us), metrics.fmt(s.e2e_ratio_pct, 1))
  end
end

-- formula_text's line of the bytes moved on each path, beside the logical payload
local function path_line(s, path_bytes, add)
  if type(path_bytes) ~= "table" then return add("bytes per path: not measured") end
  local parts, total = {}, 0
  for _, p in ipairs(PATHS) do
    local b = path_bytes[p] or 0
    total = total + b
    parts[#parts + 1] = p .. "=" .. int_or_3(b)
  end
  add("bytes per path: %s (total %s) beside logical payload %s", table.concat(parts, " "),
    int_or_3(total), int_or_3(s.payload_bytes))
end

-- formula_text's lines of DeepEP's bandwidth figures, when the summary has them
local function deepep_lines(s, add)
  if not s.deepep_bandwidth_GBps then return end
  add("%s = %s * %s / %s / 1e3 = %s (DeepEP's: the rows a rank receives, local rows "
    .. "included, as BF16 rows of hidden x 2 bytes whatever the dtype on the wire; rows = the "
    .. "mean over PEs; time = the slowest PE's kernel; [PERF]: each PE's own rows and "
    .. "kernel_us)", metrics.DEEPEP_FORMULA, int_or_3(s.deepep_recv_rows),
    int_or_3(s.deepep_row_bytes), fmt3(s.latency_us), fmt3(s.deepep_bandwidth_GBps))
  add("%s = %s * %s / %s / 1e3 = %s (the same rows as they travel: %s on the wire)",
    metrics.DEEPEP_WIRE_FORMULA, int_or_3(s.deepep_recv_rows), int_or_3(s.deepep_wire_row_bytes),
    fmt3(s.latency_us), fmt3(s.deepep_wire_bandwidth_GBps), tostring(s.deepep_wire_dtype))
end

-- formula_text's line of the baseline's DeepEP figures, when it has them
local function baseline_deepep_line(b, add)
  if not (b and b.deepep_bandwidth_GBps) then return end
  add("baseline deepep_bandwidth_GBps = %s * %s / %s / 1e3 = %s; wire %s * %s / %s / 1e3 = "
    .. "%s (%s on the wire)", int_or_3(b.deepep_recv_rows), int_or_3(b.deepep_row_bytes),
    fmt3(b.latency_us), fmt3(b.deepep_bandwidth_GBps), int_or_3(b.deepep_recv_rows),
    int_or_3(b.deepep_wire_row_bytes), fmt3(b.latency_us), fmt3(b.deepep_wire_bandwidth_GBps),
    tostring(b.deepep_wire_dtype))
end

-- report.formula_text(summary [, path_bytes]) -> text explaining every number of the summary:
-- formulas, the bus factor used, the peak and its source, the timing boundary and, beside
-- the logical payload, the bytes that moved on each path: path_bytes (or summary.path_bytes)
-- = {["local"]=, hccs=, sio=, rdma=} (absent paths count 0).
function M.formula_text(s, path_bytes)
  if type(s) ~= "table" or s.bus_factor == nil then
    error("bad argument #1 to 'formula_text' (metrics summary expected)", 2)
  end
  path_bytes = path_bytes or s.path_bytes
  local L = {}
  local function add(...) L[#L + 1] = string.format(...) end
  add("op: %s on %d PEs", s.op, s.n_pes)
  add("logical_payload_bytes = %s (single-PE semantic bytes)", int_or_3(s.payload_bytes))
  path_line(s, path_bytes, add)
  add("latency_us = max over PEs of kernel_us = %s; e2e_latency_us = max over PEs of e2e_us = %s",
    fmt3(s.latency_us), fmt3(s.e2e_latency_us))
  add("timing boundary: %s", M.TIMING_BOUNDARY)
  add("bandwidth_time_us of a PE = %s", s.scope == "op"
    and "the slowest participating PE's kernel_us (one payload moved jointly by the PEs that take part)"
    or "its own kernel_us (every PE moves its own payload)")
  add("algo_bandwidth_GBps = logical_payload_bytes / latency_s / 1e9 = %s (per PE: over its "
    .. "bandwidth_time_us)", fmt3(s.algo_bandwidth_GBps))
  add("bus_factor = %s = %s for %s with n_pes = %d (the one table in shmemlab.metrics)",
    s.bus_factor_formula, fmt3(s.bus_factor), s.op, s.n_pes)
  add("kernel_bus_bandwidth_GBps = algo_bandwidth_GBps * bus_factor = %s",
    fmt3(s.kernel_bus_bandwidth_GBps))
  add("e2e_bus_bandwidth_GBps = logical_payload_bytes / e2e_latency_s / 1e9 * bus_factor = %s "
    .. "(reference only, never used for PASS/FAIL)", fmt3(s.e2e_bus_bandwidth_GBps))
  add("peak_bandwidth_GBps = %s (%s)", fmt3(s.peak_bandwidth_GBps), tostring(s.peak_source))
  add("bandwidth_utilization_pct = kernel_bus_bandwidth_GBps / peak_bandwidth_GBps * 100 = %s",
    fmt3(s.bandwidth_utilization_pct))
  deepep_lines(s, add)
  comparison_lines(s, add)
  baseline_deepep_line(s.baseline, add)
  if s.verdict then
    add("verdict: %s (rule: %s; %s)", s.verdict.text, s.verdict.rule, s.verdict.detail or "")
  end
  for _, n in ipairs(s.notes or {}) do add("note: %s", n) end
  return table.concat(L, "\n") .. "\n"
end

-- raises frame_report's argument error (at the given level, default 3) unless v is a
-- number > 0 (positive) or >= 0
local function check_num(v, what, positive, level)
  if type(v) ~= "number" or v ~= v or (positive and v <= 0) or (not positive and v < 0) then
    error(string.format("bad argument #1 to 'frame_report' (%s must be a number %s 0)", what,
      positive and ">" or ">="), level or 3)
  end
end

-- the rows of frame_report's fr.rows with count > 0, by frame id (each row checked)
local function frame_lists(frows)
  local by_frame, seen = {}, {}
  for i, r in ipairs(frows) do
    if math.type(r.frame) ~= "integer" or math.type(r.block) ~= "integer" or math.type(r.pe) ~= "integer" then
      error(string.format("bad argument #1 to 'frame_report' (rows[%d] needs integer pe, block, frame)",
        i), 3)
    end
    check_num(r.cycles, "rows[" .. i .. "].cycles", false, 4)
    check_num(r.count, "rows[" .. i .. "].count", false, 4)
    local key = string.format("%d/%d/%d", r.pe, r.block, r.frame)
    if seen[key] then
      error(string.format("bad argument #1 to 'frame_report' (rows[%d] repeats pe %s block %d frame %d)",
        i, tostring(r.pe), r.block, r.frame), 3)
    end
    seen[key] = true
    if r.count > 0 then
      local list = by_frame[r.frame] or {}
      by_frame[r.frame] = list
      list[#list + 1] = r
    end
  end
  return by_frame
end

-- the frames a report lists: the five kinds in order, then the custom ids found (by id)
local function frame_order(by_frame, F)
  local order = {}
  for _, k in ipairs(frames_mod.kinds) do order[#order + 1] = { id = k.id, key = k.key, name = k.name } end
  local extra = {}
  for id in pairs(by_frame) do
    if id >= frames_mod.FIRST_CUSTOM then extra[#extra + 1] = id end
  end
  table.sort(extra)
  local key_of = {}
  for _, k in ipairs(F.custom_kinds or {}) do key_of[k.id] = k.key end
  for _, id in ipairs(extra) do
    order[#order + 1] = { id = id, key = key_of[id], name = frames_mod.name(id, F) }
  end
  return order
end

-- fills a used frame's row from its (pe, block) rows: sums, per-launch figures, long tail
local function frame_sums(row, list, fr)
  local cycles, count, tail = 0, 0, nil
  for _, r in ipairs(list) do
    cycles, count = cycles + r.cycles, count + r.count
    if not tail or r.cycles > tail.cycles
      or (r.cycles == tail.cycles and (r.pe < tail.pe or (r.pe == tail.pe and r.block < tail.block))) then
      tail = r
    end
  end
  row.cycles, row.count, row.cores = cycles, count, #list
  row.avg_us = cycles / count / fr.cycle2us
  row.max_core_us = tail.cycles / fr.cycle2us / fr.launches
  row.share_pct = row.max_core_us / fr.e2e_us * 100
  row.tail_pe, row.tail_block = tail.pe, tail.block
  local mean = cycles / #list
  row.tail_over_mean = mean > 0 and tail.cycles / mean or 1
end

-- the frame report's table as text
local function frame_text(rows, fr)
  local line = "%-8s%-24s%-15s%-10s%-13s%-13s%-11s%s"
  local T = { string.format(line, "FrameID", "Frame", "Cycles", "Count", "avg_us", "max_core_us",
    "share_%", "long_tail") }
  for _, r in ipairs(rows) do
    if r.used then
      T[#T + 1] = string.format(line, r.id, r.name, int_or_3(r.cycles), int_or_3(r.count), fmt3(r.avg_us),
        fmt3(r.max_core_us), fmt3(r.share_pct), string.format("pe %s block %d (x%s of mean)",
          tostring(r.tail_pe), r.tail_block, metrics.fmt(r.tail_over_mean, 2)))
    else
      T[#T + 1] = string.format(line, r.id, r.name, "-", "-", "-", "-", "-", "unused: " .. r.reason)
    end
  end
  T[#T + 1] = string.format("cycle2us=%s launches=%d e2e_us=%s per launch; max_core_us = max over "
    .. "(pe, block) of cycles / cycle2us / launches; share = max_core_us / e2e_us * 100",
    int_or_3(fr.cycle2us), fr.launches, fmt3(fr.e2e_us))
  return table.concat(T, "\n") .. "\n"
end

-- report.frame_report(fr) -> rows, text
-- fr = {cycle2us=, e2e_us= (per launch), launches=N, rows = {{pe=, block=, frame=, cycles=,
--   count=}, ...}, reasons = {[frame_id] = "why absent"}, frames = frames table (optional)}
-- One row per frame: the five kinds in order, then custom ids found in rows (by id):
--   {id=, key=, name=, used=, cycles=, count=, avg_us=, max_core_us=, share_pct=,
--    tail_pe=, tail_block=, tail_over_mean=, cores=, reason=}
-- cycles, count: sums over all (pe, block) rows of the frame; avg_us = cycles / count /
-- cycle2us (one execution); max_core_us = max over (pe, block) of that core's cycles /
-- cycle2us / launches (per launch, the cycles being summed over all profiled launches);
-- share_pct = max_core_us / e2e_us * 100 (frames may nest, so shares need not add to 100);
-- the long tail is the (pe, block) with the most cycles (ties: lowest pe, then block);
-- tail_over_mean = its cycles / the mean over the cores that ran the frame.
-- A standard kind with no row of count > 0 needs fr.reasons[id], else an error.
function M.frame_report(fr)
  if type(fr) ~= "table" or type(fr.rows) ~= "table" then
    error("bad argument #1 to 'frame_report' (table with rows expected)", 2)
  end
  check_num(fr.cycle2us, "cycle2us", true)
  check_num(fr.e2e_us, "e2e_us", true)
  if math.type(fr.launches) ~= "integer" or fr.launches < 1 then
    error("bad argument #1 to 'frame_report' (launches must be an integer >= 1)", 2)
  end
  local reasons = fr.reasons or {}
  local by_frame = frame_lists(fr.rows)
  local rows = {}
  for _, o in ipairs(frame_order(by_frame, fr.frames or frames_mod)) do
    local list = by_frame[o.id]
    local row = { id = o.id, key = o.key, name = o.name, used = list ~= nil }
    if not list then
      local why = reasons[o.id]
      if type(why) ~= "string" or why == "" then
        error(string.format("frame %d (%s) unused and no reason given", o.id, o.name), 2)
      end
      row.reason = why
    else
      frame_sums(row, list, fr)
    end
    rows[#rows + 1] = row
  end
  return rows, frame_text(rows, fr)
end

-- a frame report's number as printed (3 decimals), nil for an unused frame
local function shown(x) return x and tonumber(fmt3(x)) end

local function check_side(side, n)
  if type(side) ~= "table" or type(side.rows) ~= "table" or type(side.name) ~= "string" then
    error(string.format("bad argument #%d to 'frame_compare' (table {name =, rows =, e2e_us =} "
      .. "expected)", n), 3)
  end
  if type(side.e2e_us) ~= "number" or side.e2e_us ~= side.e2e_us or side.e2e_us <= 0 then
    error(string.format("bad argument #%d to 'frame_compare' (e2e_us must be a number > 0)", n), 3)
  end
end

-- report.frame_compare(op, base) -> rows, text: two frame reports side by side.
-- op, base = {name =, rows = report.frame_report's rows, e2e_us = per launch, as its
-- footer prints it}. One row per frame id of either report (ascending):
--   {id=, name=, op_us=, op_share=, base_us=, base_share=, diff_us=}
-- op_us, op_share, base_us, base_share: the max_core_us and share_% printed in the
-- reports (nil for an unused frame); diff_us = op_us - base_us, an unused frame
-- counting 0. A last row (id "e2e") puts the e2e_us per launch beside each other
-- (share 100). Every number is computed from printed ones, so it can be redone by hand.
function M.frame_compare(op, base)
  check_side(op, 1)
  check_side(base, 2)
  local by, ids = {}, {}
  for side, set in pairs({ op = op.rows, base = base.rows }) do
    for _, r in ipairs(set) do
      local row = by[r.id]
      if not row then
        row = { id = r.id, name = r.name }
        by[r.id], ids[#ids + 1] = row, r.id
      end
      if r.used then row[side .. "_us"], row[side .. "_share"] = shown(r.max_core_us), shown(r.share_pct) end
    end
  end
  table.sort(ids)
  local rows = {}
  for _, id in ipairs(ids) do rows[#rows + 1] = by[id] end
  rows[#rows + 1] = { id = "e2e", name = "per launch", op_us = shown(op.e2e_us), op_share = 100,
                      base_us = shown(base.e2e_us), base_share = 100 }
  for _, r in ipairs(rows) do r.diff_us = shown((r.op_us or 0) - (r.base_us or 0)) end
  local line = "%-8s%-24s%-16s%-12s%-18s%-14s%s"
  local function cell(v) return v and fmt3(v) or "-" end
  local T = { string.format(line, "FrameID", "Frame", "op_max_core_us", "op_share_%",
                            "base_max_core_us", "base_share_%", "diff_us") }
  for _, r in ipairs(rows) do
    T[#T + 1] = string.format(line, r.id, r.name, cell(r.op_us), cell(r.op_share), cell(r.base_us),
                              cell(r.base_share), fmt3(r.diff_us))
  end
  T[#T + 1] = string.format("op = %s, base = %s: max_core_us and share_%% as the two frame "
    .. "reports print them ('-' = unused), e2e = their e2e_us per launch; diff_us = "
    .. "op_max_core_us - base_max_core_us (an unused frame counts 0; below 0 = the op spends "
    .. "less)", op.name, base.name)
  return rows, table.concat(T, "\n") .. "\n"
end

return M
