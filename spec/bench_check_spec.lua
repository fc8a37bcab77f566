-- bench/check.lua (issue 26, defect 6): each mode runs as `run_op.lua OP --tool MODE`, and a
-- failed run stops the bench with a non-zero exit instead of being measured. The runs here
-- are tiny (2 PEs, one 1 KiB size, one iteration); only exits and the table's rows are
-- asserted, never the wall-clock figures.
local sh = require("spec.helpers.cli").sh

describe("bench/check.lua", function()
  it("measures every mode through run_op.lua's --tool", function()
    local out = sh("lua5.4 bench/check.lua 1 allgather -- --pes 2 -b 1K -e 1K -n 1 -w 0")
    assert.matches("^check%-mode cost, whole processes %(lua run_op.lua OP %[%-%-tool MODE%]%), "
                   .. "1 rounds, medians\n", out)
    for _, mode in ipairs({ "none", "memcheck", "synccheck", "initcheck", "racecheck", "all" }) do
      assert.matches("\nallgather%s+" .. mode .. "%s+[%d.]+%s+[%d.]+%s+%d+%s+[%d.]+x", out)
    end
    assert.matches("\nexit=0\n$", out)
  end)

  it("fails loudly, naming the run and what it said, when a run fails", function()
    local out = sh("(lua5.4 bench/check.lua 1 allgather -- --pes 2 --bogus 2>&1 >/dev/null)")
    assert.equal("bench/check.lua: run_op.lua allgather --pes 2 --bogus failed (exit 2): "
                 .. "run_op.lua: unknown option '--bogus' (lua run_op.lua --help lists the options)\n"
                 .. "exit=1\n", out)
  end)
end)
