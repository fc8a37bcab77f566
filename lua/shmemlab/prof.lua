-- shmemlab.prof -- text and CSV layouts of cycle-profiling data (guide section 3.5) and
-- of the CANN SHMEM perftest bandwidth CSV.
--
-- prof.format(data) is the table that aclshmemx_get_prof(nullptr, true) prints:
--   ============================================================   (60 '=')
--   BlockID   FrameID   Cycles         Count          AvgTime(us)    ("%-10s%-10s%-15s%-15s%-15s")
--   ------------------------------------------------------------   (60 '-')
--   0         0         12345678       4              61728.390      (one line per used frame)
--   ============================================================
-- Each line ends in "\n"; AvgTime = cycles / count / cycle2us printed with C's "%.3f"
-- (the CANN SHMEM performance guide's sample prints 61.728 for this row, 1000 times
-- less than its own formula).
-- data = {cycle2us = 50, rows = {{block=, frame=, cycles=, count=}, ...}}; rows with
-- count 0 are not printed; the rest are sorted by block, then frame.

local frames = require("shmemlab.frames")

local M = {}

M.RULE_EQ = string.rep("=", 60)
M.RULE_DASH = string.rep("-", 60)
M.LINE_FMT = "%-10s%-10s%-15s%-15s%-15s"

local function int_str(v)
  local i = math.tointeger(v)
  if i then return string.format("%d", i) end
  return string.format("%.3f", v)
end

local function check_nonneg_int(v)
  return type(v) == "number" and v >= 0 and math.tointeger(v) ~= nil
end

