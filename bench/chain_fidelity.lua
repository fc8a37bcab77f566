-- bench/chain_fidelity.lua: doc/chain.md's table of bare chains against the chunked
-- chain at 1000 ns (`make chain-fidelity`). Runs every case of shmemlab.chain_cases
-- (the timing-only allgather, server relay at 16-1024 PEs and flat at 64-256, each
-- exact, then chunked and as one flow at a 1000 ns window) and prints the Markdown
-- table. Virtual time only: the figures do not depend on this machine; each row's
-- CPU seconds go to stderr (the 1024-PE relay takes the longest).
-- `lua5.4 bench/chain_fidelity.lua --readme README.md doc/*.md` (`make
-- chain-fidelity`) also rewrites the block of the doc that holds its markers
-- (doc/chain.md); spec/chain_fidelity_spec.lua fails when a row there is stale.
-- `--max-pes N` runs only the cases of N PEs or fewer and prints their rows, a quick
-- check (256: under a minute of CPU instead of about five); it cannot write the doc, whose table
-- has every row.
local C = require("shmemlab.chain_cases")
local write_table = require("scripts.table_block")

local args, max_pes = {}, math.huge
local i = 1
while arg[i] do
  if arg[i] == "--max-pes" then
    max_pes = math.tointeger(tonumber(arg[i + 1]))
    assert(max_pes and max_pes > 0, "--max-pes N: N a positive integer")
    i = i + 2
  else
    args[#args + 1], i = arg[i], i + 1
  end
end
assert(max_pes == math.huge or args[1] ~= "--readme",
       "--max-pes cannot write the doc: its table has every row")

local rows, t0 = {}, os.clock()
for _, c in ipairs(C.CASES) do
  if c.pes <= max_pes then
    local c0 = os.clock()
    rows[#rows + 1] = C.row(c, C.run(c))
    io.stderr:write(string.format("%s, %.2f s CPU\n", rows[#rows], os.clock() - c0))
  end
end
write_table(C.TABLE, rows, args, t0)
