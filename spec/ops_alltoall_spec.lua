-- ops/alltoall.lua and its baseline ops/hccl/alltoall.lua: every element lands
-- where it belongs on 2, 3, 8 and 16 PEs (16 = two servers over RDMA), in every
-- dtype, at 1 element, an odd size, beyond the HCCL buffer, beyond the
-- symmetric budget and beyond the UB; frames are present or explained; a
-- corrupted output is caught.
local runner = require("shmemlab.runner")
local lab = require("shmemlab")

local DTYPES = { "int8", "int16", "int32", "int64", "uint8", "fp16", "bf16", "fp32" }
local PES = { 2, 3, 8, 16 }

-- one measured run of alltoall and its baseline (1 warm-up, 1 iteration)
local function run(opts)
  opts.warmup, opts.iters = 1, 1
  return runner.run("alltoall", opts)
end

-- zero wrong elements in the op and its baseline, frames present or explained
local function assert_right(r, what)
  local function msg(name, ch)
    return string.format("%s %s: %d wrong, first at %s on PE %s (expected %s, got %s)", what,
      name, ch.wrong, tostring(ch.index), tostring(ch.pe), tostring(ch.expected),
      tostring(ch.actual))
  end
  assert.are.equal(0, r.shmem.check.wrong, msg("alltoall", r.shmem.check))
  assert.is_not_nil(r.baseline, what .. ": no baseline measured")
  assert.are.equal(0, r.baseline.check.wrong, msg("hccl_alltoall", r.baseline.check))
  assert.is_nil(r.frames.error, what .. ": " .. tostring(r.frames.error))
end

-- a shard count whose whole input (n_pes shards) is about 2.5 times bytes
local function beyond(bytes, pes, dtype)
  return 2 * bytes // (pes * lab.core.dtype_size(dtype)) + 3
end

describe("alltoall", function()
  for _, pes in ipairs(PES) do
    for _, dt in ipairs(DTYPES) do
      it(string.format("moves 1 and 1003 %s elements per shard on %d PEs", dt, pes), function()
        for _, count in ipairs({ 1, 1003 }) do
          local r = run{ pes = pes, dtype = dt, count = count }
          assert_right(r, string.format("%d PEs %s count %d", pes, dt, count))
          assert.are.equal(1, r.shmem.launches)
          assert.are.equal(1, r.baseline.launches)
        end
      end)

      it(string.format("splits %s beyond the HCCL buffer into launches on %d PEs", dt, pes),
        function()
          local r = run{ pes = pes, dtype = dt, count = beyond(4096, pes, dt),
                         overrides = { hccl_buffer_bytes = 4096 } }
          assert_right(r, string.format("%d PEs %s beyond the HCCL buffer", pes, dt))
          assert.is_true(r.baseline.launches / r.config.iters > 1)
          assert.are.equal(1, r.shmem.launches)
        end)

      it(string.format("runs %s beyond the symmetric budget in rounds on %d PEs", dt, pes),
        function()
          local count = beyond(1024, pes, dt)
          local r = run{ pes = pes, dtype = dt, count = count, sym_bytes = 1024 }
          assert_right(r, string.format("%d PEs %s beyond the symmetric budget", pes, dt))
          assert.is_true(r.shmem.describe.chunk_elems < count)
          assert.are.equal(1, r.shmem.launches)
        end)
    end

    it(string.format("stages shares larger than the UB on %d PEs", pes), function()
      local r = run{ pes = pes, dtype = DTYPES[pes % #DTYPES + 1], count = 1003, ub_bytes = 256 }
      assert_right(r, string.format("%d PEs, 256-byte UB", pes))
    end)
  end

  it("moves shards larger than the real UB (190 KiB) per block", function()
    local r = run{ pes = 3, dtype = "int32", count = 100003, block_dim = 3 }
    assert_right(r, "3 PEs, 3 blocks, 100003 int32 per shard")
    assert.is_true(100003 * 4 > r.shmem.describe.ub_bytes)   -- one block per shard
  end)

  it("names every frame kind it does not use", function()
    local r = run{ pes = 8, count = 1003 }
    local used = {}
    for _, row in ipairs(r.frames.rows) do used[row.id] = row.used end
    assert.is_true(used[lab.frames.REMOTE_PUT_GET] and used[lab.frames.SIGNAL_WAIT]
                   and used[lab.frames.FINALIZE])
    for _, row in ipairs(r.frames.rows) do
      if not row.used then assert.is_string(row.reason) end
    end
  end)

  it("catches one corrupted output element, with its index and PE", function()
    local pes, count = 8, 1003
    local r = run{ pes = pes, dtype = "int32", count = count }
    assert_right(r, "before the corruption")
    -- PE 5's slot 3 holds PE 3's shard 5; the input is iota over the machine
    local at = 3 * count + 7
    local want = 3 * (pes * count) + 5 * count + 7
    for _, res in ipairs({ r.shmem, r.baseline }) do
      res.state.output:on(5):sub(at, 1):fill("const", -7)
      local wrong, index, pe, expected, actual = res.op.check(res.machine, r.config, res.state)
      assert.are.equal(1, wrong)
      assert.are.equal(at, index)
      assert.are.equal(5, pe)
      assert.are.equal(want, expected)
      assert.are.equal(-7, actual)
    end
  end)
end)