-- used_rows(data, fname) -> validated rows with count > 0, sorted by block then frame
local function used_rows(data, fname)
  if type(data) ~= "table" or type(data.rows) ~= "table" then
    error("bad argument #1 to '" .. fname .. "' (table {cycle2us=, rows=} expected)", 3)
  end
  local c2u = data.cycle2us
  if type(c2u) ~= "number" or c2u <= 0 then
    error("bad argument #1 to '" .. fname .. "' (cycle2us must be > 0)", 3)
  end
  local rows, seen = {}, {}
  for i, r in ipairs(data.rows) do
    if not check_nonneg_int(r.block) or r.block >= frames.MAX_BLOCK then
      error(string.format("bad argument #1 to '%s' (rows[%d].block must be an integer in [0, %d))",
        fname, i, frames.MAX_BLOCK), 3)
    end
    if not check_nonneg_int(r.frame) or r.frame >= frames.MAX_FRAME then
      error(string.format("bad argument #1 to '%s' (rows[%d].frame must be an integer in [0, %d))",
        fname, i, frames.MAX_FRAME), 3)
    end
    if not check_nonneg_int(r.count) or type(r.cycles) ~= "number" then
      error(string.format("bad argument #1 to '%s' (rows[%d] needs numeric cycles and an integer "
        .. "count >= 0)", fname, i), 3)
    end
    local key = r.block * frames.MAX_FRAME + r.frame
    if seen[key] then
      error(string.format("bad argument #1 to '%s' (rows[%d] repeats block %d frame %d)",
        fname, i, r.block, r.frame), 3)
    end
    seen[key] = true
    if r.count > 0 then rows[#rows + 1] = r end
  end
  table.sort(rows, function(a, b)
    if a.block ~= b.block then return a.block < b.block end
    return a.frame < b.frame
  end)
  return rows, c2u
end

-- prof.format(data) -> the host print table as one string
function M.format(data)
  local rows, c2u = used_rows(data, "format")
  local out = { M.RULE_EQ, string.format(M.LINE_FMT, "BlockID", "FrameID", "Cycles", "Count",
    "AvgTime(us)"), M.RULE_DASH }
  for _, r in ipairs(rows) do
    out[#out + 1] = string.format(M.LINE_FMT, int_str(r.block), int_str(r.frame), int_str(r.cycles),
      int_str(r.count), string.format("%.3f", r.cycles / r.count / c2u))
  end
  out[#out + 1] = M.RULE_EQ
  return table.concat(out, "\n") .. "\n"
end

-- prof.csv(data) -> "BlockID,FrameID,Cycles,Count,AvgTime(us)\n" plus the same rows as
-- prof.format (what get_prof(out, false) lets a host program write out)
function M.csv(data)
  local rows, c2u = used_rows(data, "csv")
  local out = { "BlockID,FrameID,Cycles,Count,AvgTime(us)" }
  for _, r in ipairs(rows) do
    out[#out + 1] = string.format("%s,%s,%s,%s,%.3f", int_str(r.block), int_str(r.frame),
      int_str(r.cycles), int_str(r.count), r.cycles / r.count / c2u)
  end
  return table.concat(out, "\n") .. "\n"
end

M.PERFTEST_HEADER = "DataSize/B,Npus,Blocks,UBsize/KB,Bandwidth/GB/s (1000),Bandwidth/GiB/s (1024),"
  .. "CoreMaxTime/us"
M.SINGLE_CORE_COLUMN = "SingleCoreTime/us"

-- prof.perftest_row(data, opts) -> one perftest row from m:get_prof data, or nil
-- when nothing was profiled. opts = {data_bytes=, npus=, ub_kb=, launches=, frame=}:
-- each block's time per launch in frame opts.frame, or, when the op has no such
-- frame, in its costliest one.
function M.perftest_row(data, opts)
  if data.pe == nil or data.pe < 0 or #data.rows == 0 then return nil end
  local by_frame = {}
  for _, row in ipairs(data.rows) do
    by_frame[row.frame] = (by_frame[row.frame] or 0) + row.cycles
  end
  local frame = by_frame[opts.frame] and opts.frame
  if not frame then
    local best = -1
    for id, cy in pairs(by_frame) do
      if cy > best or (cy == best and id < frame) then frame, best = id, cy end
    end
  end
  local core_us = {}
  for _, row in ipairs(data.rows) do
    if row.frame == frame then core_us[row.block + 1] = row.cycles / data.cycle2us / opts.launches end
  end
  for b = 1, #core_us do core_us[b] = core_us[b] or 0 end
  return { data_bytes = opts.data_bytes, npus = opts.npus, blocks = #core_us, ub_kb = opts.ub_kb,
           core_us = core_us }
end

-- prof.perftest_csv(rows) -> CSV text in the CANN perftest layout.
-- rows = {{data_bytes=, npus=, blocks=, ub_kb=, core_us = {us of block 0, block 1, ...}}, ...}
-- Columns: the 7 of PERFTEST_HEADER, then "SingleCoreTime/us" repeated B times, where B is
-- the largest `blocks` of all rows: column 7 + b holds block b-1's time. A row with fewer
-- blocks leaves its extra cells empty, so every line has 7 + B fields.
-- CoreMaxTime = max(core_us); Bandwidth = data_bytes / CoreMaxTime, in 1e9 B/s and 2^30 B/s;
-- times and bandwidths with 3 decimals.
function M.perftest_csv(rows)
  if type(rows) ~= "table" or #rows == 0 then
    error("bad argument #1 to 'perftest_csv' (non-empty list of rows expected)", 2)
  end
  local max_blocks = 0
  for i, r in ipairs(rows) do
    local function bad(msg)
      error(string.format("bad argument #1 to 'perftest_csv' (rows[%d]: %s)", i, msg), 3)
    end
    if math.type(r.blocks) ~= "integer" or r.blocks < 1 then bad("blocks must be an integer >= 1") end
    if type(r.core_us) ~= "table" or #r.core_us ~= r.blocks then
      bad(string.format("core_us must list one time per block (%d)", r.blocks))
    end
    for b, t in ipairs(r.core_us) do
      if type(t) ~= "number" or t <= 0 then bad(string.format("core_us[%d] must be > 0", b)) end
    end
    if type(r.data_bytes) ~= "number" or r.data_bytes < 0 then bad("data_bytes must be >= 0") end
    if type(r.npus) ~= "number" or type(r.ub_kb) ~= "number" then bad("npus and ub_kb are required") end
    max_blocks = math.max(max_blocks, r.blocks)
  end
  local head = { M.PERFTEST_HEADER }
  for _ = 1, max_blocks do head[#head + 1] = M.SINGLE_CORE_COLUMN end
  local out = { table.concat(head, ",") }
  for _, r in ipairs(rows) do
    local tmax = math.max(table.unpack(r.core_us))
    local bytes_per_s = r.data_bytes / (tmax * 1e-6)
    local cells = { int_str(r.data_bytes), int_str(r.npus), int_str(r.blocks), int_str(r.ub_kb),
      string.format("%.3f", bytes_per_s / 1e9), string.format("%.3f", bytes_per_s / 2 ^ 30),
      string.format("%.3f", tmax) }
    for b = 1, max_blocks do
      cells[#cells + 1] = r.core_us[b] and string.format("%.3f", r.core_us[b]) or ""
    end
    out[#out + 1] = table.concat(cells, ",")
  end
  return table.concat(out, "\n") .. "\n"
end

return M
