-- doc/hier.md's efficiency table at 16 MiB a PE is written by `make hier-table`
-- (bench/hier_table.lua) from the cases of shmemlab.hier_cases; this spec fails
-- when a row there is stale. It recomputes only the cells of 16 and 32 PEs (twenty
-- runs, about 3 s of CPU in all here), because a 64-PE cell takes up to 7 s and a
-- 128-PE one up to 40 s (the A3 allgather), too long for the suite on CI. Every row
-- must name its case (op, SoC, design) in order, and every cell, recomputed or not,
-- must read "P.P (BOUND / KERNEL)" with P the per cent the two figures give.
local H = require("shmemlab.hier_cases")
local docs = require("spec.helpers.docs")

-- the PE counts whose cells a spec run recomputes (see the header)
local RECOMPUTE = { [16] = true, [32] = true }

describe("doc/hier.md's efficiency table at 16 MiB a PE (make hier-table)", function()
  local path, rows = docs.table_rows(H.TABLE)

  it("has one row a case, each cell's per cent recomputing from its figures", function()
    assert.are.equal(#H.ROWS, #rows, path .. ": rows of the hier-table block")
    for i, case in ipairs(H.ROWS) do
      local op, soc, cells, design = H.split(rows[i])
      assert.are.same({ case[1], case[2], case[3] }, { op, soc, design },
                      string.format("%s: row %d names another case", path, i))
      assert.are.equal(#H.PES, #cells, string.format("%s: row %d's cells", path, i))
      for j, cell in ipairs(cells) do
        local why = H.cell_error(cell)
        assert.is_nil(why, string.format("%s: row %d (%s %s), %d PEs: %s", path, i, op, soc,
                                         H.PES[j], tostring(why)))
      end
    end
  end)

  for i, case in ipairs(H.ROWS) do
    it(string.format("shows the cells %s on %s computes at 16 and 32 PEs", case[1], case[2]),
       function()
      local _, _, cells = H.split(rows[i])
      for j, pes in ipairs(H.PES) do
        if RECOMPUTE[pes] then
          local r = H.run(case[1], case[2], pes)
          local now = H.cell(r.bound, r.kernel)
          assert.are.equal(now, cells[j], string.format(
            "%s: row %d (%s %s), %d PEs, is stale (make hier-table rewrites it)\n  doc: %s"
            .. "\n  now: %s", path, i, case[1], case[2], pes, tostring(cells[j]), now))
        end
      end
    end)
  end
end)
