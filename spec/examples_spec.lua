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
    assert.matches("baseline: none", text, 1, true)
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
