-- Engine determinism: the same run gives the same virtual times, the same
-- data and the same trace, on fresh machines and launch after launch.

local H = require("spec.helpers.engine")
local lab = H.lab

-- a mixed workload: puts to the next PE, atomic adds into PE 0, signals,
-- waits, a vector op and a barrier; returns the machine and its buffers
local function workload(opts)
  local m = lab.machine(opts or { pes = 4 })
  local n = 3000
  local bufs = {
    input = m:alloc("fp32", n, "input"):fill("random", -50, 50, 11),
    ring = m:malloc("fp32", 4 * n, "ring"),
    sum = m:malloc("int32", 64, "sum"),
    scaled = m:alloc("fp32", n, "scaled"),
    sig = m:malloc("int64", 1, "sig"),
  }
  local function kernel(k)
    local b, npes = k.block, k.n_pes
    local per = n // k.block_num
    local u = k:ub("fp32", 1024)
    local win = bufs.input:sub(b * per, per)
    k:mte_put_nbi(bufs.ring:sub(k.pe * n + b * per, per), win, u, 2048, per,
                  (k.pe + 1) % npes, b)
    k:quiet()
    k:signal_op(bufs.sig, 1, lab.SIGNAL_ADD, (k.pe + 1) % npes)
    k:signal_wait_until(bufs.sig, lab.CMP_GE, k.block_num)
    local c = k:ub("int32", 64)
    for i = 0, 63 do k:set_value(c, i, k.pe + b + i) end
    H.sync(k, "S_MTE3")
    k:set_atomic("add", "int32")
    k:data_copy(k:ptr(bufs.sum, 0), c, 64)
    k:set_atomic_none()
    local x, y = k:ub("fp32", per), k:ub("fp32", per)
    k:data_copy_pad(x, win, per)
    H.sync(k, "MTE2_V")
    k:muls(y, x, 0.5 + k.pe, per)
    H.sync(k, "V_MTE3")
    k:data_copy_pad(bufs.scaled:sub(b * per, per), y, per)
    k:barrier_all()
  end
  return m, bufs, kernel
end

local function checksums(bufs)
  local out = {}
  for name, v in pairs(bufs) do out[name] = v:checksum() end
  return out
end

describe("engine determinism", function()
  it("two fresh machines running the same launch give the same times and data", function()
    local runs = {}
    for i = 1, 2 do
      local m, bufs, kernel = workload()
      m:trace()
      local r = m:launch(kernel, 4)
      runs[i] = { kernel_us = r.kernel_us, e2e_us = r.e2e_us, now = m:now(),
                  sums = checksums(bufs), trace = m:trace_records(),
                  bytes = m:path_bytes(), sum0 = bufs.sum:on(0):read(0, 4) }
    end
    assert.same(runs[1].kernel_us, runs[2].kernel_us)
    assert.equals(runs[1].e2e_us, runs[2].e2e_us)
    assert.equals(runs[1].now, runs[2].now)
    assert.same(runs[1].sums, runs[2].sums)
    assert.same(runs[1].trace, runs[2].trace)
    assert.same(runs[1].bytes, runs[2].bytes)
    assert.is_true(#runs[1].trace > 0)
    -- and the run did real work: times on every PE, the sum of 4 PEs x 4 blocks
    for pe = 1, 4 do assert.is_true(runs[1].kernel_us[pe] > 0) end
    -- sum[i] = sum over pe, b of (pe + b + i) = 16 i + 4 * (0+1+2+3) * 2
    assert.same({ 48, 64, 80, 96 }, runs[1].sum0)
  end)

  it("the same launch twice on one machine takes the same time", function()
    local m, bufs, kernel = workload()
    local a = m:launch(kernel, 4)
    local t_between = m:now()
    bufs.sig:fill("zero")                      -- the waits depend on it
    local b = m:launch(kernel, 4)
    assert.same(a.kernel_us, b.kernel_us)
    assert.is_true(b.start_us > t_between)
  end)

  it("the result does not depend on other machines existing", function()
    local m1, bufs1, kernel1 = workload()
    local noise = lab.machine{ pes = 8 }       -- another machine in between
    noise:launch(function(k) k:barrier_all() end, 8)
    local r1 = m1:launch(kernel1, 4)
    local m2, bufs2, kernel2 = workload()
    local r2 = m2:launch(kernel2, 4)
    assert.same(r1.kernel_us, r2.kernel_us)
    assert.same(checksums(bufs1), checksums(bufs2))
  end)

  it("a different profile figure changes the times (the check can fail)", function()
    local m1, _, k1 = workload{ pes = 4 }
    local m2, _, k2 = workload{ pes = 4, hccs_alpha_ns = 600 }
    assert.are_not.same(m1:launch(k1, 4).kernel_us, m2:launch(k2, 4).kernel_us)
  end)
end)
