-- Shared helpers of the operator specs (spec/ops_*_spec.lua): runs of an op and
-- its HCCL-style baseline through the runner, and the assertions on them.
-- require("spec.helpers.ops") from the repo root (busted keeps ./?.lua).

local lab = require("shmemlab")
local runner = require("shmemlab.runner")
local report = require("shmemlab.report")
local luassert = require("luassert")   -- busted's assert is not a global here

local H = { lab = lab }

-- every element type, the PE counts (16 = two servers over RDMA), the reductions
H.DTYPES = { "int8", "int16", "int32", "int64", "uint8", "fp16", "bf16", "fp32" }
H.PES = { 2, 3, 8, 16 }
H.REDUCES = { "sum", "max", "min" }

-- one measured run of op name and its baseline (warm-up 1, iters 1 unless opts say;
-- the HCCL-style baseline unless opts.baseline names another)
function H.run(name, opts)
  opts.warmup, opts.iters = opts.warmup or 1, opts.iters or 1
  opts.baseline = opts.baseline or "hccl"
  return runner.run(name, opts)
end

-- a count of dtype elements per shard (shards of the input, default 1) whose
-- input is a little over twice bytes: beyond a buffer of bytes, not whole blocks
function H.beyond(bytes, dtype, shards)
  return 2 * bytes // ((shards or 1) * lab.core.dtype_size(dtype)) + 3
end

