-- bench/hier_table.lua: doc/hier.md's efficiency table at 16 MiB a PE (`make
-- hier-table`). Runs every cell of shmemlab.hier_cases (each op of the table on its
-- SoC at 16, 32, 64 and 128 PEs, timing-only) and prints the Markdown table: each
-- cell the efficiency bound_us / kernel_us in per cent, with the two figures.
-- Then each case's HCCL baseline (ops/hccl/) alone, the second table: its kernel us.
-- Virtual time only: the figures do not depend on this machine; each cell's CPU
-- seconds go to stderr (the 128-PE cells take the longest).
-- `lua5.4 bench/hier_table.lua --readme README.md doc/*.md` (`make hier-table`) also
-- rewrites the blocks of the doc that holds their markers (doc/hier.md);
-- spec/hier_table_spec.lua fails when a row there is not the one its cases compute.
local H = require("shmemlab.hier_cases")
local write_table = require("scripts.table_block")

-- the rows of one table: cell(op, soc, pes) gives a cell's text
local function rows_of(cell, base)
  local rows = {}
  for _, case in ipairs(H.ROWS) do
    local cells = {}
    for i, pes in ipairs(H.PES) do
      local c0 = os.clock()
      cells[i] = cell(case[1], case[2], pes)
      io.stderr:write(string.format("%s%s %s %d PEs: %s, %.2f s CPU\n", base and "hccl " or "",
                                    case[1], case[2], pes, cells[i], os.clock() - c0))
    end
    rows[#rows + 1] = H.row(case, cells, base)
  end
  return rows
end

local t0 = os.clock()
write_table(H.TABLE, rows_of(function(op, soc, pes)
  local r = H.run(op, soc, pes)
  return H.cell(r.bound, r.kernel)
end), arg, t0)
write_table(H.BASE_TABLE, rows_of(function(op, soc, pes)
  return H.base_cell(H.run_baseline(op, soc, pes))
end, true), arg, t0)
