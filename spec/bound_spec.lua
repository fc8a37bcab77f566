-- shmemlab.bound: the lower bound of every op (figures derived here from the SoC profile
-- fields, never pasted), the supernode field, the physical peak; then a sweep of every op
-- and its baseline over sizes, PE counts and SoCs: no modeled kernel latency is below its
-- bound and no printed bandwidth is above the physical peak of the paths it used.
local lab = require("shmemlab")
local bound = require("shmemlab.bound")
local runner = require("shmemlab.runner")

local MiB = 1024 * 1024

-- the best effective HCCS rate of a profile (push or pull, whichever is better)
local function hccs(p) return p.hccs_GBps * math.max(p.hccs_read_eff, p.hccs_write_eff) end

describe("bound", function()
  local A2, A3 = lab.soc("Ascend910B"), lab.soc("Ascend910_93")

  it("of an 8-PE mesh allgather: one shard over one link plus one HCCS alpha", function()
    local b = bound.allgather(A2, { n_pes = 8, shard_bytes = 16 * MiB })
    assert.near(16 * MiB / hccs(A2) / 1e3 + A2.hccs_alpha_ns / 1e3, b.us, 1e-9)
    assert.equal("direct", b.family)
    assert.equal(1, b.steps)
    assert.matches("bound_us = bytes / GBps / 1e3 + alphas = 16777216 / ", b.formula, 1, true)
  end)

  it("takes the better of read and write efficiency", function()
    local p = lab.soc("Ascend910B")
    p.hccs_read_eff, p.hccs_write_eff = 0.98, 0.74
    local b1 = bound.p2p(p, { n_pes = 2, bytes = MiB, src = 0, dst = 1 })
    p.hccs_read_eff, p.hccs_write_eff = 0.74, 0.98
    local b2 = bound.p2p(p, { n_pes = 2, bytes = MiB, src = 0, dst = 1 })
    assert.equal(b1.us, b2.us)
    assert.near(MiB / (28 * 0.98) / 1e3 + p.hccs_alpha_ns / 1e3, b1.us, 1e-9)
  end)

  it("of a p2p between the two dies of an A3 card: SIO, and the slower of its alphas", function()
    local b = bound.p2p(A3, { n_pes = 2, bytes = MiB, src = 1, dst = 0 })
    -- every op also reads or writes local GM: its alpha is the larger of local and SIO
    local alpha = math.max(A3.sio_alpha_ns, A3.local_alpha_ns) / 1e3
    assert.near(MiB / A3.sio_GBps / 1e3 + alpha, b.us, 1e-9)
    assert.equal("SIO of PE1", b.bottleneck)
  end)

  it("of an allreduce: the direct design on 2 PEs, relay (2(n-1)/n of the data) on 8", function()
    local b2 = bound.allreduce(A2, { n_pes = 2, bytes = MiB })
    assert.near(MiB / hccs(A2) / 1e3 + 0.5, b2.us, 1e-9)
    local b8 = bound.allreduce(A2, { n_pes = 8, bytes = 64 * MiB })
    assert.equal("relay", b8.family)
    assert.near(2 * 7 / 8 * 64 * MiB / (7 * hccs(A2)) / 1e3 + 2 * A2.hccs_alpha_ns / 1e3, b8.us,
      1e-6)
  end)

  it("of a reduce_scatter and an alltoall on 8 PEs: a shard per link", function()
    for _, f in ipairs({ "reduce_scatter", "alltoall" }) do
      local b = bound[f](A2, { n_pes = 8, shard_bytes = MiB })
      assert.near(MiB / hccs(A2) / 1e3 + A2.hccs_alpha_ns / 1e3, b.us, 1e-9)
    end
  end)

  it("of a broadcast on a mesh: the data over all ingress of a reader (scatter + allgather)",
    function()
      local b = bound.broadcast(A2, { n_pes = 8, bytes = 64 * MiB, root = 3 })
      assert.equal("relay", b.family)
      assert.near(64 * MiB / (7 * hccs(A2)) / 1e3 + 2 * A2.hccs_alpha_ns / 1e3, b.us, 1e-6)
    end)

  it("crosses RDMA beyond supernode_dies and the switch within", function()
    local n, s = 32, MiB
    local small = lab.soc("Ascend910_93")
    small.supernode_dies = 16               -- two supernodes of 16 dies
    local b = bound.alltoall(small, { n_pes = n, shard_bytes = s })
    assert.matches("RDMA", b.bottleneck)
    local p = lab.soc("Ascend910_93")
    assert.equal(768, p.supernode_dies)     -- one supernode: every die on the switch
    local one = bound.alltoall(p, { n_pes = n, shard_bytes = s })
    assert.is_nil(one.bottleneck:match("RDMA"))
    -- 30 dies over the port, one over SIO: 30 shards per port (direct); a relay design
    -- still brings the card's 2 x 30 outside shards in over its two ports (the card cut),
    -- one alpha more
    local direct = 30 * s / hccs(p) / 1e3 + p.hccs_alpha_ns / 1e3
    assert.near(direct, one.us, 1e-6)
    assert.equal("direct", one.family)
    assert.is_true(one.us < b.us)
  end)

  it("of dispatch and combine follows the routing's (token, PE) pairs", function()
    local c = { profile = A2, pes = 2, dtype = "bf16", local_tokens = 8, hidden = 64, topk = 1,
                experts = 2, routing = "uniform" }
    local moe = require("shmemlab.moe")
    local R = moe.routes(moe.config(c))
    local far = R.send[0][1]                       -- topk 1: rows = distinct pairs
    local b = bound.of("dispatch", c)
    assert.near(far * 64 * 2 / hccs(A2) / 1e3 + 0.5, b.us, 1e-9)
    local back = bound.of("combine", c)
    assert.near(math.max(R.send[0][1], R.send[1][0]) * 128 / hccs(A2) / 1e3 + 0.5, back.us, 1e-9)
  end)

  it("names bad arguments as Lua does", function()
    assert.has_error(function() bound.allgather(A2, { n_pes = 0, shard_bytes = 1 }) end,
      "bad argument #2 to 'allgather' (n_pes must be a non-negative integer, got 0)")
    assert.has_error(function() bound.p2p(A2, 3) end,
      "bad argument #2 to 'p2p' (table expected, got number)")
    assert.has_error(function() bound.of("gather", { profile = A2, pes = 2, dtype = "int32" }) end,
      "bad argument #1 to 'of' (no bound for operator 'gather')")
  end)
end)

