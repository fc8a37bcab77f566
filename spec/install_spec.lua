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
