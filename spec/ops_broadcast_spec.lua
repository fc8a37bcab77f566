-- ops/broadcast.lua and its baseline ops/hccl/broadcast.lua: every PE ends
-- with the root's input on 2, 3, 8 and 16 PEs (16 = two servers over RDMA),
-- from root 0 and root n - 1, in every dtype, at 1 element, an odd size,
-- beyond the HCCL buffer, beyond the symmetric budget and beyond the UB;
-- frames are present or explained; a corrupted output is caught.
local H = require("spec.helpers.ops")
local lab = H.lab

local DTYPES, PES, beyond = H.DTYPES, H.PES, H.beyond
local assert_right = H.assert_exact

-- one measured run of broadcast and its baseline (1 warm-up, 1 iteration)
local function run(opts) return H.run("broadcast", opts) end

describe("broadcast", function()
  for _, pes in ipairs(PES) do
    for _, dt in ipairs(DTYPES) do
      it(string.format("sends 1 and 1003 %s from roots 0 and %d on %d PEs", dt, pes - 1, pes),
        function()
          for _, root in ipairs({ 0, pes - 1 }) do
            for _, count in ipairs({ 1, 1003 }) do
              local r = run{ pes = pes, dtype = dt, count = count, root = root }
              assert_right(r, string.format("%d PEs %s count %d root %d", pes, dt, count, root))
              assert.are.equal(1, r.shmem.launches)
              assert.are.equal(1, r.baseline.launches)
            end
          end
        end)

      it(string.format("splits %s beyond the HCCL buffer into launches on %d PEs", dt, pes),
        function()
          local r = run{ pes = pes, dtype = dt, count = beyond(4096, dt), root = pes - 1,
                         overrides = { hccl_buffer_bytes = 4096 } }
          assert_right(r, string.format("%d PEs %s beyond the HCCL buffer", pes, dt))
          H.assert_split(r)
        end)

      it(string.format("runs %s beyond the symmetric budget in rounds on %d PEs", dt, pes),
        function()
          local count = beyond(1024, dt)
          local r = run{ pes = pes, dtype = dt, count = count, sym_bytes = 1024 }
          assert_right(r, string.format("%d PEs %s beyond the symmetric budget", pes, dt))
          assert.is_true(r.shmem.describe.chunk_elems < count)
          assert.are.equal(1, r.shmem.launches)
        end)
    end

    it(string.format("signals chunk by chunk when a share is larger than the UB on %d PEs", pes),
      function()
        local r = run{ pes = pes, dtype = DTYPES[pes % #DTYPES + 1], count = 1003,
                       ub_bytes = 256, root = pes - 1 }
        assert_right(r, string.format("%d PEs, 256-byte UB", pes))
      end)
  end

  it("moves shares larger than the real UB (190 KiB) per block", function()
    local r = run{ pes = 3, dtype = "fp32", count = 100003, block_dim = 1, root = 1 }
    assert_right(r, "3 PEs, 1 block, 100003 fp32")
    assert.is_true(100003 * 4 > r.shmem.describe.ub_bytes)
  end)

  it("rejects a root that is not a PE", function()
    local ok, err = pcall(run, { pes = 4, root = 4, count = 8 })
    assert.is_false(ok)
    assert.equal("--root must be an integer in 0..3, got 4", tostring(err))
  end)

  it("names every frame kind it does not use", function()
    local r = run{ pes = 8, count = 1003, root = 7 }
    H.assert_frames_used(r, { lab.frames.COPY_IN, lab.frames.REMOTE_PUT_GET,
                              lab.frames.SIGNAL_WAIT, lab.frames.FINALIZE })
  end)

  it("catches one corrupted output element, with its index and PE", function()
    local r = run{ pes = 8, dtype = "int32", count = 1003, root = 7 }
    assert_right(r, "before the corruption")
    -- every PE holds root 7's input: iota over the machine, 7 * 1003 + i
    H.assert_catches(r, 2, 500, 7 * 1003 + 500)
  end)
end)
