-- The installable command (issue 12, part 3): scripts/deps.sh leaves the system's
-- lua-interpreter alternative alone, the licence is applied, and the `shmemlab`
-- command names itself.
local lfs = require("lfs")

local tmpdir = require("spec.helpers.cli").tmpdir

-- write an executable shell script
local function script(path, body)
  local f = assert(io.open(path, "w"))
  f:write("#!/bin/sh\n", body, "\n")
  f:close()
  assert(os.execute("chmod 755 '" .. path .. "'"))
end

describe("scripts/deps.sh", function()
  it("installs nothing and switches no alternative when the packages are there", function()
    -- a root user whose `lua` is 5.1 and whose packages are all installed: the case
    -- in which deps.sh used to run update-alternatives
    local bin, log = tmpdir(), os.tmpname()
    script(bin .. "/id", "echo 0")
    script(bin .. "/dpkg-query", "printf 'install ok installed'")
    script(bin .. "/lua", "echo 'Lua 5.1.5  Copyright (C) 1994-2012 Lua.org, PUC-Rio' >&2")
    for _, tool in ipairs({ "update-alternatives", "apt-get" }) do
      script(bin .. "/" .. tool, "echo " .. tool .. " \"$@\" >> '" .. log .. "'")
    end
    local p = assert(io.popen("PATH='" .. bin .. ":/usr/bin:/bin' sh scripts/deps.sh 2>&1; echo rc=$?"))
    local out = p:read("a")
    p:close()
    local called = io.open(log):read("a")
    os.remove(log)
    os.execute("rm -rf '" .. bin .. "'")
    assert.equal("", called)
    assert.equal("rc=0\n", out)                 -- quiet, and nothing changed
  end)

  it("lists lua-argparse, which the command line needs", function()
    local text = io.open("scripts/deps.sh"):read("a")
    assert.matches("%f[%w-]lua%-argparse%f[^%w-]", text)
    assert.matches("lua-argparse", io.open("README.md"):read("a"), 1, true)
  end)
end)

describe("the shmemlab command", function()
  it("is an executable Lua 5.4 script that the rockspec installs", function()
    local f = assert(io.open("bin/shmemlab"))
    assert.equal("#!/usr/bin/env lua5.4", f:read("l"))
    f:close()
    assert.matches("x", lfs.attributes("bin/shmemlab", "permissions"):sub(3, 3))
    local env = {}
    assert(loadfile("shmemlab-scm-1.rockspec", "t", env))()
    assert.equal("bin/shmemlab", env.build.install.bin.shmemlab)
    assert.equal("ops/allgather.lua", env.build.install.lua["shmemlab.ops.allgather"])
  end)

  it("runs from another folder and says shmemlab in its usage", function()
    local dir = tmpdir()
    local cwd = lfs.currentdir()
    local p = assert(io.popen(string.format("cd '%s' && env -u LUA_PATH -u LUA_PATH_5_4 "
      .. "LUA_CPATH_5_4='%s/build/?.so;;' lua5.4 '%s/bin/shmemlab' --bogus 2>&1; echo rc=$?",
      dir, cwd, cwd)))
    local out = p:read("a")
    p:close()
    lfs.rmdir(dir)
    assert.equal("shmemlab: unknown option '--bogus' (shmemlab --help lists the options)\nrc=2\n", out)
  end)
end)

describe("the licence", function()
  it("is MIT in LICENSE, the rockspec and README", function()
    assert.matches("^MIT License\n", io.open("LICENSE"):read("a"))
    local env = {}
    assert(loadfile("shmemlab-scm-1.rockspec", "t", env))()
    assert.equal("MIT", env.description.license)
    assert.matches("## Licence\n\nshmemlab is free software under the MIT licence",
                   io.open("README.md"):read("a"), 1, true)
  end)
end)

