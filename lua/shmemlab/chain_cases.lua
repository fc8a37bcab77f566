-- shmemlab.chain_cases: the cases of doc/chain.md's table of bare chains against
-- the chunked chain at a settle window of 1000 ns, each computed here for
-- bench/chain_fidelity.lua (`make chain-fidelity`, which writes the table into the
-- doc) and spec/chain_fidelity_spec.lua (which recomputes the cheap rows and fails
-- when the doc's row is not the one this module formats). A case is the timing-only
-- allgather of 1 MiB a PE (count 262144 int32; 2 MiB at 16 PEs) x 48 blocks on
-- Ascend910B, one launch, PE profiling off, `relay` the server relay (--algo hier),
-- `flat` --algo flat; each row runs it three times: exact as one flow a chain
-- (window 0, the default form), then at 1000 ns chunked (chain_flow = false) and as
-- one flow. Virtual time (m:now()): the same figures on any machine.
local runner = require("shmemlab.runner")
local T = require("shmemlab.doc_table")

local M = {}

M.WINDOW = 1000
-- the table's rows in order: algo, PEs, count a PE (int32)
M.CASES = {
  { algo = "relay", pes = 16, count = 524288 },
  { algo = "relay", pes = 64, count = 262144 },
  { algo = "relay", pes = 128, count = 262144 },
  { algo = "relay", pes = 256, count = 262144 },
  { algo = "relay", pes = 512, count = 262144 },
  { algo = "relay", pes = 1024, count = 262144 },
  { algo = "flat", pes = 64, count = 262144 },
  { algo = "flat", pes = 128, count = 262144 },
  { algo = "flat", pes = 256, count = 262144 },
}

-- the table in the doc (shmemlab.doc_table): its name, target and header
M.TABLE = T.new("chain-fidelity", "chain-fidelity",
                "| run | exact | chunked, 1000 ns | one flow, 1000 ns | ghosts left |\n"
                  .. "| --- | --- | --- | --- | --- |")

-- one launch of case c at window ns, as one flow a chain or chunked: its virtual
-- time (us) and the ghosts its one-flow chains ran
local function launch(c, window, chain_flow)
  local op, cfg, m = runner.one_launch("allgather", {
    pes = c.pes, block_dim = 48, timing_only = true, count = c.count,
    algo = c.algo == "relay" and "hier" or "flat", settle_ns = window, chain_flow = chain_flow })
  op.run(m, cfg, op.setup(m, cfg))
  local r = { now = m:now(), ghosts = m:ghosts().ghosts }
  m:close()
  collectgarbage()
  return r
end

-- case c's three runs: {exact, chunked, one} virtual times (us), the ghosts of the
-- exact run (ghosts) and of the windowed one-flow run (left)
function M.run(c)
  local exact = launch(c, 0, true)
  local chunked = launch(c, M.WINDOW, false)
  local one = launch(c, M.WINDOW, true)
  return { exact = exact.now, chunked = chunked.now, one = one.now,
           ghosts = exact.ghosts, left = one.ghosts }
end

-- "64 PEs relay", "16 PEs relay, 2 MiB a PE"
function M.name(c)
  local s = string.format("%d PEs %s", c.pes, c.algo)
  if c.count ~= 262144 then s = s .. string.format(", %d MiB a PE", c.count * 4 // (1024 * 1024)) end
  return s
end

-- a windowed time against the exact one, both as printed: "358.461851 us (+1.21%)"
local function against(t, exact)
  local a, e = string.format("%.6f", t), string.format("%.6f", exact)
  return string.format("%s us (%+.2f%%)", a, (tonumber(a) - tonumber(e)) / tonumber(e) * 100)
end

-- the row of case c from its runs r (M.run): the one-flow time reads "the same"
-- when it prints as the chunked one
function M.row(c, r)
  local chunked = against(r.chunked, r.exact)
  local one = string.format("%.6f", r.one) == string.format("%.6f", r.chunked) and "the same"
              or against(r.one, r.exact)
  return string.format("| %s | %.6f us | %s | %s | %s of %s |", M.name(c), r.exact, chunked, one,
                       T.thousands(r.left), T.thousands(r.ghosts))
end

-- nil when a row's text is well formed for case c and its per cents recompute from
-- its times (and no more ghosts are left than ran), else why not
function M.row_error(c, line)
  local name, exact, chunked, one, left, ghosts = line:match(
    "^| (.-) | (%d+%.%d+) us | (%d+%.%d+) us %([+-]%d+%.%d%d%%%) | (.-) | ([%d,]+) of ([%d,]+) |$")
  if not name then return "not of the table's form: " .. line end
  if name ~= M.name(c) then return "names " .. name .. ", not " .. M.name(c) end
  local function num(s) return tonumber((s:gsub(",", ""))) end
  local r = { exact = tonumber(exact), chunked = tonumber(chunked), ghosts = num(ghosts),
              left = num(left) }
  r.one = one == "the same" and r.chunked or tonumber(one:match("^(%d+%.%d+) us %([+-]%d+%.%d%d%%%)$"))
  if not r.one then return "its one-flow cell is neither 'the same' nor a time: " .. line end
  if r.left > r.ghosts then return "more ghosts left than ran: " .. line end
  local want = M.row(c, r)
  if want ~= line then return "its per cents do not recompute from its times: " .. line
                              .. "\n  want " .. want end
  return nil
end

-- the table's block of doc text, and its rows in text (nil without its markers)
function M.block(rows) return T.block(M.TABLE, rows) end
function M.rows(text) return T.rows(M.TABLE, text) end

return M
