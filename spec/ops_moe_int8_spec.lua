-- INT8 MoE dispatch (dispatch_dtype "int8": rows quantised in the kernel on the
-- V pipe with a per-token fp32 scale, as DeepEP on Ascend sends them) and
-- DeepEP's bandwidth beside the guide's metrics for dispatch and combine (and
-- their HCCL-style baselines): in the record, the [PERF] lines and JSON.

local helpers = require("spec.helpers.ops")
local moe = require("shmemlab.moe")
local metrics = require("shmemlab.metrics")
local report = require("shmemlab.report")
local cli = require("shmemlab.cli")

local FIX = "spec/fixtures/"
local run = helpers.run

-- the sanitizer of a checked result found nothing
local function clean(res, what)
  assert.is_not_nil(res.sanitizer, what .. ": not a checked run")
  assert.are.equal(0, res.sanitizer.errors, what .. ": " .. res.sanitizer.text)
end

-- for every received row of a dispatch result: its source token (input row),
-- int8 values, scale; calls f(x, q, scale, d, slot)
local function each_row(res, f)
  local s = res.state
  local R, H, W = s.routes, s.hidden, s.wire
  for p = 0, R.n_pes - 1 do
    for i = 1, R.tokens * R.topk do
      local d, slot = R.dest[p][i], R.slot[p][i]
      local row = s.recv:on(d):sub(slot * W.row, W.row)
      f(s.input:on(p):read((i - 1) // R.topk * H, H), row:read(0, W.row),
        row:sub(W.scale_at, 4):reinterpret("fp32"):read(0), d, slot)
    end
  end
end

describe("INT8 dispatch", function()
  for _, pes in ipairs({ 2, 3, 8 }) do
    for _, dtype in ipairs({ "fp16", "bf16" }) do
      for _, hidden in ipairs({ 40, 64 }) do
        local what = string.format("%d PEs %s -> int8, 7 tokens x %d", pes, dtype, hidden)
        it("is exact bit for bit and clean under --check all: " .. what, function()
          local r = run("dispatch", { pes = pes, dtype = dtype, dispatch_dtype = "int8",
                                      local_tokens = 7, hidden = hidden, routing = "zipf",
                                      check = "all" })
          helpers.assert_exact(r, what)
          clean(r.shmem, what)
          clean(r.baseline, what)
          assert.are.equal("int8", r.shmem.state.wire.dtype)
          assert.are.equal("int8", r.baseline.state.wire.dtype)
        end)
      end
    end
  end

  it("sends each row as its int8 values, zero pads, then the fp32 scale in a 32-byte block", function()
    local H = 40
    local r = run("dispatch", { pes = 3, dtype = "bf16", dispatch_dtype = "int8", hidden = H,
                                routing = "file", routes_file = FIX .. "routes_3pe.txt" })
    helpers.assert_exact(r, "routes_3pe int8")
    local at, P = moe.int8_row(H)
    assert.are.same({ 64, 96 }, { at, P })
    local m, rows = r.shmem.machine, 0
    each_row(r.shmem, function(x, q, scale)
      rows = rows + 1
      local hx, hq, hs = m:host("bf16", H):fill(x), m:host("int8", H), m:host("fp32", 1)
      hq:quant_int8(hx, hs)                           -- the host reference, independently
      assert.are.same(hq:read(0, H), { table.unpack(q, 1, H) })
      assert.are.equal(hs:read(0), scale)
      for j = H + 1, at do assert.are.equal(0, q[j]) end      -- pads before the scale
      for j = at + 5, P do assert.are.equal(0, q[j]) end      -- and after it
      local amax = 0
      for j = 1, H do amax = math.max(amax, math.abs(x[j])) end
      assert.is_true(math.abs(scale - amax / 127) <= amax / 127 * 2 ^ -22)
      -- dequantised: within half a step, plus the fp32 roundings of x * inv (at
      -- most 2^-18 of a step) and of inv * scale ~= 1 (at most 127 * 2^-23 of one)
      for j = 1, H do
        assert.is_true(math.abs(q[j] * scale - x[j]) <= (0.5 + 2 ^ -15) * scale)
        assert.is_true(q[j] >= -127 and q[j] <= 127)
      end
    end)
    assert.are.equal(3 * 5 * 2, rows)               -- the fixture: 3 PEs x 5 tokens x topk 2
  end)

  it("moves int8 bytes on the links: remote rows x the row's wire bytes", function()
    for _, dd in ipairs({ "fp16", "int8" }) do
      local r = run("dispatch", { pes = 2, dispatch_dtype = dd, local_tokens = 16, hidden = 40 })
      local R, W = r.shmem.state.routes, r.shmem.state.wire
      assert.are.equal((R.send[0][1] + R.send[1][0]) * W.bytes, r.shmem.path_bytes.hccs)
      assert.are.equal(dd == "int8" and 96 or 80, W.bytes)
    end
  end)

  it("beyond the HCCL buffer: the baseline's windows carry int8 rows", function()
    local r = run("dispatch", { pes = 3, dispatch_dtype = "int8", local_tokens = 33, hidden = 200,
                                routing = "zipf", overrides = { hccl_buffer_bytes = 8192 } })
    helpers.assert_exact(r, "int8, hccl_buffer_bytes 8192")
    helpers.assert_split(r)
  end)

  it("quantises an all-zero token to zeros with scale 0", function()
    local r = run("dispatch", { pes = 2, dispatch_dtype = "int8", local_tokens = 4, hidden = 32,
                                warmup = 0 })
    local m, s = r.shmem.machine, r.shmem.state
    s.input:on(1):sub(2 * 32, 32):fill("zero")     -- token 2 of PE 1
    s.expect = moe.expect_dispatch(m, s.routes, s.input, s.routes.max_recv, s.wire)
    r.shmem.op.run(m, r.config, s)
    assert.are.equal(0, (r.shmem.op.check(m, r.config, s)))
    local R = s.routes
    for k = 0, R.topk - 1 do
      local i = 2 * R.topk + k + 1
      local row = s.recv:on(R.dest[1][i]):sub(R.slot[1][i] * s.wire.row, s.wire.row)
      assert.are.equal(0, row:sub(s.wire.scale_at, 4):reinterpret("fp32"):read(0))
      for _, v in ipairs(row:read(0, 32)) do assert.are.equal(0, v) end
    end
  end)

  it("catches a corrupted int8 value and a corrupted scale byte", function()
    local r = run("dispatch", { pes = 3, dispatch_dtype = "int8", local_tokens = 5, hidden = 40 })
    for _, res in ipairs({ r.shmem, r.baseline }) do
      local s = res.state
      for _, at in ipairs({ 17, s.wire.scale_at + 2 }) do
        local v = s.recv:on(1):read(at)
        s.recv:on(1):sub(at, 1):fill({ v ~ 1 })
        local wrong, i, pe = res.op.check(res.machine, r.config, s)
        assert.are.same({ 1, at, 1 }, { wrong, i, pe })
        s.recv:on(1):sub(at, 1):fill({ v })
      end
    end
  end)

  it("counts its payload in the wire dtype; the combine stays in the input dtype", function()
    local r = run("dispatch", { pes = 2, dtype = "bf16", dispatch_dtype = "int8" })
    assert.are.equal(256 * 1024 * 1, r.record.data_bytes)
    local c = run("combine", { pes = 2, dtype = "bf16", dispatch_dtype = "int8" })
    assert.are.equal(256 * 1024 * 2, c.record.data_bytes)
    assert.are.equal("bf16", c.record.deepep_wire_dtype)
  end)

  it("rejects a dispatch dtype neither int8 nor the input dtype, and a tile that does not fit", function()
    local ok, err = pcall(run, "dispatch", { pes = 2, dtype = "fp16", dispatch_dtype = "bf16" })
    assert.is_false(ok)
    assert.matches("moe: dispatch dtype must be int8 or the input dtype fp16, got 'bf16'",
                   tostring(err), 1, true)
    ok, err = pcall(run, "dispatch", { pes = 2, dispatch_dtype = "int8", hidden = 20000 })
    assert.is_false(ok)
    assert.matches("moe: hidden 20000 does not fit: an INT8 dispatch tile", err, 1, true)
  end)

  it("is an option of the command line, and --json carries DeepEP's figures", function()
    local o = assert(cli.parse({ "dispatch", "--dispatch-dtype", "int8" }))
    assert.are.equal("int8", o.dispatch_dtype)
    assert.matches("--dispatch-dtype", cli.usage, 1, true)
    local parts = {}
    local out = { write = function(self, ...) for _, v in ipairs({ ... }) do parts[#parts + 1] = v end
                                              return self end }
    local status = cli.main({ "dispatch", "--pes", "2", "--dispatch-dtype", "int8", "--tokens", "8",
                              "--hidden", "64", "-w", "0", "-n", "1", "--json",
                              "--baseline", "hccl" }, out, out)
    assert.are.equal(0, status)
    local doc = require("cjson").decode(table.concat(parts))
    local row = doc.rows[1]
    assert.are.equal("int8", row.shmem.deepep_wire_dtype)
    assert.are.equal(16, row.shmem.deepep_recv_rows)
    assert.are.equal(128, row.baseline.deepep_row_bytes)      -- DeepEP's: 64 BF16 values
    assert.are.equal(96, row.baseline.deepep_wire_row_bytes)  -- 64 int8, the scale's block
    for _, side in ipairs({ row.shmem, row.baseline }) do
      assert.are.equal(side.deepep_recv_rows * 128 / side.latency_us / 1e3,
                       side.deepep_bandwidth_GBps)
      assert.are.equal(side.deepep_recv_rows * 96 / side.latency_us / 1e3,
                       side.deepep_wire_bandwidth_GBps)
    end
  end)
end)

describe("DeepEP bandwidth (metrics.deepep)", function()
  local function result()
    return metrics.compute{ op = "dispatch", n_pes = 2, payload_bytes = 1000, peak = 28,
      per_pe = { { pe = 0, kernel_us = 4, e2e_us = 5 }, { pe = 1, kernel_us = 5, e2e_us = 6 } },
      baseline = { name = "b", per_pe = { { pe = 0, kernel_us = 8, e2e_us = 9 },
                                          { pe = 1, kernel_us = 10, e2e_us = 11 } } } }
  end

  it("is each PE's received bytes over its own kernel time, and the mean over the slowest", function()
    local res = metrics.deepep(result(), { recv_rows = { [0] = 30, [1] = 10 }, row_bytes = 100,
                                           wire_dtype = "int8", hidden = 64 },
                               { recv_rows = { [0] = 30, [1] = 10 }, row_bytes = 200, hidden = 100 })
    local p0, p1, s = res.per_pe[1], res.per_pe[2], res.summary
    assert.are.same({ 30, 128, 3840, 3840 / 4 / 1e3, 100, 3000 / 4 / 1e3 },
                    { p0.deepep_recv_rows, p0.deepep_row_bytes, p0.deepep_recv_bytes,
                      p0.deepep_bandwidth_GBps, p0.deepep_wire_row_bytes,
                      p0.deepep_wire_bandwidth_GBps })
    assert.are.equal(10 * 128 / 5 / 1e3, p1.deepep_bandwidth_GBps)
    assert.are.same({ 20, 128, 2560, 2560 / 5 / 1e3, 2000 / 5 / 1e3, "int8" },
                    { s.deepep_recv_rows, s.deepep_row_bytes, s.deepep_recv_bytes,
                      s.deepep_bandwidth_GBps, s.deepep_wire_bandwidth_GBps, s.deepep_wire_dtype })
    assert.are.equal(20 * 200 / 10 / 1e3, s.baseline.deepep_bandwidth_GBps)
    assert.are.equal(20 * 200 / 10 / 1e3, s.baseline.deepep_wire_bandwidth_GBps)
  end)

  it("checks its arguments in Lua's style", function()
    assert.has_error(function() metrics.deepep({}, {}) end,
                     "bad argument #1 to 'deepep' (metrics.compute result expected)")
    assert.has_error(function() metrics.deepep(result(), { recv_rows = {}, row_bytes = 0 }) end,
                     "bad argument #2 to 'deepep' ({recv_rows = {[pe] = rows}, row_bytes > 0, "
                     .. "hidden > 0} expected)")
    assert.has_error(function() metrics.deepep(result(), { recv_rows = {}, row_bytes = 8 }) end,
                     "bad argument #2 to 'deepep' ({recv_rows = {[pe] = rows}, row_bytes > 0, "
                     .. "hidden > 0} expected)")
    assert.has_error(function() metrics.deepep(result(), { recv_rows = { [0] = 1 }, row_bytes = 8,
                                                           hidden = 4 }) end,
                     "bad argument #2 to 'deepep' (recv_rows[1] must be an integer >= 0)")
  end)

  -- the printed numbers of a text report, by key ("key: value" lines)
  local function printed(text)
    local v = {}
    for k, x in text:gmatch("\n([%w_]+): ([^\n]+)") do v[k] = x end
    return v
  end

  for _, case in ipairs({ { "dispatch", "int8" }, { "dispatch", nil }, { "combine", nil } }) do
    local name, dd = case[1], case[2]
    local what = name .. (dd and " " .. dd or "")
    it(what .. ": the record's figure recomputes from its printed rows, row bytes and latency", function()
      local r = run(name, { pes = 3, dtype = "bf16", dispatch_dtype = dd, local_tokens = 24,
                            hidden = 96, routing = "zipf" })
      local s, R = r.metrics.summary, r.shmem.state.routes
      local row_bytes, wire = 96 * 2, dd and select(2, moe.int8_row(96)) or 96 * 2
      assert.are.equal(24 * 2, s.deepep_recv_rows)              -- the mean: local_tokens x topk
      assert.are.equal(row_bytes, s.deepep_row_bytes)           -- BF16 rows, DeepEP's count
      assert.are.equal(wire, s.deepep_wire_row_bytes)
      assert.are.equal(s.deepep_recv_rows * row_bytes / s.latency_us / 1e3, s.deepep_bandwidth_GBps)
      assert.are.equal(s.deepep_recv_rows * wire / s.latency_us / 1e3,
                       s.deepep_wire_bandwidth_GBps)
      local b = s.baseline
      assert.are.equal(b.deepep_recv_rows * row_bytes / b.latency_us / 1e3,
                       r.record.baseline_deepep_bandwidth_GBps)
      local text = report.record(r.record)
      local v = printed("\n" .. text)
      local again = tonumber(v.deepep_recv_rows) * tonumber(v.deepep_row_bytes)
                    / tonumber(v.latency_us) / 1e3
      assert.is_true(math.abs(again - tonumber(v.deepep_bandwidth_GBps)) <= 1e-3 + again * 1e-4)
      local wagain = tonumber(v.deepep_recv_rows) * tonumber(v.deepep_wire_row_bytes)
                     / tonumber(v.latency_us) / 1e3
      assert.is_true(math.abs(wagain - tonumber(v.deepep_wire_bandwidth_GBps))
                     <= 1e-3 + wagain * 1e-4)
      assert.are.equal(dd or "bf16", v.deepep_wire_dtype)
      local perf = report.perf_lines(r.metrics.per_pe)
      for pe = 0, 2 do
        local line = perf:match("%[PERF%] pe=" .. pe .. " [^\n]*")
        local rows = tonumber(line:match("deepep_recv_rows=(%d+)"))
        assert.are.equal(name == "dispatch" and R.recv[pe] or 24 * 2, rows)
        local k_us = tonumber(line:match("kernel_us=([%d.]+)"))
        local bw = tonumber(line:match("deepep_bandwidth_GBps=([%d.]+)"))
        local want = rows * tonumber(line:match("deepep_row_bytes=(%d+)")) / k_us / 1e3
        assert.is_true(math.abs(want - bw) <= 1e-3 + want * 1e-4, line)
      end
      assert.matches(metrics.DEEPEP_FORMULA, report.formula_text(s), 1, true)
    end)
  end

  it("is in the JSON rows (record, shmem, baseline, per PE) and absent from other ops", function()
    local json = require("shmemlab.json")
    local r = run("dispatch", { pes = 2, dispatch_dtype = "int8", local_tokens = 8, hidden = 64 })
    local doc = report.to_json(r.record)
    assert.matches('"deepep_bandwidth_GBps"', doc, 1, true)
    assert.matches('"baseline_deepep_bandwidth_GBps"', doc, 1, true)
    assert.matches('"deepep_wire_dtype": "int8"', doc, 1, true)
    local perf = json.encode({ per_pe = r.metrics.per_pe })
    assert.matches('"deepep_recv_rows"', perf, 1, true)
    local a = run("allgather", { pes = 2, count = 64, dtype = "int32" })
    assert.is_nil(a.record.deepep_bandwidth_GBps)
    assert.is_nil(report.record(a.record):find("deepep", 1, true))
    assert.is_nil(report.perf_lines(a.metrics.per_pe):find("deepep", 1, true))
  end)
end)
