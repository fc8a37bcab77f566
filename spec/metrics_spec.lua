-- Specs of shmemlab.metrics: the bus factor table, payload bytes, peak bandwidth, decimal
-- formatting and the metrics/verdict computation (guide sections 5-6, SPEC section 8).

local metrics = require("shmemlab.metrics")

local function close(expected, actual, tol)
  tol = tol or 1e-12
  assert.is_true(math.abs(expected - actual) <= tol * math.max(1, math.abs(expected)),
    string.format("expected %.17g, got %.17g", expected, actual))
end

describe("metrics.bus_factor", function()
  it("has the guide's value and formula for every operator", function()
    local cases = {
      { "allreduce", 8, 2 * 7 / 8, "2*(n_pes-1)/n_pes" },
      { "reduce_scatter", 8, 7 / 8, "(n_pes-1)/n_pes" },
      { "allgather", 8, 7 / 8, "(n_pes-1)/n_pes" },
      { "alltoall", 8, 7 / 8, "(n_pes-1)/n_pes" },
      { "broadcast", 8, 1, "1" },
      { "p2p", 8, 1, "1" },
      { "dispatch", 8, 7 / 8, "(n_pes-1)/n_pes" },
      { "combine", 8, 7 / 8, "(n_pes-1)/n_pes" },
      { "allreduce", 2, 1, "2*(n_pes-1)/n_pes" },
      { "allgather", 2, 0.5, "(n_pes-1)/n_pes" },
      { "alltoall", 4, 0.75, "(n_pes-1)/n_pes" },
      { "broadcast", 2, 1, "1" },
    }
    for _, c in ipairs(cases) do
      local f, formula, canon = metrics.bus_factor(c[1], c[2])
      assert.are.equal(c[3], f, c[1] .. " n=" .. c[2])
      assert.are.equal(c[4], formula, c[1])
      assert.are.equal(c[1], canon)
    end
  end)

  it("lists every operator of the table once", function()
    assert.are.same({ "allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "p2p",
      "dispatch", "combine" }, metrics.ops)
  end)

  it("accepts operator names case-insensitively and with separators", function()
    assert.are.equal(2 * 3 / 4, (metrics.bus_factor("AllReduce", 4)))
    assert.are.equal(2 * 3 / 4, (metrics.bus_factor("ALL_REDUCE", 4)))
    assert.are.equal(0.75, (metrics.bus_factor("Reduce-Scatter", 4)))
    assert.are.equal(0.75, (metrics.bus_factor("ReduceScatter", 4)))
    assert.are.equal(0.75, (metrics.bus_factor("AllToAll", 4)))
    assert.are.equal(0.75, (metrics.bus_factor("Shuffle", 4)))
    assert.are.equal(1, (metrics.bus_factor("P2P", 4)))
    assert.are.equal("reduce_scatter", metrics.canonical("Reduce Scatter"))
    assert.is_nil(metrics.canonical("allreduce2"))
  end)

  it("gives 0 on one PE for the (n-1)/n operators and 1 for broadcast", function()
    assert.are.equal(0, (metrics.bus_factor("allgather", 1)))
    assert.are.equal(0, (metrics.bus_factor("allreduce", 1)))
    assert.are.equal(1, (metrics.bus_factor("broadcast", 1)))
  end)

  it("rejects a bad PE count or operator in Lua's style", function()
    assert.has_error(function() metrics.bus_factor("allreduce", 0) end,
      "bad argument #2 to 'bus_factor' (n_pes must be >= 1)")
    assert.has_error(function() metrics.bus_factor("allreduce", -3) end,
      "bad argument #2 to 'bus_factor' (n_pes must be >= 1)")
    assert.has_error(function() metrics.bus_factor("allreduce", 2.5) end,
      "bad argument #2 to 'bus_factor' (n_pes must be an integer, got 2.5)")
    assert.has_error(function() metrics.bus_factor("gather", 2) end,
      "bad argument #1 to 'bus_factor' (unknown operator 'gather'; known: allreduce, reduce_scatter, "
      .. "allgather, alltoall, broadcast, p2p, dispatch, combine)")
  end)
end)

