-- ops/p2p.lua and its baseline ops/hccl/p2p.lua: src's input lands in dst's
-- output on 2, 3, 8 and 16 PEs (16 = two servers over RDMA), by put and by
-- get, with src < dst and src > dst, in every dtype, at 1 element, an odd
-- size, beyond the HCCL buffer, beyond the symmetric budget and beyond the
-- UB; frames are present or explained; a corrupted output is caught.
local runner = require("shmemlab.runner")
local lab = require("shmemlab")

local DTYPES = { "int8", "int16", "int32", "int64", "uint8", "fp16", "bf16", "fp32" }
local PES = { 2, 3, 8, 16 }
local MODES = { "put", "get" }

-- one measured run of p2p and its baseline (1 warm-up, 1 iteration)
local function run(opts)
  opts.warmup, opts.iters = 1, 1
  return runner.run("p2p", opts)
end

-- zero wrong elements in the op and its baseline, frames present or explained
local function assert_right(r, what)
  local function msg(name, ch)
    return string.format("%s %s: %d wrong, first at %s on PE %s (expected %s, got %s)", what,
      name, ch.wrong, tostring(ch.index), tostring(ch.pe), tostring(ch.expected),
      tostring(ch.actual))
  end
  assert.are.equal(0, r.shmem.check.wrong, msg("p2p", r.shmem.check))
  assert.is_not_nil(r.baseline, what .. ": no baseline measured")
  assert.are.equal(0, r.baseline.check.wrong, msg("hccl_p2p", r.baseline.check))
  assert.is_nil(r.frames.error, what .. ": " .. tostring(r.frames.error))
end

-- an element count of about 2.5 times bytes
local function beyond(bytes, dtype)
  return 2 * bytes // lab.core.dtype_size(dtype) + 3
end

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
          assert.is_true(r.baseline.launches / r.config.iters > 1)
          assert.are.equal(1, r.shmem.launches)
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
    assert.is_truthy(tostring(err):find("dst_pe 2 is not a PE", 1, true))
    ok, err = pcall(run, { pes = 2, mode = "push", count = 8 })
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("mode must be 'put' or 'get'", 1, true))
  end)

  it("names every frame kind it does not use, in both modes", function()
    local F = lab.frames
    local want = { put = { F.REMOTE_PUT_GET, F.SIGNAL_WAIT, F.FINALIZE },
                   get = { F.COPY_IN, F.REMOTE_PUT_GET, F.SIGNAL_WAIT } }
    for _, mode in ipairs(MODES) do
      local r = run{ pes = 8, count = 1003, mode = mode, src_pe = 6, dst_pe = 1 }
      local used = {}
      for _, row in ipairs(r.frames.rows) do used[row.id] = row.used end
      for _, id in ipairs(want[mode]) do
        assert.is_true(used[id], mode .. ": frame " .. id .. " unused")
      end
      for _, row in ipairs(r.frames.rows) do
        if not row.used then assert.is_string(row.reason) end
      end
    end
  end)

  it("catches one corrupted output element, with its index and PE", function()
    local r = run{ pes = 8, dtype = "int32", count = 1003, src_pe = 6, dst_pe = 1 }
    assert_right(r, "before the corruption")
    -- dst 1 holds src 6's input: iota over the machine, 6 * 1003 + i
    for _, res in ipairs({ r.shmem, r.baseline }) do
      res.state.output:on(1):sub(1002, 1):fill("const", -7)
      local wrong, index, pe, expected, actual = res.op.check(res.machine, r.config, res.state)
      assert.are.equal(1, wrong)
      assert.are.equal(1002, index)
      assert.are.equal(1, pe)
      assert.are.equal(6 * 1003 + 1002, expected)
      assert.are.equal(-7, actual)
    end
  end)
end)
