-- shmemlab.validation: published operator-level measurements the lab is checked
-- against but never calibrated on. The SoC profiles are fitted to link and engine
-- microbenchmarks only (shmemlab.fidelity); these cases run whole operators -- the
-- shipping MoE kernels as ported in ops/deepep/ and ops/mc2/ -- on the published
-- configuration and print the modeled figure beside the measured one. A case that
-- disagrees stays as it is, with the reason the lab believes (`note`): no profile
-- figure moves to close it. bench/validation.lua (`make validation`) prints the
-- table; `make validation-readme` writes it into doc/validation.md with the fingerprint of
-- the files that decide its figures, and spec/validation_spec.lua fails when those
-- files changed since (the table is stale) -- rerunning every case takes minutes.
local runner = require("shmemlab.runner")

local M = {}

-- DeepEP-Ascend's published performance (sgl-project/sgl-kernel-npu README.md,
-- "DeepEP-Ascend Performance", @ f425bdf1, Aug 2026): A3 384 SuperPOD, pure HCCS;
-- DeepSeek-V3/R1 settings: hidden 7168, top-8 experts (256 routed), INT8 dispatch,
-- BF16 combine; normal mode 4096 tokens per rank, low-latency 128
M.SOURCE = "sgl-project/sgl-kernel-npu README.md, DeepEP-Ascend Performance @ f425bdf1 "
  .. "(A3 384 SuperPOD, pure HCCS, hidden 7168, top-8 of 256 experts, INT8 dispatch, "
  .. "BF16 combine)"

local NORMAL = { 8, 16, 32, 64, 128 }
local NORMAL_GBPS = { dispatch = { 146, 107, 102, 81, 57 }, combine = { 125, 103, 95, 91, 81 } }
local LL = { 8, 16, 32 }
local LL_US = { dispatch = { 132, 139, 153 }, combine = { 126, 135, 151 } }

-- the run options of a case: the published configuration, timing-only (the times are
-- those of a data run), one launch, no baseline; wire: the dispatch's row dtype (nil:
-- the input's)
local function options(pes, tokens, wire)
  return { soc = "Ascend910_93", pes = pes, local_tokens = tokens, hidden = 7168, topk = 8,
           experts = 256, dtype = "bf16", dispatch_dtype = wire,
           block_dim = 48, timing_only = true, warmup = 0, iters = 1, baseline = "none",
           moe_mode = tokens > runner.LL_MAX_TOKENS and "normal" or "ll" }
end

M.cases = {}

-- one case of the table
local function case(name, op, opts, metric, unit, published)
  M.cases[#M.cases + 1] = { name = name, op = op, opts = opts, metric = metric, unit = unit,
                            published = published }
end

-- the SHMEM normal-mode kernels (INT8 dispatch rows, as the published runs sent)
local function normal_rows(what)
  for i, ep in ipairs(NORMAL) do
    case(string.format("deepep normal %s EP%d", what, ep), "ops/deepep/" .. what .. ".lua",
         options(ep, 4096, what == "dispatch" and "int8" or nil), "deepep_bandwidth_GBps",
         "GB/s", NORMAL_GBPS[what][i])
  end
end

-- the dispatch sgl-kernel-npu's main branch ships on Ascend910_93 (notify + the
-- cam_moe_dispatch_normal data kernel): its port moves BF16 rows (it refuses INT8's
-- DynamicQuant), so these rows send twice the bytes the published runs did
local function main_rows()
  for i, ep in ipairs(NORMAL) do
    case(string.format("deepep main dispatch EP%d, BF16 rows", ep), "ops/deepep/dispatch_hccl.lua",
         options(ep, 4096, nil), "deepep_bandwidth_GBps", "GB/s", NORMAL_GBPS.dispatch[i])
  end
end

-- the mc2 low-latency kernels
local function ll_rows(what)
  for i, ep in ipairs(LL) do
    case(string.format("mc2 LL %s EP%d", what, ep), "ops/mc2/" .. what .. ".lua",
         options(ep, 128, what == "dispatch" and "int8" or nil), "latency_us", "us",
         LL_US[what][i])
  end
