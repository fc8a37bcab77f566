-- ops/allgather.lua and its baseline ops/hccl/allgather.lua: every element lands
-- where it belongs on 2, 3, 8 and 16 PEs (16 = two servers over RDMA), in every
-- dtype, at 1 element, an odd size, beyond the HCCL buffer, beyond the
-- symmetric budget and beyond the UB; frames are present or explained; a
-- corrupted output is caught.
local H = require("spec.helpers.ops")

describe("allgather", function()
  -- PE 5's slot 3 holds PE 3's input; the input is iota over the machine
  local function want(_, count) return 3 * count + 7 end
  for _, case in ipairs(H.shard_cases("allgather", false, want)) do it(case[1], case[2]) end
end)

-- the card relay ops/allgather.lua takes on A3 (shmemlab.relay.applies): every element lands
-- on 6 and 16 dies, with the input symmetric and (a budget that holds only the output)
-- copied into the own output slot first, under every checker; 4 dies (two cards) and small
-- shards keep the one-step design, which the relay, forced, matches in data on 4 dies too
describe("allgather card relay on A3", function()
  local relay = require("shmemlab.relay")
  local function run(o)
    o.soc, o.baseline = "Ascend910_93", "none"
    return H.run("allgather", o)
  end
  local function exact(r, what)
    assert.are.equal(0, r.shmem.check.wrong, what)
    assert.is_nil(r.frames.error, what)
    if r.config.check then assert.are.equal(0, r.shmem.sanitizer.errors, what) end
  end

  it("is taken from three cards and 1.25 MiB of outside shards per port", function()
    local function algo(pes, count, o)
      o = o or {}
      o.pes, o.count, o.timing_only = pes, count, true
      return run(o).shmem.describe.algorithm
    end
    assert.matches("^card relay: signal", algo(6, 163840))            -- 2 x 640 KiB
    assert.matches("^signal ready", algo(6, 163832))                  -- 32 bytes fewer
    assert.matches("^signal ready", algo(4, 4 * 1024 * 1024))         -- two cards
    assert.matches("^signal ready", algo(16, 4096))
    assert.matches("^signal ready", algo(16, 49155, { block_dim = 15 }))
    assert.matches("^card relay: copy into", algo(32, 4 * 1024 * 1024))  -- output = budget
    assert.matches("^stage", algo(8, 1024 * 1024, { sym_bytes = 2 * 1024 * 1024 }))  -- rounds
  end)

  it("moves every element on 6 and 16 dies, input symmetric or not, under --tool all",
    function()
      exact(run{ pes = 6, count = 163840, check = "all" }, "6 dies")
      exact(run{ pes = 6, count = 163840, sym_bytes = 4000000, check = "all" }, "6 dies copied")
      exact(run{ pes = 6, count = 655363, dtype = "int8", iters = 2 }, "6 dies int8")
      exact(run{ pes = 16, count = 49155, dtype = "int32" }, "16 dies")
      exact(run{ pes = 16, count = 49155, dtype = "bf16", iters = 2 }, "16 dies bf16")
    end)

  it("moves every element on 4 dies when forced (a small shard, two cards)", function()
    local cards, bytes = relay.MIN_CARDS, relay.MIN_PORT_BYTES
    relay.MIN_CARDS, relay.MIN_PORT_BYTES = 2, 0
    local ok, r = pcall(run, { pes = 4, count = 1003, check = "all" })
    relay.MIN_CARDS, relay.MIN_PORT_BYTES = cards, bytes
    assert.is_true(ok, tostring(r))
    assert.matches("^card relay", r.shmem.describe.algorithm)
    exact(r, "4 dies forced")
  end)
end)
