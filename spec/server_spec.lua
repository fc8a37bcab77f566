-- The server relays' NIC side on A2 (doc/hier.md, "The NIC side: the RoCE engine"):
-- allgather's and broadcast's NIC gets and reduce_scatter's fetch of the other servers'
-- sums are RoCE engine gets, not MTE gets through the UB; reduce_scatter takes a second
-- NIC block on three servers or more when its slices are short. allreduce (both relays in
-- turn) reaches 70% of its bound at 16 MiB on 64 and 128 PEs.
local H = require("spec.helpers.ops")
local relay = require("shmemlab.relay")

local MiB16 = 4 * 1024 * 1024          -- int32 elements of 16 MiB

-- a timing-only run of op without a baseline, unprofiled: its result
local function timed(op, o)
  o.timing_only, o.baseline, o.prof_pe, o.warmup, o.iters = true, "none", -1, 0, 1
  return H.run(op, o)
end

-- a checked run of op's server relay under --tool all: every element right, nothing
-- reported; the result
local function exact(op, o, what)
  o.baseline, o.algo, o.check = "none", "hier", "all"
  local r = H.run(op, o)
  assert.are.equal(0, r.shmem.check.wrong, what)
  assert.are.equal(0, r.shmem.sanitizer.errors, what)
  return r
end

describe("server relays' NIC side on A2", function()
  it("allreduce reaches 70% of its bound at 16 MiB on 64 and 128 PEs", function()
    for pes, want in pairs({ [64] = "209.924", [128] = "220.279" }) do
      local r = timed("allreduce", { pes = pes, count = MiB16 })
      assert.matches("server relays", r.shmem.describe.algorithm, 1, true)
      assert.matches("by the RoCE engine", r.shmem.describe.algorithm, 1, true)
      local s = r.metrics.summary
      assert.are.equal(want, string.format("%.3f", s.latency_us), pes .. " PEs")
      assert.is_true(s.efficiency_pct >= 70 and s.efficiency_pct <= 100,
                     pes .. " PEs: " .. s.efficiency_pct)
    end
  end)

  it("reduce_scatter takes a second NIC block on three servers with short slices", function()
    local two = exact("reduce_scatter", { pes = 16, count = 2003 }, "16 PEs")
    assert.matches("(1 NIC block)", two.shmem.describe.algorithm, 1, true)
    local three = exact("reduce_scatter", { pes = 24, count = 1501, reduce = "max",
                                            dtype = "fp16", iters = 2 }, "24 PEs")
    assert.matches("(2 NIC blocks)", three.shmem.describe.algorithm, 1, true)
    local pushed = exact("reduce_scatter", { pes = 32, count = 1024, reduce = "min",
                                             sym_bytes = 100000 }, "32 PEs pushed")
    assert.matches("(2 NIC blocks)", pushed.shmem.describe.algorithm, 1, true)
    -- whole pieces: long gets, the block keeps moving partials
    local long = timed("reduce_scatter", { pes = 24, count = relay.SERVER_PIECES
                                           * relay.SERVER_PIECE_BYTES // 4 })
    assert.matches("(1 NIC block)", long.shmem.describe.algorithm, 1, true)
  end)

  it("allreduce, allgather and broadcast move every element by the RoCE engine", function()
    local ar = exact("allreduce", { pes = 24, count = 24576, dtype = "bf16", iters = 2 },
                     "allreduce 24")
    assert.matches("slices by the RoCE engine into a window", ar.shmem.describe.algorithm, 1, true)
    local ag = exact("allgather", { pes = 32, count = 1003, dtype = "int8" }, "allgather 32")
    assert.matches("by the RoCE engine into a window", ag.shmem.describe.algorithm, 1, true)
    local bc = exact("broadcast", { pes = 32, count = 9001, root = 21, iters = 2 },
                     "broadcast 32 root 21")
    assert.matches("by RoCE engine gets (the scatter)", bc.shmem.describe.algorithm, 1, true)
  end)
end)
