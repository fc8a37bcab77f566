-- The newcomer's path in examples/ keeps working: the seed's allgather on 2, 4
-- and 8 PEs, and the user-written broadcast run through run_op.lua, whose
-- frames and profile change react as the README says.
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
