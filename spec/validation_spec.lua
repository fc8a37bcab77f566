-- The validation table (shmemlab.validation, bench/validation.lua): the docs'
-- block lists every case with its published figure and was made from the current
-- inputs (its fingerprint); the fingerprint moves with any input's bytes.
local V = require("shmemlab.validation")

-- the validation block of the docs (README.md, doc/*.md: whichever holds it), or nil
local function block()
  local texts, files = require("spec.helpers.docs").texts()
  for _, path in ipairs(files) do
    local b = texts[path]:match("<!%-%- validation:begin.-%-%->\n(.-)<!%-%- validation:end %-%->")
    if b then return b end
  end
end

describe("the validation table", function()
  it("is in the docs, made from the current inputs (make validation-readme)", function()
    local b = assert(block(), "no doc has a validation block")
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
end)