-- the card cut (A3): two dies per card, each with its own switch port (hccs_GBps = 196 GB/s
-- one way per die, cloudmatrix: 392 GB/s per 910C), joined by SIO; whatever a card needs
-- from outside enters over its two ports (SIO carries only bytes already on the card)
describe("card cut", function()
  local A3 = lab.soc("Ascend910_93")
  local alphas2 = (A3.hccs_alpha_ns + A3.sio_alpha_ns) / 1e3      -- the relay's two alphas
  local port = hccs(A3)                                        -- one die's port, effective

  it("bounds a 16-die allgather of 16 MiB by 14 outside shards over the card's two ports",
    function()
      local b = bound.allgather(A3, { n_pes = 16, shard_bytes = 16 * MiB })
      -- was 15 shards over one die's SIO + port (649.545 us): SIO cannot bring in what
      -- the card does not hold
      assert.near(14 * 16 * MiB / (2 * port) / 1e3 + alphas2, b.us, 1e-9)
      assert.equal("717.430", string.format("%.3f", b.us))
      assert.equal("relay", b.family)
      assert.equal("HCCS switch ports into card 0", b.bottleneck)
      local b32 = bound.allgather(A3, { n_pes = 32, shard_bytes = 16 * MiB })
      assert.near(30 * 16 * MiB / (2 * port) / 1e3 + alphas2, b32.us, 1e-9)
    end)

  it("makes an alltoall's bound its direct design: 2 x 14 shards per card, 14 per port",
    function()
      for _, n in ipairs({ 16, 32 }) do
        local b = bound.alltoall(A3, { n_pes = n, shard_bytes = 16 * MiB })
        assert.near((n - 2) * 16 * MiB / port / 1e3 + A3.hccs_alpha_ns / 1e3, b.us, 1e-9)
        assert.equal("direct", b.family)
      end
    end)

  it("holds every op: reduce_scatter, broadcast, allreduce (2(c-1) between c cards)", function()
    local s = MiB
    local rs = bound.reduce_scatter(A3, { n_pes = 16, shard_bytes = s })
    assert.near(14 * s / (2 * port) / 1e3 + alphas2, rs.us, 1e-9)       -- 14 slices out
    assert.equal("HCCS switch ports out of card 0", rs.bottleneck)
    local bc = bound.broadcast(A3, { n_pes = 16, bytes = 16 * s, root = 5 })
    -- the root's card sends N out, every other card takes N in (the first named)
    assert.near(16 * s / (2 * port) / 1e3 + alphas2, bc.us, 1e-9)
    assert.equal("HCCS switch ports into card 0", bc.bottleneck)
    local ar = bound.allreduce(A3, { n_pes = 16, bytes = 16 * s })
    assert.near(2 * 7 * 16 * s / (8 * 2 * port) / 1e3 + alphas2, ar.us, 1e-9)
    assert.equal("HCCS switch ports of all cards", ar.bottleneck)
  end)

  it("counts one row per token entering a card in dispatch, and leaving one in combine",
    function()
      local moe = require("shmemlab.moe")
      local c = { profile = A3, pes = 8, dtype = "bf16", local_tokens = 64, hidden = 4096,
                  topk = 8, experts = 64, routing = "uniform" }
      local R, row = moe.routes(moe.config(c)), 4096 * 2
      local worst = 0                  -- tokens from outside a card with a destination in it
      for card = 0, 3 do
        local into = 0
        for p = 0, 7 do
          if p // 2 ~= card then
            for tok = 0, R.tokens - 1 do
              local hit = false
              for k = 1, R.topk do hit = hit or R.dest[p][tok * R.topk + k] // 2 == card end
              if hit then into = into + 1 end
            end
          end
        end
        worst = math.max(worst, into)
      end
      local d = bound.of("dispatch", c)
      assert.matches("^HCCS switch ports into card", d.bottleneck)
      assert.near(worst * row / (2 * port) / 1e3 + alphas2, d.us, 1e-9)
      assert.matches("^HCCS switch ports out of card", bound.of("combine", c).bottleneck)
    end)

  it("adds the NICs to the card's ports when the job spans supernodes", function()
    local small = lab.soc("Ascend910_93")
    small.supernode_dies = 16
    local b = bound.allgather(small, { n_pes = 32, shard_bytes = MiB })
    assert.equal("HCCS switch ports and RDMA NICs into card 0", b.bottleneck)
    assert.near(30 * MiB / (2 * (port + small.rdma_GBps)) / 1e3
      + (small.rdma_alpha_ns + small.sio_alpha_ns) / 1e3, b.us, 1e-9)
  end)

  it("on A2 crosses the servers' NICs only where they bind",
    function()
      local A2 = lab.soc("Ascend910B")
      local b = bound.allgather(A2, { n_pes = 16, shard_bytes = MiB })
      -- 15 shards over 7 links and a NIC beat 8 outside shards over the server's 8 NICs
      assert.near(15 * MiB / (7 * hccs(A2) + A2.rdma_GBps) / 1e3
        + (A2.rdma_alpha_ns + A2.hccs_alpha_ns) / 1e3, b.us, 1e-9)
      assert.equal("all ingress of PE0", b.bottleneck)
      local a2a = bound.alltoall(A2, { n_pes = 16, shard_bytes = MiB })
      assert.near(8 * MiB / A2.rdma_GBps / 1e3 + A2.rdma_alpha_ns / 1e3, a2a.us, 1e-9)
      -- 12 servers: an allreduce's 2 x 11 crossings between servers over all 96 NICs bind
      -- (2 x 95 transmissions over all ingress give less)
      local ar = bound.allreduce(A2, { n_pes = 96, bytes = 16 * MiB })
      assert.equal("RDMA NICs of all servers", ar.bottleneck)
      assert.near(2 * 11 * 16 * MiB / (96 * A2.rdma_GBps) / 1e3
        + (A2.rdma_alpha_ns + A2.hccs_alpha_ns) / 1e3, ar.us, 1e-9)
      -- a broadcast from server 0: the data leaves it, and enters server 1, over 8 NICs
      local bc = bound.broadcast(A2, { n_pes = 16, bytes = 16 * MiB, root = 0 })
      assert.equal("RDMA NICs out of server 0", bc.bottleneck)
      assert.near(16 * MiB / (8 * A2.rdma_GBps) / 1e3
        + (A2.rdma_alpha_ns + A2.hccs_alpha_ns) / 1e3, bc.us, 1e-9)
    end)
end)

