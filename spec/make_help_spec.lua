-- `make help` lists every target the Makefile declares (.PHONY), one line each, from
-- the `#   make ...` lines at the top of the Makefile.

-- the .PHONY targets of the Makefile
local function phony_targets()
  local f = assert(io.open("Makefile", "r"))
  local text = f:read("a"):gsub("\\\n", " ")
  f:close()
  local list = assert(text:match("\n%.PHONY:([^\n]*)"), "the Makefile declares no .PHONY")
  local targets = {}
  for t in list:gmatch("%S+") do targets[#targets + 1] = t end
  return targets
end

describe("make help", function()
  local p = assert(io.popen("make -s --no-print-directory help 2>&1"))
  local out = p:read("a")
  local ok = p:close()

  it("runs and prints one line a target", function()
    assert.is_true(ok, out)
    for line in out:gmatch("[^\n]+") do assert.matches("^make", line) end
  end)

  it("names every .PHONY target", function()
    local targets = phony_targets()
    assert.is_true(#targets > 20)
    for _, t in ipairs(targets) do
      local named = ("\n" .. out):find("\nmake " .. t:gsub("%-", "%%-") .. "[%s,)]")
                    or out:find("make " .. t:gsub("%-", "%%-") .. "[,)]")
      assert.is_truthy(named, "make help does not name " .. t)
    end
  end)
end)
