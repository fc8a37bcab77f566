-- The newcomer's path in examples/ keeps working: the seed's allgather on 2, 4
-- and 8 PEs, and the user-written broadcast run through run_op.lua, whose
-- frames and profile change react as doc/operators.md says.
local cli = require("shmemlab.cli")

local function sink()
  local s = { parts = {} }
  function s:write(...) for _, v in ipairs({ ... }) do self.parts[#self.parts + 1] = tostring(v) end
    return self end
  function s:text() return table.concat(self.parts) end
  return s
end

local function latency(text) return tonumber(text:match("\nlatency_us: ([%d.]+)\n")) end

describe("examples", function()
  it("allgather_basic.lua checks the seed's allgather on 2, 4 and 8 PEs", function()
    local f = assert(io.popen("lua5.4 examples/allgather_basic.lua 2>&1; echo \"exit=$?\""))
    local out = f:read("a")
    f:close()
    for _, pes in ipairs({ 2, 4, 8 }) do
      assert.matches("allgather " .. pes .. " PEs x 8192 int32: kernel [%d.]+ us %(max over PEs%), "
                     .. "e2e [%d.]+ us, output correct", out)
    end
    assert.matches("exit=0", out, 1, true)
  end)

  local sh = require("spec.helpers.cli").sh    -- a shell command's output and exit line

  it("shmem_allgather.lua ports the library's allgather: both paths on 2 and 8 PEs", function()
    local out = sh("lua5.4 examples/shmem_allgather.lua 2 8")
    for _, pes in ipairs({ 2, 8 }) do
      assert.matches("shmem allgather " .. pes .. " PEs x 16384 int32 %(small path, 8 blocks%): "
                     .. "kernel [%d.]+ us, output correct\n", out)
      assert.matches("shmem allgather " .. pes .. " PEs x 524288 int32 %(big path, 16 blocks%): "
                     .. "kernel [%d.]+ us, output correct\n", out)
    end
    assert.matches("exit=0", out, 1, true)
  end)

  it("shmem_allgather.lua checked: the small path is clean; the big path shows the example's own "
     .. "hazards", function()
    local out = sh("lua5.4 examples/shmem_allgather.lua --tool all 2 8")
    local function case(pes, n) return out:match("shmem allgather " .. pes .. " PEs x " .. n
                                                 .. " int32 [^\n]*\n(.-)\nshmem allgather")
                                       or out:match("shmem allgather " .. pes .. " PEs x " .. n
                                                    .. " int32 [^\n]*\n(.*)$") end
    for _, pes in ipairs({ 2, 8 }) do
      assert.matches(pes .. " PEs x 16384 int32 %(small path, 8 blocks%): kernel [%d.]+ us, "
                     .. "output correct, all: 0 reports", out)
      local big = case(pes, 524288)
      -- *flags_ub2[i] = 0 on S, then aclshmem_int32_get_nbi writes it on MTE2 with no S_MTE2
      assert.matches("write of 4 bytes unordered with an earlier write", big, 1, true)
      assert.matches("UB of PE 0 core 8, byte offset 1024, length 4", big, 1, true)
      -- the peers' flags are polled before anyone wrote them (aclshmem_malloc, not calloc)
      assert.matches("read of uninitialized memory: read of 4 bytes", big, 1, true)
      assert.matches("symmetric heap buffer 'gva'", big, 1, true)
      -- with fewer than 8 PEs, core_per_rank blocks each copy every chunk of their rank
      assert.equal(pes == 2, big:find("GM buffer 'output'", 1, true) ~= nil)
    end
    assert.matches("exit=1", out, 1, true)
  end)

  -- issue 26, defect 3: `lua` can be 5.1 (Debian with both installed)
  local lua51 = sh("command -v lua5.1"):match("^(/%S+)\n")
  local RUNNABLE = { "allgather_basic", "engine_placement", "shmem_allgather" }

  it("the runnable examples re-run themselves under lua5.4 when started by Lua 5.1", function()
    assert(lua51, "lua5.1 is needed for this spec")
    for _, name in ipairs(RUNNABLE) do
      assert.equal("exit=0\n", sh("luac5.1 -p examples/" .. name .. ".lua"))
      assert.matches('\nrequire("shmemlab.lua54").ensure()', io.open("examples/" .. name .. ".lua"):read("a"),
                     1, true)
    end
    local out = sh(lua51 .. " examples/allgather_basic.lua")
    assert.matches("allgather 8 PEs x 8192 int32: kernel [%d.]+ us %(max over PEs%), e2e [%d.]+ us, "
                   .. "output correct\nexit=0\n$", out)
    assert.equal("run_op.lua: unknown option '--bogus' (lua run_op.lua --help lists the options)\n"
                 .. "exit=2\n", sh(lua51 .. " run_op.lua --bogus"))     -- the same logic
    out = sh(lua51 .. " examples/shmem_allgather.lua --tool all 2")     -- the status comes back
    assert.matches("write of 4 bytes unordered with an earlier write", out, 1, true)
    assert.matches("exit=1\n$", out)
    -- no lua5.4 on PATH: said, not a parse error
    local bin = require("spec.helpers.cli").tmpdir()
    os.execute("ln -s '" .. lua51 .. "' '" .. bin .. "/lua'")
    out = sh("PATH='" .. bin .. "' lua examples/engine_placement.lua 1")
    os.execute("rm -rf '" .. bin .. "'")
    assert.matches("engine_placement.lua needs Lua 5.4 (apt-get install lua5.4)\n", out, 1, true)
    assert.matches("exit=127\n$", out)
  end)

  it("shmem_allgather.lua takes run_op.lua's --tool MODE; other input is a usage error", function()
    local usage = " (usage: lua examples/shmem_allgather.lua [--tool MODE] [pes ...])\nexit=2\n"
    for args, msg in pairs({
      ["--check all 2"] = "unknown option '--check'",
      ["--tool bogus 2"] = "--tool must be memcheck, racecheck, synccheck, initcheck or all, got 'bogus'",
      ["--tool"] = "option --tool needs a MODE",
      ["two"] = "PE counts expected, got 'two'",
    }) do
      assert.equal("shmem_allgather.lua: " .. msg .. usage,
                   sh("lua5.4 examples/shmem_allgather.lua " .. args))
    end
  end)

  it("engine_placement.lua compares MTE, SDMA, RoCE and UDMA for one put", function()
    local out = sh("lua5.4 examples/engine_placement.lua 1")
    local us = {}
    local n = 0
    for soc, how, blocks, dst, t in out:gmatch("(%S+)%s+(%a+)%s+(%d+) blocks?%s+PE 0 %-> PE (%d) "
                                               .. "%([%a]+%):%s+([%d.]+) us%s+[%d.]+ GB/s  landed") do
      us[soc .. " " .. how .. " " .. blocks .. " " .. dst] = tonumber(t)
      n = n + 1
    end
    assert.equal(8, n)
    assert.is_true(us["Ascend910B sdma 1 1"] < us["Ascend910B mte 1 1"])   -- no MTE chunking
    assert.equal(us["Ascend910B roce 1 1"], us["Ascend910B roce 1 8"])      -- NICs either way
    assert.is_true(us["Ascend950 udma 1 1"] < us["Ascend950 mte 16 1"])
    assert.matches("exit=0", out, 1, true)
  end)

  it("my_broadcast.lua runs through run_op.lua with its frames explained", function()
    local out = sink()
    assert.equal(0, cli.main({ "examples/my_broadcast.lua", "--pes", "8", "-w", "1", "-n", "2" }, out, out))
    local text = out:text()
    assert.matches("check shmemlab my_broadcast: 0 wrong elements", text, 1, true)
    assert.matches("unused: a broadcast computes nothing", text, 1, true)
    assert.matches("\n4%s+finalize%s+%d+", text)
    assert.matches("| baseline hccl |", text, 1, true)          -- the header says what runs
    assert.matches("baseline: HCCL Broadcast", text, 1, true)     -- and it runs
  end)

  -- issue 27: the README shows this file whole (an include block outputs-readme checks)
  it("put_allgather.lua is a whole operator of about 40 lines, right and clean at 1 to 32 PEs",
     function()
    local text = io.open("examples/put_allgather.lua"):read("a")
    assert.is_true(select(2, text:gsub("\n", "")) <= 60)
    assert.matches("return op.define {", text, 1, true)
    for _, pes in ipairs({ "1", "2", "8", "32" }) do
      local out = sink()
      assert.equal(0, cli.main({ "examples/put_allgather.lua", "--pes", pes, "--tool", "all", "-w", "0",
                                 "-n", "1" }, out, out))
      local report = out:text()
      assert.matches("check shmemlab put_allgather: 0 wrong elements", report, 1, true)
      assert.matches("put_allgather: ERROR SUMMARY: 0 errors", report, 1, true)
      assert.matches("baseline: HCCL AllGather", report, 1, true)
    end
  end)

  it("tell the author of an op whose baseline does not exist, in the header", function()
    local runner = require("shmemlab.runner")
    local op = dofile("examples/my_broadcast.lua")
    assert.equal("broadcast", op.baseline)
    local c = runner.config(op, { pes = 2 })
    assert.matches("| baseline hccl |", runner.config_text(c, op), 1, true)
    for _, b in ipairs({ false, "no_such_baseline" }) do
      op.baseline = b or nil
      local want = "/hccl/" .. (b or "my_broadcast") .. ".lua: name one with op.define{baseline = ...})"
      local header = runner.config_text(c, op)
      assert.matches("| baseline none (no ", header, 1, true)
      assert.matches(want, header, 1, true)
      assert.is_nil(runner.load_baseline(op))
    end
    op.baseline = "ops/hccl/broadcast.lua"                        -- a path works too
    assert.equal("hccl_broadcast", runner.load_baseline(op).name)
    assert.matches("| baseline hccl |", runner.config_text(c, op), 1, true)
    assert.matches("| baseline none |", runner.config_text(runner.config(op, { pes = 2,
      baseline = "none" }), op), 1, true)
  end)

  it("halving the HCCS links makes my_broadcast slower, two servers slower still", function()
    local function run(args)
      local out = sink()
      local argv = { "examples/my_broadcast.lua", "-w", "1", "-n", "2" }
      for _, a in ipairs(args) do argv[#argv + 1] = a end
      assert.equal(0, cli.main(argv, out, out))
      return latency(out:text())
    end
    local base = run({ "--pes", "8" })
    local half = run({ "--pes", "8", "--set", "hccs_GBps=14" })
    local rdma = run({ "--pes", "16" })
    assert.is_true(half > base)
    assert.is_true(rdma > base)
  end)
end)