-- the card cut reached: on 16 and 32 dies of A3, 16 MiB shards (and 16 MiB per PE for the
-- alltoall), timing-only: the alltoall by its one-step design (its bound is the direct
-- design), the allgather by the card relay ops/allgather.lua takes on A3 (each outside
-- shard into the card once; the one-step design pulls the 14 outside shards through each
-- die's own port: half the card cut's rate, about 50%)
describe("efficiency on A3", function()
  local function eff(op, n, count)
    local r = runner.run(op, { soc = "Ascend910_93", pes = n, count = count, timing_only = true,
      warmup = 0, iters = 1, prof_pe = -1, baseline = "none" })
    local s = r.metrics.summary
    assert.is_true(s.latency_us >= r.bound.us, op .. ": below its bound")
    return s.efficiency_pct, r
  end

  for _, n in ipairs({ 16, 32 }) do
    it(string.format("on %d dies: alltoall and allgather (card relay) >= 95%%", n), function()
      assert.is_true(eff("alltoall", n, 4 * MiB) >= 95)               -- 16 MiB per pair
      assert.is_true(eff("alltoall", n, 4 * MiB // n) >= 95)          -- 16 MiB per PE
      local e, r = eff("allgather", n, 4 * MiB)
      assert.matches("^card relay", r.shmem.describe.algorithm)
      assert.is_true(e >= 95 and e <= 100, string.format("%.3f", e))
      assert.matches("^HCCS switch ports into card", r.bound.bottleneck)
    end)
  end
end)

describe("physical peak", function()
  it("sums the links, port, SIO and NIC a PE can drive; a p2p gets its one path", function()
    local A2, A3 = lab.soc("Ascend910B"), lab.soc("Ascend910_93")
    assert.equal(7 * A2.hccs_GBps, (bound.peak_GBps(A2, 8, 0)))
    assert.equal(7 * A2.hccs_GBps + A2.rdma_GBps, (bound.peak_GBps(A2, 16, 0)))
    assert.equal(A3.sio_GBps + A3.hccs_GBps, (bound.peak_GBps(A3, 16, 0)))
    assert.equal(A3.sio_GBps + A3.hccs_GBps, (bound.peak_GBps(A3, 32, 0)))  -- one supernode
    local A3s = lab.soc("Ascend910_93")
    A3s.supernode_dies = 16
    assert.equal(A3.sio_GBps + A3.hccs_GBps + A3.rdma_GBps, (bound.peak_GBps(A3s, 32, 0)))
    assert.equal(A2.hbm_GBps, (bound.peak_GBps(A2, 1, 0)))
    assert.equal(A2.hccs_GBps, (bound.physical_peak("p2p", { profile = A2, pes = 8 }, 0)))
    assert.equal(A2.rdma_GBps, (bound.physical_peak("p2p",
      { profile = A2, pes = 16, src_pe = 15, dst_pe = 3 }, 3)))
  end)
end)

-- the sweep: every op over sizes (elements; two sizes beyond 8 PEs), PE counts and SoCs
-- (910B: 16 = two servers over RDMA; 910_93: 2 = one card over SIO, 16 and 32 = 8 and 16
-- cards of one supernode), p2p both modes and both directions, reductions sum and max, broadcast from
-- both ends; MoE with uniform routing (a skewed routing can keep most rows local, and then
-- the (n-1)/n bus factor overstates the bytes: the convention's note, not an accounting
-- error)
local SOCS = { { "Ascend910B", { 2, 3, 8, 16 } }, { "Ascend910_93", { 2, 3, 8, 16, 32 } } }
local OPS = runner.list()                  -- every op in ops/ (each measured with its baseline)
local SIZES = { 1, 1000, 8192 }        -- elements; beyond a server the 8192 case is left out
local SIZES_FAR = { 1, 1000 }          -- (a 32-PE alltoall of 8192 is 1 MiB per PE: slow)

-- the variants of an op (its collective) on n PEs: option tables
local function variants(op, n)
  if op == "p2p" then
    return { { mode = "put" }, { mode = "get" }, { mode = "get", src_pe = n - 1, dst_pe = 0 },
             { mode = "put", src_pe = n - 1, dst_pe = 0 } }
  elseif op == "allreduce" or op == "reduce_scatter" then
    return { { reduce = "sum" }, { reduce = "max" } }
  elseif op == "broadcast" then
    return { { root = 0 }, { root = n - 1 } }
  end
  return { {} }
end

-- the runs of an op (its collective) on n PEs of soc: option tables
local function cases(op, soc, n)
  local list = {}
  for _, v in ipairs(variants(op, n)) do
    local sizes = (op == "dispatch" or op == "combine") and { { local_tokens = 16, hidden = 256 },
      { local_tokens = 64, hidden = 512, topk = 4 } } or (n > 8 and SIZES_FAR or SIZES)
    for _, size in ipairs(sizes) do
      local o = { soc = soc, pes = n, warmup = 0, iters = 1, prof_pe = -1 }
      for k, x in pairs(v) do o[k] = x end
      if type(size) == "table" then
        for k, x in pairs(size) do o[k] = x end
      else
        o.count = size
      end
      list[#list + 1] = o
    end
  end
  return list
end

local function what(o)
  local parts = {}
  for k, v in pairs(o) do
    if k ~= "warmup" and k ~= "iters" and k ~= "prof_pe" then parts[#parts + 1] = k .. "=" .. tostring(v) end
  end
  table.sort(parts)
  return table.concat(parts, " ")
end

-- every bandwidth a record shows of result m (metrics.compute) within the physical peak
local function assert_peak(m, r, label)
  local c, worst = r.config, 0
  for _, row in ipairs(m.per_pe) do
    local peak, src = bound.physical_peak(r.op.collective, c, row.pe)
    worst = math.max(worst, peak)
    assert.is_true(row.kernel_bus_bandwidth_GBps <= peak, string.format("%s: PE %d bus %.3f GB/s "
      .. "above %s = %.3f", label, row.pe, row.kernel_bus_bandwidth_GBps, src, peak))
    if r.op.collective == "p2p" or r.op.collective == "broadcast" then   -- bus factor 1
      assert.is_true(row.algo_bandwidth_GBps <= peak, label .. ": algo above the peak")
    end
  end
  assert.is_true(m.summary.kernel_bus_bandwidth_GBps <= worst, label .. ": summary above the peak")
end

-- the baseline families (runner.BASELINES) that have a baseline of op
local function baselines_of(op)
  local found, o = {}, runner.load_op(op)
  for _, family in ipairs(runner.BASELINES) do
    if runner.load_baseline(o, family) then found[#found + 1] = family end
  end
  return found
end

describe("every op and its baselines", function()
  it("covers the eight collectives", function()
    local seen = {}
    for _, op in ipairs(OPS) do seen[runner.load_op(op).collective] = true end
    for _, c in ipairs({ "allgather", "allreduce", "reduce_scatter", "alltoall", "broadcast",
      "p2p", "dispatch", "combine" }) do
      assert.is_true(seen[c], c)
    end
  end)

  for _, sp in ipairs(SOCS) do
    for _, n in ipairs(sp[2]) do
      for _, op in ipairs(OPS) do
        it(string.format("%s on %d PEs of %s: latency >= bound, bandwidth <= physical peak", op, n,
          sp[1]), function()
          local families = baselines_of(op)
          assert.is_true(#families > 0, op .. ": no baseline")
          for _, o in ipairs(cases(runner.load_op(op).collective, sp[1], n)) do
           for _, family in ipairs(families) do
            o.baseline = family
            local r = runner.run(op, o)
            local label = op .. " " .. what(o) .. " against " .. family
            assert.is_not_nil(r.baseline, label .. ": no baseline")
            assert.is_true(r.bound.us > 0, label)
            for _, res in ipairs({ { "op", r.metrics }, { "baseline", r.baseline.metrics } }) do
              local s = res[2].summary
              assert.is_true(s.latency_us >= r.bound.us, string.format("%s (%s): latency %.3f us "
                .. "below the bound %.3f us (%s)", label, res[1], s.latency_us, r.bound.us,
                r.bound.formula))
              assert.is_true(s.efficiency_pct <= 100, label)
              assert_peak(res[2], r, label .. " (" .. res[1] .. ")")
            end
           end
          end
        end)
      end
    end
  end
end)