end

normal_rows("dispatch"); main_rows(); ll_rows("dispatch")
normal_rows("combine"); ll_rows("combine")

-- the files whose content decides the cases' figures: the engine, the profiles, the
-- operators and the Lua they run through
M.INPUTS = { "core/*.c", "core/*.h", "lua/shmemlab/socs/*.lua", "lua/shmemlab/moe.lua",
  "lua/shmemlab/deepep.lua", "lua/shmemlab/mc2.lua", "lua/shmemlab/op.lua",
  "lua/shmemlab/runner.lua", "lua/shmemlab/metrics.lua", "lua/shmemlab/init.lua",
  "lua/shmemlab/validation.lua", "ops/deepep/*.lua", "ops/mc2/*.lua" }

-- the files of M.INPUTS under root, sorted
local function input_files(root)
  local lfs = require("lfs")
  local files = {}
  for _, pat in ipairs(M.INPUTS) do
    local dir, glob = pat:match("^(.*)/([^/]*)$")
    local lpat = "^" .. glob:gsub("%.", "%%."):gsub("%*", ".*") .. "$"
    if lfs.attributes(root .. "/" .. dir, "mode") == "directory" then
      for f in lfs.dir(root .. "/" .. dir) do
        if f:find(lpat) then files[#files + 1] = dir .. "/" .. f end
      end
    end
  end
  table.sort(files)
  return files
end

-- fingerprint(root) -> 16 hex digits: FNV-1a (64-bit) over the names and bytes of
-- M.INPUTS under root (default "."), so a table made from other inputs is stale
function M.fingerprint(root)
  root = root or "."
  local h = 0xcbf29ce484222325
  local prime = 0x100000001b3
  for _, name in ipairs(input_files(root)) do
    local f = assert(io.open(root .. "/" .. name, "rb"))
    local text = name .. "\0" .. f:read("a") .. "\0"
    f:close()
    for i = 1, #text, 8 do
      local a, b, c, d, e, g, k, l = text:byte(i, i + 7)
      for _, x in ipairs({ a, b, c, d, e, g, k, l }) do h = (h ~ x) * prime end
    end
  end
  return string.format("%016x", h)
end

-- model(case) -> the modeled figure and the run's result
function M.model(c)
  local r = runner.run(c.op, c.opts)
  return r.metrics.summary[c.metric], r
end

-- case i modeled: {case, modeled, err}, or {case, refused = why} when the port
-- refuses the case (runner's "refused" kind: a plan the shipping kernel's UB cannot
-- hold); any other error is raised
function M.row(i)
  local c = assert(M.cases[i], "no such case")
  local ok, modeled = pcall(M.model, c)
  if ok then return { case = c, modeled = modeled, err = (modeled - c.published) / c.published * 100 } end
  if runner.kind(modeled) ~= "refused" then error(modeled, 0) end
  return { case = c, refused = tostring(modeled) }
end

-- every case modeled, in order: rows as M.row gives them
function M.run_all(progress)
  local rows = {}
  for i = 1, #M.cases do
    rows[i] = M.row(i)
    if progress then progress(rows[i]) end
  end
  return rows
end

-- the Markdown table of run_all's rows
function M.markdown(rows)
  local out = { "| case | published | modeled | error | figure |", "| --- | ---: | ---: | ---: | --- |" }
  for _, r in ipairs(rows) do
    local c = r.case
    out[#out + 1] = string.format("| %s | %g %s | %s | %s | %s |", c.name, c.published, c.unit,
      r.modeled and string.format("%.1f %s", r.modeled, c.unit)
        or "refused: " .. r.refused:gsub("|", "/"),
      r.err and string.format("%+.1f%%", r.err) or "-",
      c.metric == "latency_us" and "kernel time, slowest rank"
        or "DeepEP's bandwidth (BF16 rows received / kernel time, slowest rank)")
  end
  return table.concat(out, "\n")
end

return M
