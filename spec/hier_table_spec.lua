-- doc/hier.md's efficiency table at 16 MiB a PE is written by `make hier-table`
-- (bench/hier_table.lua) from the cases of shmemlab.hier_cases; this spec fails
-- when a row there is stale. It recomputes only the cells of 16 and 32 PEs (twenty
-- runs, about 3 s of CPU in all here), because a 64-PE cell takes up to 7 s and a
-- 128-PE one up to 40 s (the A3 allgather), too long for the suite on CI. Every row
-- must name its case (op, SoC, design) in order, and every cell, recomputed or not,
-- must read "P.P (BOUND / KERNEL)" with P the per cent the two figures give. The
-- table of the same cases' HCCL baselines below it is checked the same way (its
-- cells of 16 and 32 PEs recomputed, each cell a kernel time in us).
local H = require("shmemlab.hier_cases")
local docs = require("spec.helpers.docs")

-- the PE counts whose cells a spec run recomputes (see the header)
local RECOMPUTE = { [16] = true, [32] = true }

-- assert that row i of a table (path, rows) shows at 16 and 32 PEs what
-- now_of(op, soc, pes) computes for its case
local function recomputes(path, rows, i, now_of)
  local case, cells = H.ROWS[i], select(3, H.split(rows[i]))
  for j, pes in ipairs(H.PES) do
    if RECOMPUTE[pes] then
      local now = now_of(case[1], case[2], pes)
      assert.are.equal(now, cells[j], string.format(
        "%s: row %d (%s %s), %d PEs, is stale (make hier-table rewrites it)\n  doc: %s"
        .. "\n  now: %s", path, i, case[1], case[2], pes, tostring(cells[j]), now))
    end
  end
end

-- assert that a table (path, rows) has one row a case of H.ROWS, in order, naming it
-- (op, SoC and, with_design, its design), and that cell_error finds no fault in a cell
local function well_formed(path, rows, name, with_design, cell_error)
  assert.are.equal(#H.ROWS, #rows, path .. ": rows of the " .. name .. " block")
  for i, case in ipairs(H.ROWS) do
    local op, soc, cells, design = H.split(rows[i])
    assert.are.same({ case[1], case[2], with_design and case[3] or nil }, { op, soc, design },
                    string.format("%s: row %d names another case", path, i))
    assert.are.equal(#H.PES, #cells, string.format("%s: row %d's cells", path, i))
    for j, cell in ipairs(cells) do
      local why = cell_error(cell)
      assert.is_nil(why, string.format("%s: row %d (%s %s), %d PEs: %s", path, i, op, soc,
                                       H.PES[j], tostring(why)))
    end
  end
end

describe("doc/hier.md's efficiency table at 16 MiB a PE (make hier-table)", function()
  local path, rows = docs.table_rows(H.TABLE)

  it("has one row a case, each cell's per cent recomputing from its figures", function()
    well_formed(path, rows, "hier-table", true, H.cell_error)
  end)

  for i, case in ipairs(H.ROWS) do
    it(string.format("shows the cells %s on %s computes at 16 and 32 PEs", case[1], case[2]),
       function()
      recomputes(path, rows, i, function(op, soc, pes)
        local r = H.run(op, soc, pes)
        return H.cell(r.bound, r.kernel)
      end)
    end)
  end
end)

describe("doc/hier.md's table of the same cases' HCCL baselines (make hier-table)", function()
  local path, rows = docs.table_rows(H.BASE_TABLE)

  it("has one row a case, each cell a kernel time in us", function()
    well_formed(path, rows, "hier-baselines", false, H.base_cell_error)
  end)

  for i, case in ipairs(H.ROWS) do
    it(string.format("shows what %s's baseline on %s takes at 16 and 32 PEs", case[1], case[2]),
       function()
      recomputes(path, rows, i, function(op, soc, pes)
        return H.base_cell(H.run_baseline(op, soc, pes))
      end)
    end)
  end
end)