describe("metrics.payload_bytes", function()
  it("uses the single-PE semantic bytes of each operator", function()
    local p = { n_pes = 4, elems = 1000, dtype_size = 2, shard_elems = 250, local_tokens = 16, hidden = 7168 }
    assert.are.equal(4 * 250 * 2, (metrics.payload_bytes("alltoall", p)))
    assert.are.equal(4 * 250 * 2, (metrics.payload_bytes("reduce_scatter", p)))
    assert.are.equal(4 * 250 * 2, (metrics.payload_bytes("allgather", p)))
    assert.are.equal(1000 * 2, (metrics.payload_bytes("allreduce", p)))
    assert.are.equal(1000 * 2, (metrics.payload_bytes("broadcast", p)))
    assert.are.equal(1000 * 2, (metrics.payload_bytes("p2p", p)))
    assert.are.equal(16 * 7168 * 2, (metrics.payload_bytes("dispatch", p)))
    assert.are.equal(16 * 7168 * 2, (metrics.payload_bytes("Combine", p)))
  end)

  it("reproduces the seed's allgather int32 M=1024 N=8 on 2 PEs: 32768 bytes", function()
    -- the gathered array is M*N = 8192 int32, so each of the 2 PEs contributes 4096
    local bytes, formula = metrics.payload_bytes("allgather",
      { n_pes = 2, shard_elems = 4096, dtype_size = 4 })
    assert.are.equal(32768, bytes)
    assert.are.equal("integer", math.type(bytes))
    assert.are.equal("n_pes*shard_elems*dtype_size", formula)
  end)

  it("names the missing field", function()
    assert.has_error(function() metrics.payload_bytes("alltoall", { n_pes = 2, dtype_size = 4 }) end,
      "bad argument #2 to 'payload_bytes' (alltoall needs a non-negative integer shard_elems, got nil)")
    assert.has_error(function() metrics.payload_bytes("p2p", { elems = 8 }) end,
      "bad argument #2 to 'payload_bytes' (p2p needs a non-negative integer dtype_size, got nil)")
    assert.has_error(function() metrics.payload_bytes("p2p", { elems = 1.5, dtype_size = 4 }) end,
      "bad argument #2 to 'payload_bytes' (p2p needs a non-negative integer elems, got 1.5)")
  end)
end)

