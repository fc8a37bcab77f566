-- A block's descriptors on a DMA engine form one in-order queue (issue 22,
-- defect 3): the next descriptor's setup runs under the current stream, up
-- to dma_queue_depth descriptors in the engine; what no queue hides (the
-- engine's task time after each stream) stays serial. Exact virtual times.

local H = require("spec.helpers.engine")
local lab = H.lab

local N = 16 * 1024               -- int32: 64 KiB a descriptor

-- kernel time of PE 0 posting n puts of N int32 to PE 1 on SDMA, then its quiet
local function queued(n, overrides)
  local opts = { pes = 2 }
  for k, v in pairs(overrides or {}) do opts[k] = v end
  local m = lab.machine(opts)
  local x, y = m:malloc("int32", N, "x"):fill("iota_pe"), m:malloc("int32", N, "y")
  local r = m:launch(function(k)
    if k.pe ~= 0 then return end
    local ub = k:ub("int32", 16)
    for _ = 1, n do k:sdma_put_nbi(y, x, ub, N, 1, 0) end
    k:sdma_quiet(ub, 0)
  end, 1)
  return r.kernel_us[1], m:params()
end

-- one descriptor's stream over the HCCS write (us)
local function stream_us(p) return N * 4 / (p.hccs_GBps * p.hccs_write_eff) / 1e3 end

describe("DMA engine queue (issue 22, defect 3)", function()
  it("N queued puts take one setup and N streams and task times, not N setups", function()
    for _, n in ipairs({ 1, 2, 8 }) do
      local t, p = queued(n)
      -- S posts the first (2 issue + signal, as a lone put: api_engine_spec);
      -- its setup; then the streams, each after the task time of the one
      -- before; the last lands alpha later, the quiet returns a pipe_barrier on
      local want = (2 * p.issue_ns + p.signal_ns + p.sdma_setup_ns + (n - 1) * p.sdma_task_ns
                    + p.hccs_alpha_ns + p.pipe_barrier_ns) / 1e3 + n * stream_us(p)
      assert.near(want, t, 1e-5)
    end
  end)

  it("pins the A2 figures: 8 puts of 64 KiB in 33.366 us", function()
    local t, p = queued(8)
    assert.are.equal(2, p.dma_queue_depth)
    assert.are.equal(1000, p.sdma_task_ns)
    assert.are.equal(400, p.sdma_setup_ns)
    -- 0.44 + 7 x 1.0 + 8 x 65536 B / 20.636 GB/s + 0.52 (before the queue:
    -- 0.44 + 8 x 65536 / 20.836 GB/s + 0.52, no task time, eff 0.744)
    assert.near(0.44 + 7 + 8 * 65536 / (28 * 0.737) / 1e3 + 0.52, t, 1e-5)
    assert.near(33.36648, t, 1e-5)
  end)

  it("a queue of depth 1 pays every setup in series", function()
    local deep, p = queued(8)
    local shallow = queued(8, { dma_queue_depth = 1 })
    assert.near(7 * p.sdma_setup_ns / 1e3, shallow - deep, 1e-5)
  end)

  it("a setup longer than a stream and its task shows, even queued", function()
    local p = lab.soc("Ascend910B")
    local setup = 10000                              -- ns, more than 3.2 + 1.0 us
    local t = queued(8, { sdma_setup_ns = setup })
    local base = (2 * p.issue_ns + p.signal_ns + p.hccs_alpha_ns + p.pipe_barrier_ns) / 1e3
    -- depth 2: descriptor i + 1 is set up from descriptor i - 1's release on
    local x, task = N * 4 / (p.hccs_GBps * p.hccs_write_eff) / 1e3, p.sdma_task_ns / 1e3
    assert.is_true(t > base + setup / 1e3 + 8 * x + 7 * task + 1e-3)
    assert.is_true(t < base + 8 * (setup / 1e3 + x + task))
  end)

  it("without a task time, queued puts stream back to back", function()
    local t, p = queued(4, { sdma_task_ns = 0 })
    assert.near((2 * p.issue_ns + p.signal_ns + p.sdma_setup_ns + p.hccs_alpha_ns
                 + p.pipe_barrier_ns) / 1e3 + 4 * stream_us(p), t, 1e-5)
  end)

  it("rejects a queue depth outside 1..255", function()
    local ok, err = pcall(lab.machine, { dma_queue_depth = 0 })
    assert.is_false(ok)
    assert.matches("dma_queue_depth", tostring(err))
  end)
end)
