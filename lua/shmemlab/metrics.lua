-- shmemlab.metrics -- bus factors, payload bytes, peak bandwidth, bandwidths and verdict
-- (CANN SHMEM performance guide sections 5 and 6; definitions in doc/metrics.md).
--
-- The bus factor table below is the ONLY one in shmemlab: everything else asks
-- metrics.bus_factor. Values are computed at full precision; rounding happens only when
-- printing, with metrics.fmt / metrics.fmt3 (decimal round half away from zero).

local M = {}

M.PASS_BASELINE_FRACTION = 0.8   -- PASS: kernel bus bandwidth >= 80% of the baseline's
M.PASS_MIN_UTILISATION_PCT = 20  -- PASS without a baseline: utilisation >= 20%
-- bandwidths are counted on the PEs that move the bytes (see BUS scope): over 100% of the
-- performance guide's peak can only come from its conventions, the bus factor or the peak's link count
M.OVER_100_NOTE = "utilisation above 100%: the bus_factor or the peak convention counts fewer "
  .. "bytes or links than the op used"

local function nm1_over_n(n) return (n - 1) / n end

-- the one bus factor table; scope says whose time a PE's bandwidth is counted on:
-- "pe": every PE moves its own payload (it receives or produces the op's bytes itself), so
-- a PE's bandwidth is over its own kernel time; "op": one payload for the whole op, moved
-- jointly by the PEs that take part (a p2p pair, a broadcast from its root), so every PE's
-- bandwidth is over the slowest participating PE's time -- a PE whose kernel ends early
-- (a p2p src in get mode, a root whose readers pull) has not moved the op's bytes by then.
local BUS = {
  allreduce = { formula = "2*(n_pes-1)/n_pes", f = function(n) return 2 * (n - 1) / n end,
    scope = "pe" },
  reduce_scatter = { formula = "(n_pes-1)/n_pes", f = nm1_over_n, scope = "pe" },
  allgather = { formula = "(n_pes-1)/n_pes", f = nm1_over_n, scope = "pe" },
  alltoall = { formula = "(n_pes-1)/n_pes", f = nm1_over_n, scope = "pe" },
  broadcast = { formula = "1", f = function() return 1 end, scope = "op" },
  p2p = { formula = "1", f = function() return 1 end, scope = "op" },
  dispatch = { formula = "(n_pes-1)/n_pes", f = nm1_over_n, scope = "pe" },
  combine = { formula = "(n_pes-1)/n_pes", f = nm1_over_n, scope = "pe" },
}

-- canonical names, in the CANN SHMEM performance guide's order
M.ops = { "allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "p2p",
  "dispatch", "combine" }

local ALIAS = { reducescatter = "reduce_scatter", shuffle = "alltoall" }
for _, op in ipairs(M.ops) do ALIAS[op:gsub("_", "")] = op end

-- metrics.canonical(op) -> canonical name or nil: case, '_', '-' and spaces are ignored
-- ("AllReduce", "all_reduce", "Reduce-Scatter", "AllToAll", "Shuffle", "P2P", ...)
function M.canonical(op)
  if type(op) ~= "string" then return nil end
  return ALIAS[op:lower():gsub("[%s_%-]", "")]
end

local function check_op(op, fname)
  local c = M.canonical(op)
  if not c then
    error(string.format("bad argument #1 to '%s' (unknown operator '%s'; known: %s)",
      fname, tostring(op), table.concat(M.ops, ", ")), 3)
  end
  return c
end

local function check_n(n, fname, argn)
  if math.type(n) ~= "integer" and not (type(n) == "number" and n == math.floor(n)) then
    error(string.format("bad argument #%d to '%s' (n_pes must be an integer, got %s)",
      argn, fname, tostring(n)), 3)
  end
  if n < 1 then
    error(string.format("bad argument #%d to '%s' (n_pes must be >= 1)", argn, fname), 3)
  end
  return math.tointeger(n)
end

-- metrics.bus_factor(op, n_pes) -> factor, formula ("2*(n_pes-1)/n_pes"), canonical op,
-- scope ("pe" | "op": whose time a PE's bandwidth is counted on, see BUS)
function M.bus_factor(op, n)
  local c = check_op(op, "bus_factor")
  n = check_n(n, "bus_factor", 2)
  local b = BUS[c]
  return b.f(n), b.formula, c, b.scope
end

-- metrics.payload_bytes(op, p) -> logical payload bytes of one PE, formula
-- p = {n_pes=, elems=, dtype_size=, shard_elems=, local_tokens=, hidden=}
local PAYLOAD = {
  alltoall = { "n_pes", "shard_elems" },
  reduce_scatter = { "n_pes", "shard_elems" },
  allgather = { "n_pes", "shard_elems" },
  allreduce = { "elems" },
  broadcast = { "elems" },
  p2p = { "elems" },
  dispatch = { "local_tokens", "hidden" },
  combine = { "local_tokens", "hidden" },
}

function M.payload_bytes(op, p)
  local c = check_op(op, "payload_bytes")
  if type(p) ~= "table" then
    error("bad argument #2 to 'payload_bytes' (table expected, got " .. type(p) .. ")", 2)
  end
  local fields = {}
  for _, f in ipairs(PAYLOAD[c]) do fields[#fields + 1] = f end
  fields[#fields + 1] = "dtype_size"
  local bytes = 1
  for _, f in ipairs(fields) do
    local v = p[f]
    if type(v) ~= "number" or v < 0 or v ~= math.floor(v) then
      error(string.format("bad argument #2 to 'payload_bytes' (%s needs a non-negative integer %s, got %s)",
        c, f, tostring(v)), 2)
    end
    bytes = bytes * math.tointeger(v)
  end
  return bytes, table.concat(fields, "*")
end

local TOPOLOGY_TEXT = { hccs_mesh = "full mesh" }

-- metrics.peak(opts) -> {GBps=, source=, links=, link_GBps=, link_type=, topology=, n_pes=,
--   soc=, rule="p2p"|"collective"}
-- opts = {soc="Ascend910B" (or a profile table with .name), op=, n_pes=, link_GBps=28,
--   link_type="HCCS", pes_per_server=8, topology="hccs_mesh"}
-- p2p, dispatch, combine: one link; a collective: (min(n_pes, pes_per_server) - 1) links
-- (the in-server full mesh; links between servers are not counted).
function M.peak(opts)
  if type(opts) ~= "table" then
    error("bad argument #1 to 'peak' (table expected, got " .. type(opts) .. ")", 2)
  end
  local c = M.canonical(opts.op)
  if not c then
    error(string.format("bad argument #1 to 'peak' (unknown operator '%s')", tostring(opts.op)), 2)
  end
  local n = opts.n_pes
  if math.type(n) ~= "integer" or n < 1 then
    error("bad argument #1 to 'peak' (n_pes must be an integer >= 1)", 2)
  end
  local soc = opts.soc or "Ascend910B"
  if type(soc) == "table" then soc = soc.name or "custom SoC" end
  local link = opts.link_GBps or 28
  local pps = opts.pes_per_server or 8
  local link_type = opts.link_type or "HCCS"
  local topology = opts.topology or "hccs_mesh"
  local topo_text = TOPOLOGY_TEXT[topology] or topology
  if type(link) ~= "number" or link <= 0 then
    error("bad argument #1 to 'peak' (link_GBps must be > 0)", 2)
  end
  if math.type(pps) ~= "integer" or pps < 1 then
    error("bad argument #1 to 'peak' (pes_per_server must be an integer >= 1)", 2)
  end
  local r = { soc = soc, op = c, n_pes = n, link_GBps = link, link_type = link_type,
    topology = topology, pes_per_server = pps }
  local gb = string.format("%g GB/s", link)
  if c == "p2p" or c == "dispatch" or c == "combine" then
    r.rule, r.links, r.GBps = "p2p", 1, link
    r.source = string.format("%s %s %d-PE %s, %s peak: one link x %s one way", soc, link_type, n,
      topo_text, c == "p2p" and "P2P" or (c .. " (P2P rule)"), gb)
  else
    local in_server = math.min(n, pps)
    r.rule, r.links = "collective", in_server - 1
    r.GBps = r.links * link
    r.source = string.format("%s %s %d-PE %s: %d link%s x %s", soc, link_type, in_server, topo_text,
      r.links, r.links == 1 and "" or "s", gb)
    if n > pps then
      r.source = r.source .. string.format(" (%d PEs on %d servers: in-server mesh only, links"
        .. " between servers not counted)", n, (n + pps - 1) // pps)
    elseif n == 1 then
      r.source = r.source .. " (one PE: no link used)"
    end
  end
  return r
end

-- plain(a) -> a (>= 0, < 1e15) as a plain decimal string of 15 significant digits
local function plain(a)
  local g = string.format("%.15g", a)
  local m1, m2, e = g:match("^(%d)%.?(%d*)e([-+]%d+)$")
  if not m1 then return g end
  local digits, exp = m1 .. m2, tonumber(e)          -- value = d.ddd * 10^exp, exp < 0 here
  return "0." .. string.rep("0", -exp - 1) .. digits
end

-- metrics.fmt(x [, decimals=3]) -> x rounded half away from zero in decimal, as the number
-- was meant: fmt(0.3625) is "0.363" although the double is 0.36249999999999999.
-- (string.format("%.3f") rounds the binary value and would give "0.362".)
function M.fmt(x, decimals)
  decimals = decimals or 3
  if type(x) ~= "number" then
    error("bad argument #1 to 'fmt' (number expected, got " .. type(x) .. ")", 2)
  end
  if math.type(decimals) ~= "integer" or decimals < 0 or decimals > 9 then
    error("bad argument #2 to 'fmt' (decimals must be an integer in 0..9)", 2)
  end
  if x ~= x then return "nan" end
  if x == math.huge then return "inf" end
  if x == -math.huge then return "-inf" end
  local a = math.abs(x)
  if a >= 1e15 then return string.format("%." .. decimals .. "f", x) end
  local ip, fp = plain(a):match("^(%d+)%.?(%d*)$")
  fp = fp .. string.rep("0", decimals + 1)
  local n = math.tointeger(tonumber(ip .. fp:sub(1, decimals)))
  if fp:sub(decimals + 1, decimals + 1) >= "5" then n = n + 1 end
  local out
  if decimals == 0 then out = string.format("%d", n)
  else
    local scale = math.tointeger(10 ^ decimals)
    out = string.format("%d.%0" .. decimals .. "d", n // scale, n % scale)
  end
  if x < 0 and n ~= 0 then out = "-" .. out end
  return out
end

function M.fmt3(x) return M.fmt(x, 3) end

local function positive(v)
  return type(v) == "number" and v > 0 and v < math.huge
end

-- the printed value of x (3 decimals), as a number: ratios are computed from it
local function printed(x) return tonumber(M.fmt3(x)) end

-- printed(b) / printed(a) * 100, or nil when a prints as 0
local function pct(b, a)
  local pa = printed(a)
  if not pa or pa == 0 then return nil end
  return printed(b) / pa * 100
end

local function pe_rows(per_pe, k, what)
  what = what == "" and "" or (what .. " ")
  if type(per_pe) ~= "table" or #per_pe == 0 then
    error("bad argument #1 to 'compute' (" .. what .. "per_pe must be a non-empty list)", 3)
  end
  local op_k, op_e = 0, 0
  for i, p in ipairs(per_pe) do
    if not positive(p.kernel_us) or not positive(p.e2e_us) then
      error(string.format("bad argument #1 to 'compute' (%sper_pe[%d]: kernel_us and e2e_us "
        .. "must be > 0)", what, i), 3)
    end
    op_k, op_e = math.max(op_k, p.kernel_us), math.max(op_e, p.e2e_us)
  end
  local rows = {}
  for i, p in ipairs(per_pe) do
    local t_k = k.scope == "op" and op_k or p.kernel_us
    local t_e = k.scope == "op" and op_e or p.e2e_us
    local algo = k.payload / t_k / 1e3   -- bytes / (us * 1e-6) / 1e9
    local e2e_algo = k.payload / t_e / 1e3
    local kbus = algo * k.bf
    rows[i] = {
      pe = p.pe or (i - 1), kernel_us = p.kernel_us, e2e_us = p.e2e_us, bandwidth_time_us = t_k,
      payload_bytes = k.payload, bus_factor = k.bf, peak_bandwidth_GBps = k.peak,
      algo_bandwidth_GBps = algo, e2e_algo_bandwidth_GBps = e2e_algo,
      kernel_bus_bandwidth_GBps = kbus, e2e_bus_bandwidth_GBps = e2e_algo * k.bf,
      bandwidth_utilization_pct = k.peak > 0 and kbus / k.peak * 100 or 0,
      bound_us = k.bound, efficiency_pct = k.bound and k.bound / t_k * 100 or nil,
    }
  end
  return rows
end

-- how per-PE figures combine into the op's (nccl-tests' -a): the slowest PE (max, the
-- default), the mean, the fastest (min) or PE 0's (pe0, the first row)
M.COMBINE = {
  max = function(t) return math.max(table.unpack(t)) end,
  min = function(t) return math.min(table.unpack(t)) end,
  mean = function(t) local s = 0 for _, v in ipairs(t) do s = s + v end return s / #t end,
  pe0 = function(t) return t[1] end,
}

-- the op's figures: latencies = the per-PE latencies combined (k.combine, default the max);
-- bandwidths = payload over those latencies (so that the record's algo_bandwidth =
-- data_bytes / latency_us); efficiency = bound / latency
local function summarise(rows, k)
  local s = { n_pe_rows = #rows }
  local kern, e2e = {}, {}
  for i, r in ipairs(rows) do kern[i], e2e[i] = r.kernel_us, r.e2e_us end
  local f = M.COMBINE[k.combine or "max"]
  s.latency_us, s.e2e_latency_us = f(kern), f(e2e)
  s.algo_bandwidth_GBps = k.payload / s.latency_us / 1e3
  s.e2e_algo_bandwidth_GBps = k.payload / s.e2e_latency_us / 1e3
  s.kernel_bus_bandwidth_GBps = s.algo_bandwidth_GBps * k.bf
  s.e2e_bus_bandwidth_GBps = s.e2e_algo_bandwidth_GBps * k.bf
  s.bandwidth_utilization_pct = k.peak > 0 and s.kernel_bus_bandwidth_GBps / k.peak * 100 or 0
  s.bound_us = k.bound
  s.efficiency_pct = k.bound and k.bound / s.latency_us * 100 or nil
  return s
end

-- the bound of opts: nil, a number of us, or a bound table ({us=, formula=})
local function bound_of(b)
  if b == nil then return nil end
  if type(b) == "number" and b >= 0 then return { us = b, formula = "given: " .. b .. " us" } end
  if type(b) == "table" and type(b.us) == "number" and b.us >= 0 then return b end
  error("bad argument #1 to 'compute' (bound must be a number of us or a bound table {us=})", 4)
end

-- metrics.compute(opts) -> {per_pe = {rows}, summary = {...}}
-- opts = {op=, n_pes=, payload_bytes=, per_pe = {{pe=, kernel_us=, e2e_us=}, ...},
--   peak = metrics.peak{...} (or a number of GB/s), baseline = nil | {name=, per_pe=...},
--   bound = nil | us | shmemlab.bound table {us=, formula=},
--   combine = nil | "max" | "mean" | "min" | "pe0" (how per-PE latencies combine; max)}
-- Per PE: algo (kernel), e2e algo, kernel bus, e2e bus bandwidth, utilisation, efficiency,
-- each over bandwidth_time_us (the PE's kernel_us, or with scope "op" the slowest PE's).
-- Summary: latency_us = max kernel_us, e2e_latency_us = max e2e_us, bandwidths = payload
-- over them, efficiency_pct = bound_us / latency_us * 100; with a baseline ratio_pct =
-- baseline latency_us / latency_us * 100 and e2e_ratio_pct = baseline e2e_latency_us /
-- e2e_latency_us * 100, each from the printed (3-decimal) latencies.
-- the checked inputs of compute: canonical op, n_pes, payload, peak table, bound, and the
-- figures pe_rows and summarise share
local function compute_args(opts)
  if type(opts) ~= "table" then
    error("bad argument #1 to 'compute' (table expected, got " .. type(opts) .. ")", 3)
  end
  local c = M.canonical(opts.op)
  if not c then
    error(string.format("bad argument #1 to 'compute' (unknown operator '%s')", tostring(opts.op)), 3)
  end
  local n = opts.n_pes
  if math.type(n) ~= "integer" or n < 1 then
    error("bad argument #1 to 'compute' (n_pes must be an integer >= 1)", 3)
  end
  local payload = opts.payload_bytes
  if type(payload) ~= "number" or payload < 0 then
    error("bad argument #1 to 'compute' (payload_bytes must be a number >= 0)", 3)
  end
  local peak = opts.peak
  if type(peak) == "number" then peak = { GBps = peak, source = "given: " .. peak .. " GB/s" } end
  if type(peak) ~= "table" or type(peak.GBps) ~= "number" or peak.GBps < 0 then
    error("bad argument #1 to 'compute' (peak must be a metrics.peak table or a number)", 3)
  end
  if opts.ratio_basis ~= nil then
    error("bad argument #1 to 'compute' (ratio_basis is gone: ratio is kernel to kernel, "
      .. "e2e_ratio end to end)", 3)
  end
  local bound = bound_of(opts.bound)
  if opts.combine ~= nil and not M.COMBINE[opts.combine] then
    error("bad argument #1 to 'compute' (combine must be max, mean, min or pe0)", 3)
  end
  local bf, formula, _, scope = M.bus_factor(c, n)
  return c, n, payload, peak, bound, formula, { payload = payload, bf = bf, peak = peak.GBps,
    scope = scope, bound = bound and bound.us, combine = opts.combine }
end

function M.compute(opts)
  local c, n, payload, peak, bound, formula, k = compute_args(opts)
  local bf, scope = k.bf, k.scope
  local rows = pe_rows(opts.per_pe, k, "")
  local s = summarise(rows, k)
  s.op, s.n_pes, s.payload_bytes, s.scope = c, n, payload, scope
  s.bus_factor, s.bus_factor_formula = bf, formula
  s.bound = bound
  s.peak_bandwidth_GBps, s.peak_source = peak.GBps, peak.source
  s.notes = {}
  for _, r in ipairs(rows) do
    if r.bandwidth_utilization_pct > 100 then s.notes[#s.notes + 1] = M.OVER_100_NOTE; break end
  end
  if peak.GBps == 0 then
    s.notes[#s.notes + 1] = "peak bandwidth is 0 (no link used): utilisation not defined, shown as 0"
  end
  for _, r in ipairs(rows) do
    if r.e2e_us < r.kernel_us then
      s.notes[#s.notes + 1] = string.format("PE %s: e2e_us < kernel_us (timing boundaries disagree)",
        tostring(r.pe))
    end
  end

  local b = opts.baseline
  if b ~= nil then
    if type(b) ~= "table" then
      error("bad argument #1 to 'compute' (baseline must be a table {name=, per_pe=})", 2)
    end
    local bs = summarise(pe_rows(b.per_pe, k, "baseline"), k)
    bs.name = b.name or "baseline"
    s.baseline = bs
    s.baseline_latency_us, s.baseline_e2e_latency_us = bs.latency_us, bs.e2e_latency_us
    s.ratio_pct = pct(bs.latency_us, s.latency_us)
    s.e2e_ratio_pct = pct(bs.e2e_latency_us, s.e2e_latency_us)
    local need = M.PASS_BASELINE_FRACTION * bs.kernel_bus_bandwidth_GBps
    local pass = s.kernel_bus_bandwidth_GBps >= need
    s.verdict = {
      pass = pass, text = pass and "PASS" or "FAIL",
      rule = "kernel_bus_bandwidth >= 80% of baseline",
      detail = string.format("%s GB/s %s %s GB/s (80%% of %s %s GB/s)",
        M.fmt3(s.kernel_bus_bandwidth_GBps), pass and ">=" or "<", M.fmt3(need), bs.name,
        M.fmt3(bs.kernel_bus_bandwidth_GBps)),
    }
  else
    local u = s.bandwidth_utilization_pct
    local pass = u >= M.PASS_MIN_UTILISATION_PCT
    s.verdict = {
      pass = pass, text = pass and "PASS" or "FAIL",
      rule = "no baseline: utilisation >= 20%",
      detail = string.format("utilisation %s%% %s 20%% of %s GB/s", M.fmt(u, 1), pass and ">=" or "<",
        M.fmt3(peak.GBps)),
    }
  end
  return { per_pe = rows, summary = s }
end

-- DeepEP's bytes per row: BF16, 2 bytes an element, whatever the dtype on the wire
M.DEEPEP_ELEM_BYTES = 2

-- the DeepEP bandwidths of t (a per-PE row or a summary) over rows received per PE
-- in time_us: DeepEP's (BF16 rows) and the wire's (d.row_bytes a row)
local function deepep_fields(t, rows, d, time_us)
  t.deepep_recv_rows = rows
  t.deepep_row_bytes = d.hidden * M.DEEPEP_ELEM_BYTES
  t.deepep_recv_bytes = rows * t.deepep_row_bytes
  t.deepep_bandwidth_GBps = t.deepep_recv_bytes / time_us / 1e3
  t.deepep_wire_row_bytes = d.row_bytes
  t.deepep_wire_bandwidth_GBps = rows * d.row_bytes / time_us / 1e3
  t.deepep_wire_dtype = d.wire_dtype
end

M.DEEPEP_FORMULA = "deepep_bandwidth_GBps = deepep_recv_rows * deepep_row_bytes / latency_us / 1e3"
M.DEEPEP_WIRE_FORMULA = "deepep_wire_bandwidth_GBps = deepep_recv_rows * deepep_wire_row_bytes "
  .. "/ latency_us / 1e3"

-- a usage error of metrics.deepep's argument n unless d is an op's DeepEP table
local function check_deepep(d, n)
  if type(d) ~= "table" or type(d.recv_rows) ~= "table" or not positive(d.row_bytes)
     or not positive(d.hidden) then
    error(string.format("bad argument #%d to 'deepep' ({recv_rows = {[pe] = rows}, "
      .. "row_bytes > 0, hidden > 0} expected)", n), 3)
  end
end

-- metrics.deepep(result, d [, bd]) -> result with DeepEP's bandwidth added (the
-- figure DeepEP's tests print for dispatch and combine: the rows a rank receives,
-- local rows included, counted as BF16 rows of hidden x 2 bytes whatever the dtype on
-- the wire, over the time), and beside it the same rows at their bytes on the wire.
-- d = {recv_rows = {[pe] = rows}, row_bytes = (on the wire), hidden =, wire_dtype =}
-- of the op, bd the baseline's (or nil). Per PE row: deepep_recv_rows,
-- deepep_row_bytes = hidden * 2, deepep_recv_bytes = rows * row_bytes,
-- deepep_bandwidth_GBps = recv_bytes / that PE's kernel_us / 1e3 (per rank, as DeepEP
-- prints), deepep_wire_row_bytes, deepep_wire_bandwidth_GBps (the same over wire
-- bytes). Summary (and its baseline): rows = the mean over PEs, time = latency_us
-- (the slowest PE).
function M.deepep(res, d, bd)
  if type(res) ~= "table" or type(res.per_pe) ~= "table" or type(res.summary) ~= "table" then
    error("bad argument #1 to 'deepep' (metrics.compute result expected)", 2)
  end
  check_deepep(d, 2)
  local sum = 0
  for _, r in ipairs(res.per_pe) do
    local rows = d.recv_rows[r.pe]
    if math.type(rows) ~= "integer" or rows < 0 then
      error(string.format("bad argument #2 to 'deepep' (recv_rows[%s] must be an integer >= 0)",
        tostring(r.pe)), 2)
    end
    deepep_fields(r, rows, d, r.kernel_us)
    sum = sum + rows
  end
  deepep_fields(res.summary, sum / #res.per_pe, d, res.summary.latency_us)
  res.summary.deepep_formula = M.DEEPEP_FORMULA
  if bd and res.summary.baseline then
    check_deepep(bd, 3)
    local bsum = 0
    for _, r in ipairs(res.per_pe) do bsum = bsum + (bd.recv_rows[r.pe] or 0) end
    deepep_fields(res.summary.baseline, bsum / #res.per_pe, bd, res.summary.baseline.latency_us)
  end
  return res
end

return M