describe("metrics.peak", function()
  it("is the 8-PE HCCS full mesh for a collective on 8 PEs: 7 x 28 = 196 GB/s", function()
    local p = metrics.peak({ soc = "Ascend910B", op = "allgather", n_pes = 8 })
    assert.are.equal(196, p.GBps)
    assert.are.equal(7, p.links)
    assert.are.equal("collective", p.rule)
    assert.are.equal("Ascend910B HCCS 8-PE full mesh: 7 links x 28 GB/s", p.source)
  end)

  it("uses min(n, pes_per_server) - 1 links for smaller and larger collectives", function()
    local p2 = metrics.peak({ op = "allreduce", n_pes = 2 })
    assert.are.equal(28, p2.GBps)
    assert.are.equal("Ascend910B HCCS 2-PE full mesh: 1 link x 28 GB/s", p2.source)
    assert.are.equal(84, metrics.peak({ op = "alltoall", n_pes = 4 }).GBps)
    local p16 = metrics.peak({ op = "allgather", n_pes = 16 })
    assert.are.equal(196, p16.GBps)
    assert.truthy(p16.source:find("16 PEs on 2 servers", 1, true), p16.source)
    assert.are.equal(0, metrics.peak({ op = "allgather", n_pes = 1 }).GBps)
  end)

  it("takes one link for p2p and (P2P rule) for dispatch and combine", function()
    local p = metrics.peak({ op = "p2p", n_pes = 8 })
    assert.are.equal(28, p.GBps)
    assert.are.equal("p2p", p.rule)
    assert.are.equal("Ascend910B HCCS 8-PE full mesh, P2P peak: one link x 28 GB/s one way", p.source)
    local d = metrics.peak({ op = "dispatch", n_pes = 16 })
    assert.are.equal(28, d.GBps)
    assert.truthy(d.source:find("dispatch (P2P rule)", 1, true), d.source)
    assert.truthy(d.source:find("16-PE", 1, true), d.source)
    assert.are.equal(28, metrics.peak({ op = "combine", n_pes = 8 }).GBps)
  end)

  it("follows given link figures, SoC and topology", function()
    local p = metrics.peak({ soc = { name = "Ascend950" }, op = "allgather", n_pes = 4, link_GBps = 53,
      link_type = "UB", pes_per_server = 4, topology = "ub_mesh" })
    assert.are.equal(3 * 53, p.GBps)
    assert.are.equal("Ascend950 UB 4-PE ub_mesh: 3 links x 53 GB/s", p.source)
  end)

  it("rejects bad options", function()
    assert.has_error(function() metrics.peak({ op = "allgather", n_pes = 0 }) end,
      "bad argument #1 to 'peak' (n_pes must be an integer >= 1)")
    assert.has_error(function() metrics.peak({ op = "nope", n_pes = 2 }) end,
      "bad argument #1 to 'peak' (unknown operator 'nope')")
    assert.has_error(function() metrics.peak({ op = "p2p", n_pes = 2, link_GBps = 0 }) end,
      "bad argument #1 to 'peak' (link_GBps must be > 0)")
  end)
end)

describe("metrics.fmt", function()
  it("rounds the decimal the number was meant as, half away from zero", function()
    assert.are.equal("0.362", string.format("%.3f", 0.3625))  -- C rounds the binary value down
    assert.are.equal("0.363", metrics.fmt3(0.3625))
    assert.are.equal("2.68", metrics.fmt(2.675, 2))
    assert.are.equal("1.001", metrics.fmt3(1.0005))
    assert.are.equal("-0.001", metrics.fmt3(-0.0005))
    assert.are.equal("0.000", metrics.fmt3(-0.0004))
    assert.are.equal("1000.000", metrics.fmt3(999.9995))
    assert.are.equal("0.001", metrics.fmt3(0.0005))
    assert.are.equal("0.000", metrics.fmt3(2.5e-5))
    assert.are.equal("12.000", metrics.fmt3(12))
    assert.are.equal("115.3", metrics.fmt(52.1 / 45.2 * 100, 1))
    assert.are.equal("46", metrics.fmt(45.5, 0))
    assert.are.equal("0.0001", metrics.fmt(5e-5, 4))
  end)

  it("keeps values that are not halves as %.3f does", function()
    for _, x in ipairs({ 0.36247787610619, 45.2, 1 / 3, 2 / 3, 123.4564, 7e-4, 98765.4321 }) do
      assert.are.equal(string.format("%.3f", x), metrics.fmt3(x), tostring(x))
    end
  end)

  it("prints non-finite values as words and rejects non-numbers", function()
    assert.are.equal("inf", metrics.fmt3(math.huge))
    assert.are.equal("-inf", metrics.fmt3(-math.huge))
    assert.are.equal("nan", metrics.fmt3(0 / 0))
    assert.has_error(function() metrics.fmt3("1") end,
      "bad argument #1 to 'fmt' (number expected, got string)")
  end)
end)

