-- shmemlab.fidelity: the published measurements the lab must reproduce, and
-- the one routine that models them. bench/fidelity.lua (`make fidelity`)
-- prints the table, spec/fidelity_spec.lua fails when a case drifts outside
-- `tolerance_pct`, and the README's fidelity table is that bench's output.
--
-- Every case is HIXL's benchmark (hicann/hixl benchmarks/benchmark.cpp): one
-- client moves 128 MiB to or from one peer as `desc_bytes` descriptors, all
-- handed to one TransferSync, which queues them on one stream (HcclBatchGet /
-- HcclBatchPut), so descriptor i+1 starts when descriptor i is done; the
-- figure is bytes over host wall time, in GiB/s. The lab runs the same bytes
-- in the same descriptors in the same order: each descriptor is split over
-- `blocks` AIV blocks of the client PE (32-byte granules), each block's slice
-- moved as `parts` transfers through as many UB buffers with mte_get_nbi
-- (READ) or mte_put_nbi (WRITE), then quiet + sync_all before the next; the
-- figure is 128 MiB over the launch's e2e_us. One
-- descriptor-sized buffer is reused (the lab's timing does not depend on the
-- address; HIXL uses 128 MiB of distinct addresses).
local lab = require("shmemlab")

local M = {}

M.tolerance_pct = 10
M.total_bytes = 128 * 1024 * 1024
M.blocks = 48            -- every AIV core of the client PE (die)
M.parts = 4              -- transfers per block per descriptor (UB ping-pong)
M.unit = "GiB/s"

local MiB = 1024 * 1024
local sizes = { 1, 2, 4, 8 }

-- the measured pairs: machine, peer of PE 0, path, source, HIXL table
local setups = {
  A2 = { soc = "Ascend910B", pes = 2, peer = 1, path = "HCCS", source = "hixl_a2",
         where = "one server (单机)" },
  -- dies 0 and 1 share a card (SIO), so the pair is dies 0 and 2 (two cards)
  A3 = { soc = "Ascend910_93", pes = 4, peer = 2, path = "HCCS", source = "hixl_a3",
         where = "one server (单机)" },
  ["A2 2-server"] = { soc = "Ascend910B", pes = 16, peer = 8, path = "RDMA",
                      source = "hixl_a2", where = "two servers (双机)" },
}

-- published GiB/s at 1, 2, 4 and 8 MiB descriptors: HCCS D2D and RDMA D2D columns
local published = {
  { "A2", "get", { 25.245, 25.521, 25.631, 25.741 } },
  { "A2", "put", { 19.058, 19.234, 19.287, 19.371 } },
  { "A3", "get", { 124.131, 137.363, 144.342, 148.104 } },
  { "A3", "put", { 106.293, 115.101, 120.192, 123.518 } },
  { "A2 2-server", "get", { 22.454, 22.482, 22.492, 22.490 } },
  { "A2 2-server", "put", { 22.571, 22.600, 22.608, 22.604 } },
}

-- what a family's figures are used for (the bench prints it beside the fit)
local function role(path, op)
  if path == "RDMA" then return "untuned check" end
  return "fits hccs_" .. (op == "get" and "read" or "write") .. "_eff"
end

M.cases = {}
for _, f in ipairs(published) do
  local label, op, figures = f[1], f[2], f[3]
  local t = setups[label]
  for i, mib in ipairs(sizes) do
    M.cases[#M.cases + 1] = {
      name = string.format("%s %s %s %d MiB", label:gsub(" 2%-server", ""), t.path, op, mib),
      soc = t.soc, pes = t.pes, peer = t.peer, op = op, path = t.path,
      desc_bytes = mib * MiB, published = figures[i], source = t.source,
      table = string.format("%s %s, %s D2D", t.where, op == "get" and "READ" or "WRITE", t.path),
      role = role(t.path, op),
    }
  end
end

-- offset and length (elements) of block b's slice of n int32, in 8-element granules
local function slice(n, b, nb)
  local granules = n // 8
  local base, rem = granules // nb, granules % nb
  local first = b * base + math.min(b, rem)
  local count = base + ((b < rem) and 1 or 0)
  return first * 8, count * 8
end

