-- ops/p2p.lua and its baseline ops/hccl/p2p.lua: src's input lands in dst's
-- output on 2, 3, 8 and 16 PEs (16 = two servers over RDMA), by put and by
-- get, with src < dst and src > dst, in every dtype, at 1 element, an odd
-- size, beyond the HCCL buffer, beyond the symmetric budget and beyond the
-- UB; frames are present or explained; a corrupted output is caught.
local H = require("spec.helpers.ops")
local lab = H.lab

local DTYPES, PES, beyond = H.DTYPES, H.PES, H.beyond
local MODES = { "put", "get" }
local assert_right = H.assert_exact

-- one measured run of p2p and its baseline (1 warm-up, 1 iteration)
local function run(opts) return H.run("p2p", opts) end

-- (src, dst) pairs on n PEs: forward, backward (src > dst; across the servers on 16)
local function pairs_of(n)
  return { { 0, 1 }, { n - 1, n // 2 - 1 } }
end

describe("p2p", function()
  for _, pes in ipairs(PES) do
    for _, dt in ipairs(DTYPES) do
      for _, mode in ipairs(MODES) do
        it(string.format("%ss 1 and 1003 %s forward and backward on %d PEs", mode, dt, pes),
          function()
            for _, pair in ipairs(pairs_of(pes)) do
              for _, count in ipairs({ 1, 1003 }) do
                local r = run{ pes = pes, dtype = dt, count = count, mode = mode,
                               src_pe = pair[1], dst_pe = pair[2] }
                assert_right(r, string.format("%d PEs %s %s %d -> %d count %d", pes, dt, mode,
                                              pair[1], pair[2], count))
                assert.are.equal(1, r.shmem.launches)
                assert.are.equal(1, r.baseline.launches)
              end
            end
          end)
      end

      it(string.format("splits %s beyond the HCCL buffer into launches on %d PEs", dt, pes),
        function()
          local r = run{ pes = pes, dtype = dt, count = beyond(4096, dt), src_pe = pes - 1,
                         dst_pe = 0, overrides = { hccl_buffer_bytes = 4096 } }
          assert_right(r, string.format("%d PEs %s beyond the HCCL buffer", pes, dt))
          H.assert_split(r)
        end)

      it(string.format("runs %s beyond the symmetric budget in rounds on %d PEs", dt, pes),
        function()
          local count = beyond(1024, dt)
          for _, mode in ipairs(MODES) do
            local r = run{ pes = pes, dtype = dt, count = count, sym_bytes = 1024, mode = mode,
                           src_pe = pes - 1, dst_pe = 0 }
            assert_right(r, string.format("%d PEs %s %s beyond the symmetric budget", pes, dt,
                                          mode))
            assert.is_true(r.shmem.describe.chunk_elems < count)
            assert.are.equal(1, r.shmem.launches)
          end
        end)
    end

    it(string.format("stages shares larger than the UB on %d PEs", pes), function()
      for _, mode in ipairs(MODES) do
        local r = run{ pes = pes, dtype = DTYPES[pes % #DTYPES + 1], count = 1003,
                       ub_bytes = 256, mode = mode, src_pe = pes - 1, dst_pe = 0 }
        assert_right(r, string.format("%d PEs %s, 256-byte UB", pes, mode))
      end
    end)
  end

  it("moves shares larger than the real UB (190 KiB) per block, in rounds", function()
    for _, mode in ipairs(MODES) do
      local r = run{ pes = 2, dtype = "int16", count = 300001, block_dim = 1, mode = mode,
                     src_pe = 1, dst_pe = 0, sym_bytes = 256 * 1024 }
      assert_right(r, "2 PEs, 1 block, 300001 int16, " .. mode)
      assert.is_true(r.shmem.describe.chunk_elems * 2 > r.shmem.describe.ub_bytes)
      assert.is_true(r.shmem.describe.chunk_elems < 300001)
    end
  end)

  it("sends to itself when src == dst", function()
    for _, mode in ipairs(MODES) do
      local r = run{ pes = 3, count = 1003, mode = mode, src_pe = 2, dst_pe = 2,
                     sym_bytes = 1024 }
      assert_right(r, "2 -> 2, " .. mode)
    end
  end)

  it("rejects a PE that is not there and an unknown mode", function()
    local ok, err = pcall(run, { pes = 2, src_pe = 0, dst_pe = 2, count = 8 })
    assert.is_false(ok)
    assert.equal("--dst must be an integer in 0..1, got 2", tostring(err))
    ok, err = pcall(run, { pes = 2, mode = "push", count = 8 })
    assert.is_false(ok)
    assert.equal("--mode must be one of put, get, got 'push'", tostring(err))
  end)

  it("names every frame kind it does not use, in both modes", function()
    local F = lab.frames
    local want = { put = { F.REMOTE_PUT_GET, F.SIGNAL_WAIT, F.FINALIZE },
                   get = { F.COPY_IN, F.REMOTE_PUT_GET, F.SIGNAL_WAIT } }
    for _, mode in ipairs(MODES) do
      local r = run{ pes = 8, count = 1003, mode = mode, src_pe = 6, dst_pe = 1 }
      H.assert_frames_used(r, want[mode], mode)
    end
  end)

  it("catches one corrupted output element, with its index and PE", function()
    local r = run{ pes = 8, dtype = "int32", count = 1003, src_pe = 6, dst_pe = 1 }
    assert_right(r, "before the corruption")
    -- dst 1 holds src 6's input: iota over the machine, 6 * 1003 + i
    H.assert_catches(r, 1, 1002, 6 * 1003 + 1002)
  end)
end)
