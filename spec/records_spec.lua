-- Records that cannot contradict themselves (issue 8, defect 3): every figure of the
-- printed record, the sweep table and the JSON rows is recomputed here from the other
-- printed figures (never from pasted engine output), and no printed bandwidth of a p2p
-- exceeds the one path between its PEs (a rate read from the SoC profile).
local cli = require("shmemlab.cli")
local cjson = require("cjson")
local lab = require("shmemlab")
local metrics = require("shmemlab.metrics")

-- run main with argv; returns status, stdout
local function run(argv)
  local out = { parts = {} }
  function out:write(...)
    for _, v in ipairs({ ... }) do self.parts[#self.parts + 1] = tostring(v) end
    return self
  end
  local err = { write = function(self) return self end }
  local status = cli.main(argv, out, err)
  return status, table.concat(out.parts)
end

-- the "key: value" lines of a text record
local function record_of(text)
  local r = {}
  for k, v in text:gmatch("\n([%w_]+): ([^\n]*)") do
    if r[k] == nil then r[k] = v end
  end
  return r
end

local function num(s) return tonumber((tostring(s):gsub("%%$", ""))) end

-- printed ratio of two printed latencies, as the record prints it (1 decimal)
local function ratio_text(b, a) return metrics.fmt(num(b) / num(a) * 100, 1) .. "%" end

-- |got - want| <= tol: tol is what rounding the printed inputs to 3 decimals can move want
local function near(want, got, tol, what)
  assert.is_true(math.abs(want - got) <= tol, string.format("%s: %s vs %s", what, want, got))
end

describe("a record", function()
  local status, out = run({ "allgather", "--pes", "2", "-w", "1", "-n", "2", "--count", "4096" })
  local r = record_of(out)

  it("puts ratio on kernel time: baseline_latency_us / latency_us of the printed pair", function()
    assert.equal(0, status)
    -- the baseline's kernel latency is the one its frame line reports as max kernel per PE
    local base_kernel = out:match("HCCL AllGather %(emulated AIV orchestration%): .- kernel per PE "
      .. "max ([%d.]+) us")
    assert.equal(base_kernel, r.baseline_latency_us)
    local op_kernel = out:match("shmemlab allgather: .- kernel per PE max ([%d.]+) us")
    assert.equal(op_kernel, r.latency_us)
    assert.equal(ratio_text(r.baseline_latency_us, r.latency_us), r.ratio)
  end)

  it("prints the end-to-end comparison on its own lines, consistent with itself", function()
    assert.is_string(r.e2e_latency_us)
    assert.is_string(r.baseline_e2e_latency_us)
    assert.equal(ratio_text(r.baseline_e2e_latency_us, r.e2e_latency_us), r.e2e_ratio)
    -- e2e is the kernel plus the launch cost: never shorter than the kernel
    assert.is_true(num(r.e2e_latency_us) >= num(r.latency_us))
    assert.is_true(num(r.baseline_e2e_latency_us) >= num(r.baseline_latency_us))
  end)

  it("has algo_bandwidth = data_bytes / latency_us and busbw = algbw * bus factor", function()
    local algo = num(r.data_bytes) / num(r.latency_us) / 1e3
    near(algo, num(r.algo_bandwidth_GBps), algo * 5e-4 / num(r.latency_us) + 5e-4,
      "algo_bandwidth_GBps")
    near(num(r.algo_bandwidth_GBps) * 0.5, num(r.kernel_bus_bandwidth_GBps), 1e-3, "bus bandwidth")
  end)

  it("has efficiency_pct = bound_us / latency_us * 100", function()
    local eff = num(r.bound_us) / num(r.latency_us) * 100
    near(eff, num(r.efficiency_pct), eff * 5e-4 * (1 / num(r.bound_us) + 1 / num(r.latency_us))
      + 5e-4, "efficiency_pct")
    assert.is_true(num(r.efficiency_pct) <= 100)
  end)

  it("prints bound_us and efficiency_pct on every [PERF] line", function()
    local n = 0
    for line in out:gmatch("%[PERF%] pe=[^\n]*") do
      n = n + 1
      local t = num(line:match(" bandwidth_time_us=([%d.]+)"))
      local b = num(line:match(" bound_us=([%d.]+)"))
      local algo = num(line:match(" algo_bandwidth_GBps=([%d.]+)"))
      local bytes = num(line:match(" payload_bytes=(%d+)"))
      near(bytes / t / 1e3, algo, algo * 5e-4 / t + 5e-4, "[PERF] algo over bandwidth_time_us")
      near(b / t * 100, num(line:match(" efficiency_pct=([%d.]+)")),
        b / t * 100 * 5e-4 * (1 / b + 1 / t) + 5e-4, "[PERF] efficiency")
    end
    assert.equal(2, n)
  end)

  it("repeats the comparison in one [PERF] op= line, as the record prints it", function()
    local line = out:match("\n(%[PERF%] op=allgather [^\n]*)")
    assert.is_string(line)
    for _, k in ipairs({ "latency_us", "baseline_latency_us", "ratio", "e2e_latency_us",
      "baseline_e2e_latency_us", "e2e_ratio", "bound_us", "efficiency_pct" }) do
      assert.equal(r[k], line:match(" " .. k .. "=([^ ]+)"), k)
    end
  end)
end)

describe("a p2p record", function()
  for _, mode in ipairs({ "put", "get" }) do
    it(string.format("(%s) shows no bandwidth above the one HCCS link between src and dst", mode),
      function()
        local status, out = run({ "p2p", "--mode", mode, "-w", "1", "-n", "2", "--count", "65536" })
        assert.equal(0, status)
        local link = lab.soc("Ascend910B").hccs_GBps
        local r = record_of(out)
        assert.is_true(num(r.algo_bandwidth_GBps) <= link, "record algo " .. r.algo_bandwidth_GBps)
        local seen = 0
        for line in out:gmatch("%[PERF%] pe=[^\n]*") do
          for key, v in line:gmatch(" ([%w_]+_bandwidth_GBps)=([%d.]+)") do
            seen = seen + 1
            assert.is_true(num(v) <= link, line .. ": " .. key)
          end
          -- the bytes over the slowest participating PE's time: the record's latency
          assert.equal(r.latency_us, line:match(" bandwidth_time_us=([%d.]+)"))
        end
        assert.is_true(seen > 0)
        assert.is_nil(out:match("note: utilisation above 100%%"))
      end)
  end
end)

describe("a sweep", function()
  local status, out = run({ "allgather", "--pes", "2", "-b", "1K", "-e", "4K", "-f", "4",
                            "-w", "1", "-n", "1" })

  it("says which basis every column is on and its ratios follow from its columns", function()
    assert.equal(0, status)
    assert.matches("# basis: kernel_us, bound_us, eff_%, algbw, busbw (GB/s) and ratio_kernel on "
      .. "kernel time", out, 1, true)
    local head = out:match("\n(#%s+size[^\n]*)")
    local cols = {}
    for c in head:gmatch("[^%s|]+") do cols[#cols + 1] = c end
    table.remove(cols, 1)                                       -- the leading "#"
    assert.same({ "size", "count", "type", "redop", "root", "kernel_us", "bound_us", "eff_%",
      "algbw", "busbw", "#wrong", "hccl_kern", "eff_%", "algbw", "busbw", "#wrong",
      "ratio_kernel", "e2e_us", "hccl_e2e", "ratio_e2e" }, cols)
    local rows = 0
    for line in out:gmatch("\n(%s+%d+%s+%d+%s+int32%s+none%s+%-1 |[^\n]*)") do
      rows = rows + 1
      local v = {}
      for c in line:gmatch("[^%s|]+") do v[#v + 1] = c end
      assert.equal(ratio_text(v[12], v[6]), v[17], line)        -- hccl kernel / kernel
      assert.equal(ratio_text(v[19], v[18]), v[20], line)       -- hccl e2e / e2e
      near(num(v[7]) / num(v[6]) * 100, num(v[8]),
        num(v[8]) * 5e-4 * (1 / num(v[7]) + 1 / num(v[6])) + 5e-4, "eff_% " .. line)
    end
    assert.equal(2, rows)
  end)
end)

describe("a JSON row", function()
  it("carries the kernel ratio, the e2e ratio, the bound and the efficiency", function()
    local status, out = run({ "allgather", "--pes", "2", "--count", "1024", "-w", "1", "-n", "1",
                              "--json" })
    assert.equal(0, status)
    local row = cjson.decode(out).rows[1]
    local m = metrics
    assert.equal(m.fmt(num(m.fmt3(row.baseline.latency_us)) / num(m.fmt3(row.shmem.latency_us))
      * 100, 1), m.fmt(row.ratio_pct, 1))
    assert.equal(m.fmt(num(m.fmt3(row.baseline.e2e_latency_us))
      / num(m.fmt3(row.shmem.e2e_latency_us)) * 100, 1), m.fmt(row.e2e_ratio_pct, 1))
    assert.equal(row.record.ratio, row.ratio_pct)
    assert.equal(row.record.e2e_ratio, row.e2e_ratio_pct)
    assert.is_number(row.bound_us)
    assert.equal(row.bound_us, row.baseline.bound_us)
    assert.near(row.bound_us / row.shmem.latency_us * 100, row.efficiency_pct, 1e-9)
    for _, p in ipairs(row.per_pe) do assert.is_number(p.efficiency_pct) end
    local b = row.bound                             -- the bound's working adds up
    local alphas = 0
    for _, a in ipairs(b.alphas_us) do alphas = alphas + a end
    assert.near(b.bytes / b.GBps / 1e3 + alphas, row.bound_us, 1e-9)
    assert.equal(b.steps, #b.alphas_us)
    assert.matches("^bound_us = bytes / GBps / 1e3 %+ alphas = ", b.formula)
  end)
end)