-- the client PE moves a.ndesc descriptors in order, each split over its
-- blocks; a block moves its slice as M.parts transfers through distinct UB
-- buffers, so the MTE3 half of one overlaps the MTE2 half of the next
-- (ping-pong, as an AIV kernel streams GM to GM; HIXL's DMA has no UB stage)
local function stream_kernel(k, a)
  if k.pe ~= 0 then return end
  local off, n = slice(a.desc_elems, k.block, k.block_num)
  local parts = {}
  for i = 0, a.parts - 1 do
    local o, c = slice(n, i, a.parts)
    if c > 0 then
      parts[#parts + 1] = { n = c, ub = k:ub("int32", c),
                            here = a.loc:sub(off + o, c), there = a.sym:sub(off + o, c) }
    end
  end
  for _ = 1, a.ndesc do
    for _, t in ipairs(parts) do
      if a.op == "get" then
        k:mte_get_nbi(t.here, t.there, t.ub, t.n * 4, t.n, a.peer, 0)
      else
        k:mte_put_nbi(t.there, t.here, t.ub, t.n * 4, t.n, a.peer, 0)
      end
    end
    k:quiet()
    k:sync_all()
  end
end

-- modeled figure of one case (GiB/s) and the launch result; opts.overrides
-- (profile figures) and opts.total_bytes may change the machine or the bytes
function M.model(c, opts)
  opts = opts or {}
  local total = opts.total_bytes or M.total_bytes
  local mopts = { soc = c.soc, pes = c.pes, prof_pe = false }   -- no profiling barriers
  for k, v in pairs(opts.overrides or {}) do mopts[k] = v end
  local m = lab.machine(mopts)
  local elems = c.desc_bytes // 4
  local a = {
    op = c.op, peer = c.peer, desc_elems = elems, ndesc = total // c.desc_bytes,
    parts = opts.parts or M.parts,
    loc = m:alloc("int32", elems, "local"):fill("iota"),
    sym = m:malloc("int32", elems, "remote"),
  }
  local r = m:launch(stream_kernel, opts.blocks or M.blocks, a)
  return total / (r.e2e_us * 1e-6) / 2 ^ 30, r
end

-- signed error of a modeled figure against the case's published one, in %
function M.error_pct(c, modeled)
  return (modeled - c.published) / c.published * 100
end

-- the source text of a case, from its SoC profile's `sources` table
function M.source_text(c)
  return lab.soc(c.soc).sources[c.source]
end

-- least-squares fit t(N) = t0 + N * c over points {desc_bytes =, gib_s =} of
-- total_bytes each: the asymptotic bandwidth (GB/s, decimal) and c (us per
-- descriptor); the profiles' HCCS efficiencies are the published asymptote
-- over the link
function M.fit(points)
  local sx, sy, sxx, sxy, n = 0, 0, 0, 0, 0
  for _, pt in ipairs(points) do
    local x = M.total_bytes / pt.desc_bytes
    local y = M.total_bytes / (pt.gib_s * 2 ^ 30)
    sx, sy, sxx, sxy, n = sx + x, sy + y, sxx + x * x, sxy + x * y, n + 1
  end
  local slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
  local t0 = (sy - slope * sx) / n
  return M.total_bytes / t0 / 1e9, slope * 1e6
end

-- the published points of one family (SoC, op, path) for M.fit
function M.published(soc, op, path)
  local points = {}
  for _, c in ipairs(M.cases) do
    if c.soc == soc and c.op == op and c.path == path then
      points[#points + 1] = { desc_bytes = c.desc_bytes, gib_s = c.published }
    end
  end
  return points
end

-- every case modeled: rows of {case, modeled, err}
function M.run_all(opts)
  local rows = {}
  for _, c in ipairs(M.cases) do
    local modeled = M.model(c, opts)
    rows[#rows + 1] = { case = c, modeled = modeled, err = M.error_pct(c, modeled) }
  end
  return rows
end

-- the README table (Markdown) of run_all's rows
function M.markdown(rows)
  local out = {
    "| case | published (" .. M.unit .. ") | source | modeled (" .. M.unit .. ") | error |",
    "| --- | ---: | --- | ---: | ---: |",
  }
  for _, r in ipairs(rows) do
    local c = r.case
    out[#out + 1] = string.format("| %s | %.3f | %s, %s | %.3f | %+.1f%% |",
      c.name, c.published, c.source, c.table, r.modeled, r.err)
  end
  return table.concat(out, "\n")
end

-- every source of the calibrated profiles (the cases' SoCs) once, as
-- "SoC key: text" lines; a text shared by two profiles is listed once
function M.source_lines()
  local out, seen, socs = {}, {}, {}
  for _, c in ipairs(M.cases) do
    if not socs[c.soc] then socs[c.soc] = true; socs[#socs + 1] = c.soc end
  end
  for _, soc in ipairs(socs) do
    local src = lab.soc(soc).sources
    local keys = {}
    for k in pairs(src) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do
      if not seen[src[k]] then
        seen[src[k]] = true
        out[#out + 1] = string.format("%s %s: %s", soc, k, src[k])
      end
    end
  end
  return out
end

return M
