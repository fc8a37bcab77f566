-- bench/chain_fidelity.lua: doc/chain.md's table of bare chains against the chunked
-- chain at 1000 ns (`make chain-fidelity`). Runs every case of shmemlab.chain_cases
-- (the timing-only allgather, server relay at 16-1024 PEs and flat at 64-256, each
-- exact, then chunked and as one flow at a 1000 ns window) and prints the Markdown
-- table. Virtual time only: the figures do not depend on this machine; each row's
-- CPU seconds go to stderr (the 1024-PE relay takes the longest).
-- `lua5.4 bench/chain_fidelity.lua --readme README.md doc/*.md` (`make
-- chain-fidelity`) also rewrites the block of the doc that holds its markers
-- (doc/chain.md); spec/chain_fidelity_spec.lua fails when a row there is stale.
local C = require("shmemlab.chain_cases")
local write_table = require("scripts.table_block")

local rows, t0 = {}, os.clock()
for _, c in ipairs(C.CASES) do
  local c0 = os.clock()
  rows[#rows + 1] = C.row(c, C.run(c))
  io.stderr:write(string.format("%s, %.2f s CPU\n", rows[#rows], os.clock() - c0))
end
write_table(C.TABLE, rows, arg, t0)
