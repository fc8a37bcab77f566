-- What describe must return (issue 26, defect 7; lua/shmemlab/op.lua's header):
-- a describe without ub_bytes printed "UB nil B" and passed. Now each of
-- algorithm, chunk_elems, ub_bytes and cores is checked once the run is
-- measured, and a missing or mistyped one is a run error naming the op and
-- the field (exit 3).
local C = require("spec.helpers.cli")
local runner = require("shmemlab.runner")

-- the fixture op of spec/fixtures/ops/stale_copy.lua with describe returning d
local function op_with(d)
  local op = dofile("spec/fixtures/ops/open_frame.lua")
  op.name = "bad_describe"
  op.describe = function() return d end
  return op
end

describe("an op's describe", function()
  it("without ub_bytes is an error naming the op and the field, not 'UB nil B'", function()
    local op = op_with({ algorithm = "a local copy", chunk_elems = 8, cores = 1 })
    local ok, e = pcall(runner.describe, op, {}, {})
    assert.is_false(ok)
    assert.equal("operator bad_describe: describe must return ub_bytes as an integer >= 0 (the "
                 .. "UB bytes a block stages through), got nil", tostring(e))
  end)

  it("checks every field's type", function()
    local cases = {
      { { chunk_elems = 8, ub_bytes = 32, cores = 1 }, "algorithm as a string, got nil" },
      { { algorithm = "a", chunk_elems = 8.5, ub_bytes = 32, cores = 1 },
        "chunk_elems as an integer >= 0, got 8.5" },
      { { algorithm = "a", chunk_elems = 8, ub_bytes = 32, cores = -1 },
        "cores as an integer >= 0, got -1" },
    }
    for _, c in ipairs(cases) do
      local ok, e = pcall(runner.describe, op_with(c[1]), {}, {})
      assert.is_false(ok)
      assert.truthy(tostring(e):find("operator bad_describe: describe must return " .. c[2], 1,
                                     true), tostring(e))
    end
    local ok, e = pcall(runner.describe, op_with("fast"), {}, {})
    assert.is_false(ok)
    assert.truthy(tostring(e):find("describe must return a table", 1, true), tostring(e))
  end)

  it("ends the command with exit 3 and the one error line", function()
    local f = os.tmpname()
    local h = assert(io.open(f, "w"))
    h:write([[
local op = dofile("spec/fixtures/ops/open_frame.lua")
op.name = "bad_describe"
op.describe = function() return { algorithm = "a local copy", chunk_elems = 8, cores = 1 } end
return op
]])
    h:close()
    local status, out, err = C.run({ f, "--pes", "2", "--baseline", "none" })
    os.remove(f)
    assert.equal(3, status)
    assert.falsy(out:find("UB nil B", 1, true), out)
    assert.truthy(err:find("operator bad_describe: describe must return ub_bytes", 1, true), err)
  end)
end)