describe("metrics.compute", function()
  local peak2 = metrics.peak({ op = "allgather", n_pes = 2 })
  local function seed_opts(baseline)
    return {
      op = "allgather", n_pes = 2, payload_bytes = 32768, peak = peak2,
      per_pe = { { pe = 0, kernel_us = 45.2, e2e_us = 45.2 }, { pe = 1, kernel_us = 45.2, e2e_us = 45.2 } },
      baseline = baseline,
    }
  end
  local hccl = { name = "HCCL AllGather",
    per_pe = { { pe = 0, kernel_us = 52.1, e2e_us = 52.1 }, { pe = 1, kernel_us = 52.1, e2e_us = 52.1 } } }

  it("reproduces the seed's allgather record (45.2 us against HCCL's 52.1 us)", function()
    local r = metrics.compute(seed_opts(hccl))
    local s = r.summary
    close(32768 / 45.2e-6 / 1e9, s.algo_bandwidth_GBps)
    assert.are.equal("0.725", metrics.fmt3(s.algo_bandwidth_GBps))
    -- exact kernel bus bandwidth: 0.72496 * (2-1)/2 = 0.36248 -> "0.362". The seed prints 0.363
    -- because it multiplied the already rounded 0.725 by 0.5 (double rounding).
    close(32768 / 45.2e-6 / 1e9 * 0.5, s.kernel_bus_bandwidth_GBps)
    assert.are.equal("0.362", metrics.fmt3(s.kernel_bus_bandwidth_GBps))
    assert.are.equal("0.363", metrics.fmt3(tonumber(metrics.fmt3(s.algo_bandwidth_GBps)) * 0.5))
    assert.are.equal(45.2, s.latency_us)
    assert.are.equal(45.2, s.e2e_latency_us)
    assert.are.equal(52.1, s.baseline_latency_us)
    close(52.1 / 45.2 * 100, s.ratio_pct)
    assert.are.equal("115.3", metrics.fmt(s.ratio_pct, 1))
    assert.are.equal(0.5, s.bus_factor)
    assert.are.equal("(n_pes-1)/n_pes", s.bus_factor_formula)
    assert.are.equal(28, s.peak_bandwidth_GBps)
    assert.are.equal(peak2.source, s.peak_source)
    close(s.kernel_bus_bandwidth_GBps / 28 * 100, s.bandwidth_utilization_pct)
    assert.are.same({}, s.notes)
    assert.is_true(s.verdict.pass)
    assert.are.equal("PASS", s.verdict.text)
    assert.are.equal("kernel_bus_bandwidth >= 80% of baseline", s.verdict.rule)
    assert.are.equal("HCCL AllGather", s.baseline.name)
    close(32768 / 52.1e-6 / 1e9 * 0.5, s.baseline.kernel_bus_bandwidth_GBps)
  end)

  it("gives per-PE rows with every bandwidth", function()
    local opts = seed_opts()
    opts.per_pe = { { pe = 0, kernel_us = 50, e2e_us = 64 }, { pe = 1, kernel_us = 40, e2e_us = 80 } }
    local r = metrics.compute(opts)
    assert.are.equal(2, #r.per_pe)
    assert.are.equal(1, r.per_pe[2].pe)
    local p1 = r.per_pe[1]
    assert.are.equal(0, p1.pe)
    close(32768 / 50e-6 / 1e9, p1.algo_bandwidth_GBps)
    close(32768 / 50e-6 / 1e9 * 0.5, p1.kernel_bus_bandwidth_GBps)
    close(32768 / 64e-6 / 1e9 * 0.5, p1.e2e_bus_bandwidth_GBps)
    close(32768 / 50e-6 / 1e9 * 0.5 / 28 * 100, p1.bandwidth_utilization_pct)
    assert.are.equal(32768, p1.payload_bytes)
    assert.are.equal(0.5, p1.bus_factor)
    assert.are.equal(28, p1.peak_bandwidth_GBps)
    -- latency is the maximum over PEs (kernel and e2e on different PEs); the op's bandwidths
    -- are the payload over those latencies, so the record's pair gives its bandwidth
    local s = r.summary
    assert.are.equal(50, s.latency_us)
    assert.are.equal(80, s.e2e_latency_us)
    close(32768 / 50e-6 / 1e9, s.algo_bandwidth_GBps)
    close(32768 / 80e-6 / 1e9 * 0.5, s.e2e_bus_bandwidth_GBps)
    close(32768 / 50e-6 / 1e9 * 0.5 / 28 * 100, s.bandwidth_utilization_pct)
    assert.are.equal(40, r.per_pe[2].bandwidth_time_us)    -- allgather: every PE on its own time
  end)

  it("takes PE ids from the list position when pe is absent", function()
    local opts = seed_opts()
    opts.per_pe = { { kernel_us = 1, e2e_us = 1 }, { kernel_us = 2, e2e_us = 2 } }
    local r = metrics.compute(opts)
    assert.are.equal(0, r.per_pe[1].pe)
    assert.are.equal(1, r.per_pe[2].pe)
  end)

  it("notes utilisation above 100% and PEs whose e2e is shorter than the kernel", function()
    local opts = seed_opts()
    opts.payload_bytes = 32768 * 1000            -- 362 GB/s bus on a 28 GB/s link
    opts.per_pe[2].e2e_us = 40
    local s = metrics.compute(opts).summary
    assert.are.equal(2, #s.notes)
    assert.are.equal("utilisation above 100%: the bus_factor or the peak convention counts fewer "
      .. "bytes or links than the op used",
      s.notes[1])
    assert.are.equal("PE 1: e2e_us < kernel_us (timing boundaries disagree)", s.notes[2])
  end)

  it("decides PASS/FAIL without a baseline on 20% utilisation", function()
    local opts = seed_opts()
    -- utilisation = payload / 45.2 us / 1e9 * 0.5 / 28 * 100; find payloads on both sides of 20%
    local at20 = 0.20 * 28e9 / 0.5 * 45.2e-6
    opts.payload_bytes = at20 * 1.01
    local s = metrics.compute(opts).summary
    assert.is_true(s.verdict.pass)
    assert.are.equal("PASS", s.verdict.text)
    assert.are.equal("no baseline: utilisation >= 20%", s.verdict.rule)
    assert.is_nil(s.ratio_pct)
    assert.is_nil(s.baseline)
    opts.payload_bytes = at20 * 0.99
    s = metrics.compute(opts).summary
    assert.is_false(s.verdict.pass)
    assert.are.equal("FAIL", s.verdict.text)
    assert.is_false(metrics.compute(seed_opts()).summary.verdict.pass)   -- the seed: 1.3%
  end)

  it("fails against a baseline more than 25% faster", function()
    local fast = { name = "HCCL", per_pe = { { kernel_us = 45.2 / 1.3, e2e_us = 45.2 / 1.3 } } }
    local s = metrics.compute(seed_opts(fast)).summary
    assert.is_false(s.verdict.pass)
    assert.are.equal("FAIL", s.verdict.text)
    assert.truthy(s.ratio_pct < 100)
    local near = { name = "HCCL", per_pe = { { kernel_us = 45.2 / 1.24, e2e_us = 45.2 / 1.24 } } }
    assert.is_true(metrics.compute(seed_opts(near)).summary.verdict.pass)
  end)

  it("compares latencies kernel to kernel (ratio) and end to end (e2e_ratio)", function()
    local opts = seed_opts({ name = "HCCL", per_pe = { { kernel_us = 30, e2e_us = 60 } } })
    opts.per_pe = { { kernel_us = 20, e2e_us = 50 } }
    local s = metrics.compute(opts).summary
    assert.are.equal(30, s.baseline_latency_us)
    close(30 / 20 * 100, s.ratio_pct)
    assert.are.equal(60, s.baseline_e2e_latency_us)
    close(60 / 50 * 100, s.e2e_ratio_pct)
    opts.ratio_basis = "kernel"
    assert.has_error(function() metrics.compute(opts) end, "bad argument #1 to 'compute' "
      .. "(ratio_basis is gone: ratio is kernel to kernel, e2e_ratio end to end)")
  end)

  it("computes ratios from the printed (3-decimal) latencies", function()
    -- 2.0004 prints 2.000 and 1.0006 prints 1.001: the exact ratio 199.92% would print
    -- 199.9%, the printed pair gives 2.000 / 1.001 = 199.8%
    local opts = seed_opts({ name = "HCCL", per_pe = { { kernel_us = 2.0004, e2e_us = 2.0004 } } })
    opts.per_pe = { { kernel_us = 1.0006, e2e_us = 1.0006 } }
    local s = metrics.compute(opts).summary
    assert.are.equal("199.8", metrics.fmt(s.ratio_pct, 1))
    assert.are.equal("199.8", metrics.fmt(s.e2e_ratio_pct, 1))
  end)

  it("counts a p2p's bandwidth on the slowest participating PE's time", function()
    -- get mode: src stages locally and is done early; dst moves the bytes over the link
    local s = metrics.compute({ op = "p2p", n_pes = 8, payload_bytes = 1048576, peak = 28,
      per_pe = { { pe = 0, kernel_us = 3, e2e_us = 50 }, { pe = 1, kernel_us = 46, e2e_us = 50 } } })
    for _, row in ipairs(s.per_pe) do
      assert.are.equal(46, row.bandwidth_time_us)
      close(1048576 / 46e-6 / 1e9, row.algo_bandwidth_GBps)
    end
    close(1048576 / 46e-6 / 1e9, s.summary.algo_bandwidth_GBps)
    assert.are.same({}, s.summary.notes)
  end)

  it("gives efficiency_pct = bound_us / latency_us * 100 per PE and for the op", function()
    local opts = seed_opts({ name = "HCCL", per_pe = { { kernel_us = 90, e2e_us = 95 } } })
    opts.per_pe = { { kernel_us = 40, e2e_us = 44 }, { kernel_us = 50, e2e_us = 54 } }
    opts.bound = { us = 20, formula = "f" }
    local r = metrics.compute(opts)
    assert.are.equal(20, r.summary.bound_us)
    close(20 / 50 * 100, r.summary.efficiency_pct)
    close(20 / 40 * 100, r.per_pe[1].efficiency_pct)
    close(20 / 90 * 100, r.summary.baseline.efficiency_pct)
    opts.bound = 7
    assert.are.equal(7, metrics.compute(opts).summary.bound_us)
    opts.bound = "x"
    assert.has_error(function() metrics.compute(opts) end, "bad argument #1 to 'compute' "
      .. "(bound must be a number of us or a bound table {us=})")
  end)

  it("accepts a bare number as the peak", function()
    local opts = seed_opts()
    opts.peak = 14
    local s = metrics.compute(opts).summary
    assert.are.equal(14, s.peak_bandwidth_GBps)
    close(s.kernel_bus_bandwidth_GBps / 14 * 100, s.bandwidth_utilization_pct)
  end)

  it("rejects missing or impossible timings", function()
    local opts = seed_opts()
    opts.per_pe = {}
    assert.has_error(function() metrics.compute(opts) end,
      "bad argument #1 to 'compute' (per_pe must be a non-empty list)")
    opts.per_pe = { { kernel_us = 0, e2e_us = 1 } }
    assert.has_error(function() metrics.compute(opts) end,
      "bad argument #1 to 'compute' (per_pe[1]: kernel_us and e2e_us must be > 0)")
    opts = seed_opts({ name = "b", per_pe = { { kernel_us = 1 } } })
    assert.has_error(function() metrics.compute(opts) end,
      "bad argument #1 to 'compute' (baseline per_pe[1]: kernel_us and e2e_us must be > 0)")
    opts = seed_opts()
    opts.peak = nil
    assert.has_error(function() metrics.compute(opts) end,
      "bad argument #1 to 'compute' (peak must be a metrics.peak table or a number)")
  end)
end)
