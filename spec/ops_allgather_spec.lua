-- ops/allgather.lua and its baseline ops/hccl/allgather.lua: every element lands
-- where it belongs on 2, 3, 8 and 16 PEs (16 = two servers over RDMA), in every
-- dtype, at 1 element, an odd size, beyond the HCCL buffer, beyond the
-- symmetric budget and beyond the UB; frames are present or explained; a
-- corrupted output is caught.
local H = require("spec.helpers.ops")
local lab = H.lab

local DTYPES, PES = H.DTYPES, H.PES
local assert_right = H.assert_exact

-- one measured run of alltoall and its baseline (1 warm-up, 1 iteration)
local function run(opts) return H.run("allgather", opts) end

-- a count whose input is a little over twice bytes
local function beyond(bytes, _, dtype) return H.beyond(bytes, dtype, 1) end

describe("allgather", function()
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
          H.assert_split(r)
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

  it("moves inputs larger than the real UB (190 KiB) per block", function()
    local r = run{ pes = 3, dtype = "int32", count = 100003, block_dim = 3 }
    assert_right(r, "3 PEs, 3 blocks, 100003 int32 per PE")
    assert.is_true(100003 * 4 > r.shmem.describe.ub_bytes)   -- one block per source
  end)

  it("names every frame kind it does not use", function()
    local r = run{ pes = 8, count = 1003 }
    H.assert_frames_used(r, { lab.frames.REMOTE_PUT_GET, lab.frames.SIGNAL_WAIT })
    local staged = run{ pes = 3, count = 1003, sym_bytes = 1024 }
    H.assert_frames_used(staged, { lab.frames.COPY_IN, lab.frames.REMOTE_PUT_GET,
                                   lab.frames.SIGNAL_WAIT }, "staged")
  end)

  it("catches one corrupted output element, with its index and PE", function()
    local pes, count = 8, 1003
    local r = run{ pes = pes, dtype = "int32", count = count }
    assert_right(r, "before the corruption")
    -- PE 5's slot 3 holds PE 3's input; the input is iota over the machine
    H.assert_catches(r, 5, 3 * count + 7, 3 * count + 7)
  end)
end)
