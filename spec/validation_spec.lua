-- The validation table (shmemlab.validation, bench/validation.lua): the README's
-- block lists every case with its published figure and was made from the current
-- inputs (its fingerprint); the fingerprint moves with any input's bytes.
local V = require("shmemlab.validation")

-- the README's validation block, or nil
local function block()
  local f = assert(io.open("README.md", "rb"))
  local text = f:read("a")
  f:close()
  return text:match("<!%-%- validation:begin.-%-%->\n(.-)<!%-%- validation:end %-%->")
end

describe("the validation table", function()
  it("is in the README, made from the current inputs (make validation-readme)", function()
    local b = assert(block(), "README.md has no validation block")
    local printed = b:match("Inputs fingerprint (%x+)")
    assert.is_not_nil(printed, "the block has no fingerprint: run make validation-readme")
    assert.equal(V.fingerprint(), printed, "stale: run make validation-readme")
  end)

  it("lists every case once with its published figure", function()
    local b = assert(block())
    for _, c in ipairs(V.cases) do
      local pub = b:match("\n| " .. c.name:gsub("%p", "%%%0") .. " | ([^|]+) |")
      assert.equal(string.format("%g %s", c.published, c.unit), pub, c.name)
    end
  end)

  it("fingerprints the inputs' names and bytes", function()
    local lfs = require("lfs")
    local root = os.tmpname()
    os.remove(root)
    assert(lfs.mkdir(root))
    assert(lfs.mkdir(root .. "/core"))
    local function write(name, text)
      local f = assert(io.open(root .. "/" .. name, "wb"))
      f:write(text)
      f:close()
    end
    write("core/a.c", "int a;")
    local one = V.fingerprint(root)
    write("core/a.c", "int b;")
    local two = V.fingerprint(root)
    write("core/b.c", "")
    local three = V.fingerprint(root)
    os.remove(root .. "/core/b.c")
    write("core/a.c", "int a;")
    assert.equal(one, V.fingerprint(root))
    assert.are_not.equal(one, two)
    assert.are_not.equal(two, three)
    assert.matches("^%x+$", one)
    assert.equal(16, #one)
    os.remove(root .. "/core/a.c")
    lfs.rmdir(root .. "/core")
    lfs.rmdir(root)
  end)
  -- a case the port refuses (runner's "refused" kind, raised by deepep.check_ub at
  -- setup) is a row saying why; any other failure of a case is raised, not tabled
  it("tables a refusal and raises any other failure", function()
    local n = #V.cases
    local opts = {}
    for k, v in pairs(V.cases[5].opts) do opts[k] = v end
    opts.local_tokens = 512
    V.cases[n + 1] = { name = "refused", op = "ops/deepep/dispatch.lua", opts = opts,
                       metric = "deepep_bandwidth_GBps", unit = "GB/s", published = 1 }
    V.cases[n + 2] = { name = "broken", op = "ops/no_such_op.lua", opts = opts,
                       metric = "latency_us", unit = "us", published = 1 }
    local ok1, r = pcall(V.row, n + 1)
    local ok2, e = pcall(V.row, n + 2)
    V.cases[n + 1], V.cases[n + 2] = nil, nil
    assert.is_true(ok1, tostring(r))
    assert.is_nil(r.modeled)
    assert.matches("needs %d+ UB bytes per block at 128 PEs", r.refused)
    assert.is_false(ok2)
    assert.matches("no_such_op", tostring(e))
  end)
end)