-- Issue 26, defect 5: what a clean LuaRocks tree holds is the rockspec's dependencies and
-- nothing from the system's Lua paths. The installed command runs from such a tree, also
-- through a symlink in another folder; `make uninstall` removes exactly what install put.
describe("an install without the system's Lua paths", function()
  local sh = require("spec.helpers.cli").sh
  -- each rock the installed code needs: the module it requires and the file the rock puts
  -- in a tree (copied from the system's, i.e. Debian's lua-argparse and lua-filesystem)
  local ROCKS = {
    argparse = { module = "argparse", file = "share/lua/5.4/argparse.lua",
                 from = package.searchpath("argparse", package.path) },
    luafilesystem = { module = "lfs", file = "lib/lua/5.4/lfs.so",
                      from = package.searchpath("lfs", package.cpath) },
  }
  local function rockspec_deps()
    local env = {}
    assert(loadfile("shmemlab-scm-1.rockspec", "t", env))()
    local names = {}
    for _, d in ipairs(env.dependencies) do
      local name = d:match("^([%w_-]+)")
      if name ~= "lua" then names[#names + 1] = name end
    end
    return names
  end
  local function files(dir)        -- every path under dir, sorted, one a line
    local p = assert(io.popen("cd '" .. dir .. "' && find . | LC_ALL=C sort"))
    local t = p:read("a")
    p:close()
    return t
  end

  it("lists every module the installed code requires outside shmemlab as a dependency", function()
    local listed, by_module = {}, {}
    for _, name in ipairs(rockspec_deps()) do listed[name] = true end
    for rock, r in pairs(ROCKS) do by_module[r.module] = rock end
    local p = assert(io.popen("grep -rhoE 'require[ (]*\"[^\"]+\"' lua ops bin/shmemlab"))
    local seen = 0
    for mod in p:read("a"):gmatch('"([^"]+)"') do
      if not mod:match("^shmemlab") then
        local rock = by_module[mod]
        assert(rock, "no rock known for module " .. mod)
        assert(listed[rock], "the rockspec does not list " .. rock .. " (module " .. mod .. ")")
        seen = seen + 1
      end
    end
    p:close()
    assert.is_true(seen > 0)
  end)

  it("runs from a tree holding only its dependencies, through a symlink elsewhere", function()
    local tmp = require("spec.helpers.cli").tmpdir()
    local tree = tmp .. "/tree"
    local out = sh("make --no-print-directory install PREFIX='" .. tree .. "' >/dev/null")
    assert.equal("exit=0\n", out)
    for _, name in ipairs(rockspec_deps()) do
      local r = assert(ROCKS[name], "the spec does not know rock " .. name)
      assert.equal("exit=0\n", sh(string.format("install -D -m 644 '%s' '%s/%s'", r.from, tree, r.file)))
    end
    assert.equal("exit=0\n", sh("mkdir '" .. tmp .. "/elsewhere' && ln -s '" .. tree
                                .. "/bin/shmemlab' '" .. tmp .. "/elsewhere/shmemlab'"))
    -- ;; would add the system's default paths: the tree's own paths only
    local env = string.format("env -u LUA_PATH -u LUA_CPATH -u SHMEMLAB_OPS "
                              .. "LUA_PATH_5_4='%s/share/lua/5.4/?.lua' "
                              .. "LUA_CPATH_5_4='%s/lib/lua/5.4/?.so'", tree, tree)
    for _, cmd in ipairs({ tree .. "/bin/shmemlab", tmp .. "/elsewhere/shmemlab" }) do
      out = sh(string.format("cd '%s' && %s '%s' allgather --pes 2 --count 256 -w 0 -n 1", tmp, env, cmd))
      assert.matches("(" .. tree .. "/share/lua/5.4/shmemlab/ops/allgather.lua)", out, 1, true)
      assert.matches("exit=0\n$", out)
    end
    os.execute("rm -rf '" .. tmp .. "'")
  end)

  it("make uninstall removes exactly what make install put there (DESTDIR and PREFIX)", function()
    local tmp = require("spec.helpers.cli").tmpdir()
    local stage = tmp .. "/stage"
    -- someone else's files in the same prefix stay
    assert.equal("exit=0\n", sh("mkdir -p '" .. stage .. "/usr/bin' '" .. stage .. "/usr/share/lua/5.4' && "
                                .. "touch '" .. stage .. "/usr/bin/other' '" .. stage
                                .. "/usr/share/lua/5.4/other.lua'"))
    local before = files(stage)
    local make = "make --no-print-directory PREFIX=/usr DESTDIR='" .. stage .. "' "
    assert.equal("exit=0\n", sh(make .. "install >/dev/null"))
    assert.is_not.equal(before, files(stage))
    assert.truthy(io.open(stage .. "/usr/bin/shmemlab"))
    assert.truthy(io.open(stage .. "/usr/share/doc/shmemlab/doc/cli.md"))   -- the README's links
    assert.equal("exit=0\n", sh(make .. "uninstall >/dev/null"))
    local after = files(stage)
    os.execute("rm -rf '" .. tmp .. "'")
    -- directories install created for everyone (bin, lib/lua/5.4, share/doc) may stay
    after = after:gsub("[^\n]*\n", function(l)
      return (l == "./usr/lib\n" or l == "./usr/lib/lua\n" or l == "./usr/lib/lua/5.4\n"
              or l == "./usr/share/doc\n") and "" or l
    end)
    assert.equal(before, after)
  end)
end)
