-- scripts/spec_run.lua (`make spec`): every file in its own busted process, the counts of
-- all of them added up in busted's summary form, a failing or crashing file shown and
-- counted. Runs the runner on a scratch tree of three spec files.
local lfs = require("lfs")

local BUSTED = io.popen("command -v busted"):read("l")
local ROOT = lfs.currentdir()

-- writes text to path
local function write(path, text)
  local fh = assert(io.open(path, "w"))
  fh:write(text)
  fh:close()
end

-- runs the runner in dir with JOBS jobs; returns its output and exit code
local function run_in(dir, jobs)
  local p = io.popen(string.format(
    "cd '%s' && lua5.4 '%s/scripts/spec_run.lua' %d default 'lua5.4 %s' 2>&1; echo \"exit=$?\"",
    dir, ROOT, jobs, BUSTED))
  local out = p:read("a")
  p:close()
  return out, tonumber(out:match("exit=(%d+)\n$"))
end

describe("scripts/spec_run.lua", function()
  local dir

  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(lfs.mkdir(dir) and lfs.mkdir(dir .. "/spec") and lfs.mkdir(dir .. "/spec/sub"))
    write(dir .. "/.busted", 'return { default = { ROOT = { "spec" }, pattern = "_spec" } }\n')
    write(dir .. "/spec/a_spec.lua",
      'describe("a", function() it("one", function() assert.equal(1, 1) end)\n' ..
      'it("two", function() assert.equal(2, 2) end) end)\n')
    write(dir .. "/spec/sub/b_spec.lua",
      'describe("b", function() it("ok", function() end)\n' ..
      'it("pend", function() pending("later") end) end)\n')
  end)

  after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

  it("adds up every file's counts in busted's summary form and exits 0", function()
    local out, rc = run_in(dir, 2)
    assert.equal(0, rc)
    assert.truthy(out:find("\n3 successes / 0 failures / 0 errors / 1 pending : [%d.]+ seconds\n"), out)
    assert.truthy(out:find("spec/sub/b_spec.lua", 1, true))
    assert.truthy(io.open(dir .. "/output/spec/default/sub_b_spec.lua.log"))
  end)

  it("shows a failing file whole, counts a crashed file as an error, and exits 1", function()
    write(dir .. "/spec/c_spec.lua", 'describe("c", function() it("fails", function()\n' ..
      'assert.equal("want", "got") end) end)\n')
    write(dir .. "/spec/d_spec.lua", 'os.exit(7)\n')
    local out, rc = run_in(dir, 1)
    assert.equal(1, rc)
    assert.truthy(out:find("\n3 successes / 1 failures / 1 errors / 1 pending : [%d.]+ seconds\n"), out)
    assert.truthy(out:find("==== spec/c_spec.lua ====", 1, true), out)
    assert.truthy(out:find("want", 1, true), out)
    assert.truthy(out:find("spec/d_spec.lua%s+no summary %(crashed%)"), out)
    local _, summaries = out:gsub("%d+ successe?s? / %d+ failures?", "")
    assert.equal(1, summaries)
  end)
end)
