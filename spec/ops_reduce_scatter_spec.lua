-- ops/reduce_scatter.lua and its baseline ops/hccl/reduce_scatter.lua through
-- the runner: every dtype, every reduction, 2/3/8/16 PEs (16 = two servers over
-- RDMA), one element per shard, odd sizes, pieces beyond the UB, inputs beyond
-- the HCCL buffer and outputs beyond the symmetric budget; zero wrong elements
-- and every frame used or explained. A subset of the cross product that still
-- covers every dimension (warm-up 1, iters 1).

local lab = require("shmemlab")
local runner = require("shmemlab.runner")
local report = require("shmemlab.report")

local OP = "reduce_scatter"
local DTYPES = { "int8", "int16", "int32", "int64", "uint8", "fp16", "bf16", "fp32" }
local REDUCES = { "sum", "max", "min" }
local PES = { 2, 3, 8, 16 }

local function run(o)
  o.warmup, o.iters = o.warmup or 1, o.iters or 1
  return runner.run(OP, o)
end

local function label(r)
  local c = r.config
  return string.format("%s %s %s pes=%d count=%d", OP, c.reduce, c.dtype, c.pes, c.count)
end

-- the frame report of the baseline, as the runner makes the op's
local function baseline_frames(r)
  local b, c = r.baseline, r.config
  return report.frame_report{ cycle2us = c.profile.cycle2us,
    e2e_us = b.e2e_us / math.max(1, b.launches // c.iters), launches = b.launches,
    rows = b.frames, reasons = b.op.unused, frames = lab.frames }
end

-- zero wrong elements in the op and its baseline; every frame used or explained
local function assert_good(r)
  local what = label(r)
  local ch, bh = r.shmem.check, r.baseline and r.baseline.check
  assert.is_not_nil(bh, what .. ": no baseline measured")
  assert.are.equal(0, ch.wrong, string.format("%s: shmem %s wrong, first at %s on PE %s: "
    .. "expected %s, got %s", what, ch.wrong, ch.index, ch.pe, ch.expected, ch.actual))
  assert.are.equal(0, bh.wrong, string.format("%s: baseline %s wrong, first at %s on PE %s: "
    .. "expected %s, got %s", what, bh.wrong, bh.index, bh.pe, bh.expected, bh.actual))
  assert.is_nil(r.frames.error, what .. ": frame report: " .. tostring(r.frames.error))
  local ok, rows = pcall(baseline_frames, r)
  assert.is_true(ok, what .. ": baseline frame report: " .. tostring(rows))
  for _, set in ipairs({ r.frames.rows, rows }) do
    assert.are.equal(5, #set)
    for _, row in ipairs(set) do
      assert.is_true(row.used or (type(row.reason) == "string" and row.reason ~= ""),
                     what .. ": frame " .. row.id .. " neither used nor explained")
    end
  end
  -- the accumulator is back at the reduction's identity
  local s = r.shmem.state
  assert.are.equal(0, (s.acc:compare(s.identity)), what .. ": accumulator not reset")
end

describe("reduce_scatter", function()
  it("is exact for every dtype and every reduction at an odd size (1003)", function()
    for i, dt in ipairs(DTYPES) do
      for j, red in ipairs(REDUCES) do
        assert_good(run{ pes = PES[(i + j) % #PES + 1], dtype = dt, reduce = red,
                         count = 1003 })
      end
    end
  end)

  it("is exact for one element per shard on 2, 3, 8 and 16 PEs, every reduction", function()
    for i, pes in ipairs(PES) do
      for j, red in ipairs(REDUCES) do
        assert_good(run{ pes = pes, dtype = DTYPES[(3 * i + j) % #DTYPES + 1], reduce = red,
                         count = 1 })
      end
    end
  end)

  it("is exact when a piece is larger than the UB (ub_bytes 256)", function()
    for i, pes in ipairs(PES) do
      assert_good(run{ pes = pes, dtype = DTYPES[2 * i], reduce = REDUCES[i % 3 + 1],
                       count = 4099, ub_bytes = 256 })
    end
  end)

  it("splits inputs beyond the HCCL buffer into several baseline launches", function()
    for i, pes in ipairs(PES) do
      local dt = DTYPES[2 * i - 1]
      local r = run{ pes = pes, dtype = dt, reduce = REDUCES[i % 3 + 1],
                     count = 2 * 4096 // (pes * lab.core.dtype_size(dt)) + 3,
                     overrides = { hccl_buffer_bytes = 4096 } }
      assert_good(r)
      assert.is_true(r.baseline.launches / r.config.iters > 1, label(r))
      assert.are.equal(1, r.shmem.launches / r.config.iters)
    end
  end)

  it("runs in rounds inside one launch beyond the symmetric budget", function()
    for i, pes in ipairs(PES) do
      local r = run{ pes = pes, dtype = DTYPES[(2 * i + 3) % #DTYPES + 1],
                     reduce = REDUCES[(i + 1) % 3 + 1], count = 1003, sym_bytes = 1024,
                     iters = 2 }
      assert_good(r)
      assert.is_true(r.shmem.state.rounds > 1, label(r))
      assert.are.equal(1, r.shmem.launches / r.config.iters)
    end
  end)

  it("catches a deliberately wrong element", function()
    local r = run{ pes = 2, count = 1003 }
    assert_good(r)
    for _, res in ipairs({ r.shmem, r.baseline }) do
      res.state.output:on(1):sub(5, 1):fill("const", 12345)
      local wrong, at, pe, want, got = res.op.check(res.machine, r.config, res.state)
      assert.are.same({ 1, 5, 1, 12345 }, { wrong, at, pe, got })
      assert.are_not.equal(12345, want)
    end
  end)

  it("rejects an unknown reduction", function()
    assert.has_error(function() run{ pes = 2, count = 8, reduce = "prod" } end,
                     "reduce_scatter: unknown reduce 'prod' (sum, max or min)")
  end)
end)