-- the frame report of a measured result (r.shmem or r.baseline) of run config c,
-- made as the runner makes the op's: ok, rows (or the error)
function H.frame_report(res, c)
  return pcall(report.frame_report, { cycle2us = c.profile.cycle2us,
    e2e_us = res.e2e_us / math.max(1, res.launches // c.iters), launches = res.launches,
    rows = res.frames, reasons = res.op.unused, frames = lab.frames })
end

-- the message of a check ch of name in what: its wrong count and the first one
local function wrong_msg(what, name, ch)
  return string.format("%s %s: %d wrong, first at %s on PE %s (expected %s, got %s)", what,
    name, ch.wrong, tostring(ch.index), tostring(ch.pe), tostring(ch.expected),
    tostring(ch.actual))
end

-- zero wrong elements in a run's op (a port run alone, without a baseline)
function H.assert_landed(r, what)
  luassert.are.equal(0, r.shmem.check.wrong, wrong_msg(what, r.op.name, r.shmem.check))
end

-- zero wrong elements in the op and in its baseline (which was measured), and
-- both frame reports made (every frame used or explained)
function H.assert_exact(r, what)
  local function msg(name, ch) return wrong_msg(what, name, ch) end
  luassert.are.equal(0, r.shmem.check.wrong, msg(r.op.name, r.shmem.check))
  luassert.is_not_nil(r.baseline, what .. ": no baseline measured")
  luassert.are.equal(0, r.baseline.check.wrong, msg(r.baseline.op.name, r.baseline.check))
  luassert.is_nil(r.frames.error, what .. ": frame report: " .. tostring(r.frames.error))
  local ok, rows = H.frame_report(r.baseline, r.config)
  luassert.is_true(ok, what .. ": baseline frame report: " .. tostring(rows))
end

-- the op's and the baseline's frame reports have the 5 frame kinds, each used or explained
function H.assert_frame_rows(r, what)
  local ok, rows = H.frame_report(r.baseline, r.config)
  luassert.is_true(ok, what .. ": baseline frame report: " .. tostring(rows))
  for _, set in ipairs({ r.frames.rows, rows }) do
    luassert.are.equal(5, #set)
    for _, row in ipairs(set) do
      luassert.is_true(row.used or (type(row.reason) == "string" and row.reason ~= ""),
                       what .. ": frame " .. row.id .. " neither used nor explained")
    end
  end
end

-- one launch of the op per iteration, more than one of its baseline (whole ones)
function H.assert_split(r, what)
  luassert.are.equal(1, r.shmem.launches / r.config.iters, what)
  luassert.is_true(r.baseline.launches // r.config.iters > 1, what)
end

-- the op's frames ids are used, and every frame it does not use has a reason
function H.assert_frames_used(r, ids, what)
  local used = {}
  for _, row in ipairs(r.frames.rows) do used[row.id] = row.used end
  for _, id in ipairs(ids) do
    luassert.is_true(used[id], (what or "") .. ": frame " .. id .. " unused")
  end
  for _, row in ipairs(r.frames.rows) do
    if not row.used then luassert.is_string(row.reason) end
  end
end

-- value (default -7) planted at index at of PE pe's output is caught by the
-- op's and the baseline's check: 1 wrong, that index and PE, expected want
-- (want nil: anything but value), got value
function H.assert_catches(r, pe, at, want, value)
  value = value or -7
  for _, res in ipairs({ r.shmem, r.baseline }) do
    res.state.output:on(pe):sub(at, 1):fill("const", value)
    local wrong, index, on, expected, actual = res.op.check(res.machine, r.config, res.state)
    luassert.are.same({ 1, at, pe, value }, { wrong, index, on, actual })
    if want == nil then
      luassert.are_not.equal(value, expected)
    else
      luassert.are.equal(want, expected)
    end
  end
end

-- the label of a reduction's run: op, reduction, dtype, PEs, count
local function reduction_label(r)
  local c = r.config
  return string.format("%s %s %s pes=%d count=%d", r.op.name, c.reduce, c.dtype, c.pes, c.count)
end

-- a reduction's run is exact, its frames explained, its accumulator (the one-step
-- designs'; the relays keep none) back at the identity
local function assert_reduced(r)
  local what = reduction_label(r)
  H.assert_exact(r, what)
  H.assert_frame_rows(r, what)
  local s = r.shmem.state
  if s.acc then
    luassert.are.equal(0, (s.acc:compare(s.identity)), what .. ": accumulator not reset")
  end
end

-- the cases the pull ops share (per_shard: the input is n_pes shards, as
-- alltoall's; else one, as allgather's), as {title, fn} pairs for it(): on
-- 2, 3, 8 and 16 PEs and every dtype, 1 and 1003 elements per shard in one
-- launch, inputs beyond the HCCL buffer (several baseline launches), rounds
-- beyond the symmetric budget (one launch, staged), a share beyond a 256-byte
-- UB and beyond the real one, frames used or explained, and a corrupted
-- element of PE 5's slot 3 caught, whose right value is want(pes, count)
function H.shard_cases(name, per_shard, want)
  local cases = {}
  local function run(o) return H.run(name, o) end
  local function case(title, fn) cases[#cases + 1] = { title, fn } end
  for _, pes in ipairs(H.PES) do
    local shards = per_shard and pes or 1
    for _, dt in ipairs(H.DTYPES) do
      case(string.format("moves 1 and 1003 %s elements per shard on %d PEs", dt, pes), function()
        for _, count in ipairs({ 1, 1003 }) do
          local r = run{ pes = pes, dtype = dt, count = count }
          H.assert_exact(r, string.format("%d PEs %s count %d", pes, dt, count))
          luassert.are.equal(1, r.shmem.launches)
          luassert.are.equal(1, r.baseline.launches)
        end
      end)
      case(string.format("splits %s beyond the HCCL buffer into launches on %d PEs", dt, pes),
        function()
          local r = run{ pes = pes, dtype = dt, count = H.beyond(4096, dt, shards),
                         overrides = { hccl_buffer_bytes = 4096 } }
          H.assert_exact(r, string.format("%d PEs %s beyond the HCCL buffer", pes, dt))
          H.assert_split(r)
        end)
      case(string.format("runs %s beyond the symmetric budget in rounds on %d PEs", dt, pes),
        function()
          local count = H.beyond(1024, dt, shards)
          local r = run{ pes = pes, dtype = dt, count = count, sym_bytes = 1024 }
          H.assert_exact(r, string.format("%d PEs %s beyond the symmetric budget", pes, dt))
          luassert.is_true(r.shmem.describe.chunk_elems < count)
          luassert.are.equal(1, r.shmem.launches)
        end)
    end
    case(string.format("stages shares larger than the UB on %d PEs", pes), function()
      local r = run{ pes = pes, dtype = H.DTYPES[pes % #H.DTYPES + 1], count = 1003,
                     ub_bytes = 256 }
      H.assert_exact(r, string.format("%d PEs, 256-byte UB", pes))
    end)
  end
  case("moves shards larger than the real UB (190 KiB) per block", function()
    local r = run{ pes = 3, dtype = "int32", count = 100003, block_dim = 3 }
    H.assert_exact(r, "3 PEs, 3 blocks, 100003 int32 per shard")
    luassert.is_true(100003 * 4 > r.shmem.describe.ub_bytes)   -- one block per source
  end)
  case("names every frame kind it does not use; a staged run copies in", function()
    local F = lab.frames
    H.assert_frames_used(run{ pes = 8, count = 1003 }, { F.REMOTE_PUT_GET, F.SIGNAL_WAIT })
    H.assert_frames_used(run{ pes = 3, count = 1003, sym_bytes = 1024 },
                         { F.COPY_IN, F.REMOTE_PUT_GET, F.SIGNAL_WAIT }, "staged")
  end)
  case("catches one corrupted output element, with its index and PE", function()
    local pes, count = 8, 1003
    local r = run{ pes = pes, dtype = "int32", count = count }
    H.assert_exact(r, "before the corruption")
    H.assert_catches(r, 5, 3 * count + 7, want(pes, count))
  end)
  return cases
end

-- the cases allreduce and reduce_scatter (per_shard: its input is n_pes shards)
-- share, as {title, fn} pairs for it(): every dtype and reduction at an odd size,
-- one element, pieces beyond the UB, inputs beyond the HCCL buffer, rounds beyond
-- the symmetric budget, a wrong element caught, an unknown reduction rejected
function H.reduction_cases(name, per_shard)
  local DT, RED, PES = H.DTYPES, H.REDUCES, H.PES
  local function run(o) return H.run(name, o) end
  return {
    { "is exact for every dtype and every reduction at an odd size (1003)", function()
      for i, dt in ipairs(DT) do
        for j, red in ipairs(RED) do
          assert_reduced(run{ pes = PES[(i + j) % #PES + 1], dtype = dt, reduce = red,
                              count = 1003 })
        end
      end
    end },

    { "is exact for one element" .. (per_shard and " per shard" or "")
      .. " on 2, 3, 8 and 16 PEs, every reduction", function()
      for i, pes in ipairs(PES) do
        for j, red in ipairs(RED) do
          assert_reduced(run{ pes = pes, dtype = DT[(3 * i + j) % #DT + 1], reduce = red,
                              count = 1 })
        end
      end
    end },

    { "is exact when a piece is larger than the UB (ub_bytes 256)", function()
      for i, pes in ipairs(PES) do
        assert_reduced(run{ pes = pes, dtype = DT[2 * i], reduce = RED[i % 3 + 1],
                            count = 4099, ub_bytes = 256 })
      end
    end },

    { "splits inputs beyond the HCCL buffer into several baseline launches", function()
      for i, pes in ipairs(PES) do
        local dt = DT[2 * i - 1]
        local r = run{ pes = pes, dtype = dt, reduce = RED[i % 3 + 1],
                       count = H.beyond(4096, dt, per_shard and pes),
                       overrides = { hccl_buffer_bytes = 4096 } }
        assert_reduced(r)
        H.assert_split(r, reduction_label(r))
      end
    end },

    { "runs in rounds inside one launch beyond the symmetric budget", function()
      for i, pes in ipairs(PES) do
        local r = run{ pes = pes, dtype = DT[(2 * i + 3) % #DT + 1],
                       reduce = RED[(i + 1) % 3 + 1], count = 1003, sym_bytes = 1024,
                       iters = 2 }
        assert_reduced(r)
        luassert.is_true(r.shmem.state.rounds > 1, reduction_label(r))
        luassert.are.equal(1, r.shmem.launches / r.config.iters)
      end
    end },

    { "catches a deliberately wrong element", function()
      local r = run{ pes = 2, count = 1003 }
      assert_reduced(r)
      H.assert_catches(r, 1, 5, nil, 12345)
    end },

    { "rejects an unknown reduction", function()
      local ok, e = pcall(run, { pes = 2, count = 8, reduce = "prod" })   -- before it runs
      luassert.is_false(ok)
      luassert.equal("usage", require("shmemlab.runner").kind(e), tostring(e))
      luassert.equal("--reduce must be one of sum, max, min, got 'prod'", tostring(e))
    end },
  }
end

return H
