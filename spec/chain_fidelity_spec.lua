-- doc/chain.md's table of bare chains against the chunked chain at 1000 ns is
-- written by `make chain-fidelity` (bench/chain_fidelity.lua) from the cases of
-- shmemlab.chain_cases; this spec fails when a row there is stale. It recomputes
-- only the rows of 128 PEs or fewer (16, 64 and 128 PEs relay, 64 and 128 PEs flat:
-- three launches each, about 5 s of CPU in all here), because the others take from
-- several seconds (256 PEs) to minutes (the 1024-PE relay's chunked run) and the
-- suite must stay cheap on CI. Every row, recomputed or not, must name its case in
-- order, be of the table's form, leave no more ghosts than ran, and have per cents
-- that recompute from the times it prints.
local C = require("shmemlab.chain_cases")
local docs = require("spec.helpers.docs")

-- the rows a spec run recomputes (see the header)
local RECOMPUTE_MAX_PES = 128

describe("doc/chain.md's bare chains against the chunked chain (make chain-fidelity)", function()
  local path, rows = docs.table_rows(C.TABLE)

  it("has one row a case, each of the table's form with per cents that recompute", function()
    assert.are.equal(#C.CASES, #rows, path .. ": rows of the chain-fidelity block")
    for i, c in ipairs(C.CASES) do
      local why = C.row_error(c, rows[i])
      assert.is_nil(why, string.format("%s: row %d: %s", path, i, tostring(why)))
    end
  end)

  for i, c in ipairs(C.CASES) do
    if c.pes <= RECOMPUTE_MAX_PES then
      it("shows the row " .. C.name(c) .. " computes", function()
        local row = C.row(c, C.run(c))
        assert.are.equal(row, rows[i], string.format(
          "%s: row %d of the chain-fidelity table is stale (make chain-fidelity rewrites it)"
          .. "\n  doc: %s\n  now: %s", path, i, tostring(rows[i]), row))
      end)
    end
  end
end)
