-- shmemlab.sweep: an operator and its baseline over a list of PE counts (`--pes
-- 8,16,32`, `--pes 8:1024:x2`, `--pes 8:64:+8`): the counts, the runs (each machine
-- freed before the next is built), the table of their figures and the plot against PE
-- count. Every derived figure of the table is computed from the printed figures it names,
-- so a reader recomputes each one exactly from the table.
local runner = require("shmemlab.runner")
local metrics = require("shmemlab.metrics")
local bound = require("shmemlab.bound")

local sweep = {}

-- the forms parse_pes takes, for messages and the usage text
sweep.FORMS = "N, A:B (= A:B:x2), A:B:xF (times F) or A:B:+S (plus S), comma-separated"

-- the integer of a digit string, math.huge when it is too large for one
local function int_of(d)
  return math.tointeger(tonumber(d)) or math.huge
end

-- the reason digit string d is not a PE count in 1..max, or nil when it is one
local function out_of_range(d, max)
  local n = int_of(d)
  if n < 1 then return string.format("PE count %s is below 1", d) end
  if n > max then return string.format("PE count %s is beyond the supported maximum of %d", d, max) end
end

-- the counts of one item (N, A:B, A:B:xF, A:B:+S) appended to acc; nil, reason when bad
local function item(s, max, acc)
  local a, b, kind, step = s:match("^(%d+):(%d+):([x+])(%d+)$")
  if not a then
    a, b = s:match("^(%d+):(%d+)$")
    kind, step = "x", "2"
  end
  if not a then
    a = s:match("^(%d+)$")
    if not a then
      return nil, string.format("'%s' is not a PE count or range (%s)", s, sweep.FORMS)
    end
    b, kind, step = a, "+", "1"
  end
  local lo, hi, by = int_of(a), int_of(b), int_of(step)
  local bad = out_of_range(a, max) or out_of_range(b, max)
  if bad then return nil, bad end
  if lo > hi then return nil, string.format("range '%s' runs backwards (%d > %d)", s, lo, hi) end
  if kind == "x" and by < 2 then
    return nil, string.format("range '%s' needs a factor of at least 2", s)
  end
  if kind == "+" and by < 1 then
    return nil, string.format("range '%s' needs a step of at least 1", s)
  end
  local n = lo
  while n <= hi do
    acc[#acc + 1] = n
    n = kind == "x" and n * by or n + by
  end
  return acc
end

-- sweep.parse_pes(text [, max = runner.MAX_PES]) -> the PE counts of text, ascending and
-- distinct; or nil and the reason (the form of io.open's failures). text: items separated
-- by commas, each N, A:B (A, 2A, 4A, ... up to B), A:B:xF (times F >= 2) or A:B:+S (plus
-- S >= 1), every count in 1..max: "8,16,32", "8:1024:x2", "8:64:+8", "2,3,8:32"
function sweep.parse_pes(text, max)
  if type(text) ~= "string" then
    error(string.format("bad argument #1 to 'parse_pes' (string expected, got %s)", type(text)), 2)
  end
  max = max or runner.MAX_PES
  if math.type(max) ~= "integer" or max < 1 then
    error("bad argument #2 to 'parse_pes' (maximum must be an integer >= 1)", 2)
  end
  local all = {}
  for s in (text .. ","):gmatch("([^,]*),") do
    local ok, why = item(s:match("^%s*(.-)%s*$"), max, all)
    if not ok then return nil, why end
  end
  table.sort(all)
  local counts = {}
  for _, n in ipairs(all) do
    if n ~= counts[#counts] then counts[#counts + 1] = n end
  end
  return counts
end

-- the runner options of each count: opts with pes set, each checked by runner.config
-- (usage errors, before anything runs)
function sweep.plan(op, opts, counts)
  local runs = {}
  for _, n in ipairs(counts) do
    local ro = {}
    for k, v in pairs(opts) do ro[k] = v end
    ro.pes = n
    runner.config(op, ro)
    runs[#runs + 1] = ro
  end
  return runs
end

-- run each planned count (runner.run with release: every machine is closed once measured,
-- the next count's machines are built after); each(r), when given, sees every result
function sweep.run(op, runs, each)
  local results = {}
  for i, ro in ipairs(runs) do
    local r = runner.run(op, ro, true)
    if each then each(r) end
    results[i] = r
  end
  return results
end

-- sweep.printed(x) -> the number printed for x (3 decimals), and that printed number
-- (a table's later columns are computed from what it printed, so they recompute)
function sweep.printed(x)
  local s = metrics.fmt3(x)
  return s, tonumber(s)
end
local printed = sweep.printed

-- one side of a row (the op or the baseline): kernel_us, algbw, busbw, eff_% as printed,
-- each derived one from the printed figures before it
local function side(s, payload, bf, bound_us, wrong)
  local t_s, t = printed(s.latency_us)
  local a_s, a = printed(payload / t / 1e3)
  local b_s, b = printed(a * bf)
  return { kernel_us = t_s, algbw = a_s, busbw = b_s, eff = metrics.fmt(bound_us / t * 100, 1),
           wrong = runner.wrong_cell(wrong), t = t, algbw_GBps = a, busbw_GBps = b,
           eff_pct = tonumber(metrics.fmt(bound_us / t * 100, 1)) }
end

-- the servers and RDMA domains of n PEs on profile p
function sweep.servers(p, n)
  local dom = bound.domain_pes(p)
  return (n + p.pes_per_server - 1) // p.pes_per_server, (n + dom - 1) // dom
end

-- sweep.row(r) -> the row of one result: pes, servers, domains, payload (bytes per PE),
-- bound_us (printed), op = side, base = side or nil, ratio (printed, "236.9%") or nil
function sweep.row(r)
  local s, c = r.metrics.summary, r.config
  local bf = metrics.bus_factor(r.op.collective, c.pes)
  local bound_s, bound_us = printed(r.bound.us)
  local servers, domains = sweep.servers(c.profile, c.pes)
  local row = { pes = c.pes, servers = servers, domains = domains, payload = s.payload_bytes,
                bound_us = bound_s, bus_factor = bf,
                op = side(s, s.payload_bytes, bf, bound_us, r.shmem.check) }
  if r.baseline then
    row.base = side(r.baseline.metrics.summary, s.payload_bytes, bf, bound_us, r.baseline.check)
    row.ratio = metrics.fmt(row.base.t / row.op.t * 100, 1) .. "%"
  end
  return row
end

-- sweep.rows(results) -> one row per result (sweep.row)
function sweep.rows(results)
  local rows = {}
  for i, r in ipairs(results) do rows[i] = sweep.row(r) end
  return rows
end

-- the legend of a PE sweep's table: how each column is computed
local function legend(r)
  local _, formula = metrics.bus_factor(r.op.collective, r.config.pes)
  local p = r.config.profile
  local text = string.format("# PE sweep on kernel time, each figure from the printed ones: "
    .. "algbw = payload_B / kernel_us / 1e3; busbw = algbw * %s (%s's bus factor); eff_%% = "
    .. "bound_us / kernel_us * 100", formula, r.op.collective)
  if r.baseline then
    text = text .. string.format("; ratio = %s_kern / kernel_us * 100", r.config.baseline)
  end
  return text .. string.format("\n# servers = ceil(PEs / %d per server); domains = ceil(PEs / "
    .. "%d): PEs of different domains are joined by RDMA (%g GB/s, %g us), within one by "
    .. "HCCS%s\n", p.pes_per_server, bound.domain_pes(p), p.rdma_GBps, p.rdma_alpha_ns / 1e3,
    p.dies_per_card > 1 and " and SIO" or "")
end

-- the cells of one side
local function cells(sd, with_bound, bound_s)
  return string.format("%10s%s %8s %9s %9s %7s", sd.kernel_us,
    with_bound and string.format(" %10s", bound_s) or "", sd.eff, sd.algbw, sd.busbw, sd.wrong)
end

-- sweep.head(r1) -> the legend and the header of the table whose first result is r1
function sweep.head(r1)
  local head = string.format("#%5s %7s %7s %12s | %10s %10s %8s %9s %9s %7s |", "PEs", "servers",
    "domains", "payload_B", "kernel_us", "bound_us", "eff_%", "algbw", "busbw", "#wrong")
  if r1.baseline then
    head = head .. string.format(" %10s %8s %9s %9s %7s | %8s",
      r1.config.baseline .. "_kern", "eff_%", "algbw", "busbw", "#wrong", "ratio")
  end
  return legend(r1) .. head .. "\n"
end

-- sweep.line(row) -> the line of one row (sweep.row)
function sweep.line(row)
  local line = string.format("%6d %7d %7d %12d | %s |", row.pes, row.servers, row.domains,
    row.payload, cells(row.op, true, row.bound_us))
  if row.base then line = line .. string.format(" %s | %8s", cells(row.base), row.ratio) end
  return line .. "\n"
end

-- sweep.table(results) -> the text of the table: the legend, the header, one line per count
function sweep.table(results)
  local out = { sweep.head(results[1]) }
  for _, row in ipairs(sweep.rows(results)) do out[#out + 1] = sweep.line(row) end
  return table.concat(out)
end

-- the counts as the header shows them: "8, 16, 32" (results, or a list of counts)
local function counts_text(results)
  local t = {}
  for i, r in ipairs(results) do t[i] = tostring(type(r) == "table" and r.config.pes or r) end
  return table.concat(t, ", ")
end
sweep.counts_text = counts_text

-- sweep.text_head(r1, counts) -> the configuration line (counts: the PE counts as text)
-- and the table's head
function sweep.text_head(r1, counts)
  return runner.config_text(r1.config, r1.op, counts) .. sweep.head(r1)
end

-- sweep.text_tail(results) -> every wrong check and every checked run's reports, by PE count
function sweep.text_tail(results)
  local out = {}
  for _, r in ipairs(results) do
    local at = string.format("%d PEs: ", r.config.pes)
    if r.shmem.check.wrong > 0 then
      out[#out + 1] = at .. runner.check_text("shmemlab " .. r.op.name, r.shmem.check)
    end
    if r.baseline and r.baseline.check.wrong > 0 then
      out[#out + 1] = at .. runner.check_text(r.baseline.op.title or r.baseline.op.name,
                                             r.baseline.check)
    end
    for _, res in ipairs({ r.shmem, r.baseline }) do
      if res.sanitizer and res.sanitizer.errors > 0 then out[#out + 1] = at .. res.sanitizer.text end
    end
  end
  return table.concat(out)
end

-- sweep.text(results) -> the whole text report: the configuration line, the table, then
-- every wrong check and every checked run's reports, by PE count
function sweep.text(results)
  local out = { sweep.text_head(results[1], counts_text(results)) }
  for _, row in ipairs(sweep.rows(results)) do out[#out + 1] = sweep.line(row) end
  out[#out + 1] = sweep.text_tail(results)
  return table.concat(out)
end

-- sweep.svg(results) -> an SVG of bus bandwidth and efficiency against PE count, the op and
-- its baseline, the printed figures of the table
function sweep.svg(results)
  local rows, r1 = sweep.rows(results), results[1]
  local series = { { name = "shmemlab " .. r1.op.name, color = "#1f77b4", key = "op", points = {} } }
  if r1.baseline then
    series[2] = { name = r1.baseline.op.title or r1.baseline.op.name, color = "#d62728",
                  key = "base", points = {} }
  end
  for _, s in ipairs(series) do
    for _, row in ipairs(rows) do
      local sd = row[s.key]
      s.points[#s.points + 1] = { row.pes, sd.busbw_GBps, sd.eff_pct }
    end
  end
  local c = r1.config
  local dom = bound.domain_pes(c.profile)
  return require("shmemlab.plot").pes_svg{
    split = { after = dom, label = string.format("RDMA beyond %d PEs", dom) },
    title = string.format("%s on %d..%d PEs of %s (%s, count %d per PE)", r1.op.name, c.pes,
                          results[#results].config.pes, c.soc, c.dtype, c.count),
    series = series }
end

return sweep
