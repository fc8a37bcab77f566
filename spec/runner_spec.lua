-- The runner's timing boundary: e2e_us of an iteration is the virtual time from
-- its start to its end, so host copies an operator makes (RDMA-style placement)
-- count in e2e and not in kernel time, as the performance guide says.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local runner = require("shmemlab.runner")
local F = lab.frames

-- a p2p-like op that first places its input with a host copy
local placed = op.define {
  name = "placed_copy", collective = "p2p", dtypes = { "int32" },
  defaults = { count = 4096, block_dim = 1 },
  unused = { [F.REMOTE_PUT_GET] = "local", [F.SIGNAL_WAIT] = "none", [F.LOCAL_COMPUTE] = "none",
             [F.FINALIZE] = "none" },
  describe = function() return { algorithm = "host copy, then a local copy", chunk_elems = 0,
                                 ub_bytes = 0, cores = 1 } end,
  payload = function(c) return { elems = c.count, dtype_size = 4 } end,
  setup = function(m, c)
    return { host = m:host("int32", c.count):fill("iota"), gm = m:alloc("int32", c.count),
             out = m:alloc("int32", c.count), count = c.count }
  end,
  run = function(m, _, s)
    for pe = 0, m:params().pes - 1 do m:memcpy(s.gm:on(pe), s.host) end
    return { m:launch(function(k)
      local ub = k:ub("int32", s.count)
      k:prof_start(F.COPY_IN)
      k:data_copy(ub, s.gm, s.count)
      k:set_flag("MTE2_MTE3", 0); k:wait_flag("MTE2_MTE3", 0)
      k:data_copy(s.out, ub, s.count)
      k:prof_end(F.COPY_IN)
    end, 1) }
  end,
  check = function(_, _, s) return s.out:compare(s.host) end,
}

describe("runner", function()
  it("counts an operator's host copies in e2e_us, not in kernel_us", function()
    local r = runner.run(placed, { pes = 2, warmup = 1, iters = 2, baseline = "none" })
    local p = r.config.profile
    local copy_us = p.host_setup_us + 4096 * 4 / (p.host_GBps * 1e3)
    local slowest = 0                                  -- PE 0 pays the profiling barriers
    for _, row in ipairs(r.metrics.per_pe) do slowest = math.max(slowest, row.kernel_us) end
    for _, row in ipairs(r.metrics.per_pe) do
      assert.near(slowest + p.launch_us + 2 * copy_us, row.e2e_us, 1e-6)
      assert.is_true(row.e2e_us > row.kernel_us + 2 * copy_us)
    end
    assert.equal(0, r.shmem.check.wrong)
    local kinds = {}
    for _, t in ipairs(r.shmem.machine:tasks(0)) do kinds[t.type] = (kinds[t.type] or 0) + 1 end
    assert.same({ AIV = 3, MEMCPY_ASYNC = 3 }, kinds)     -- 3 launches, 3 copies to PE 0
    local first = r.shmem.machine:tasks(0)[1]
    assert.same({ "MEMCPY_ASYNC", 0 }, { first.type, first.start_us })
  end)

  it("loads a family's operator by family/name, a path as a path", function()
    local op_ = runner.load_op("deepep/dispatch_hccl")
    assert.equal(runner.ops_dir() .. "/deepep/dispatch_hccl.lua", op_.path)
    assert.equal("ops/allgather.lua", runner.load_op("ops/allgather.lua").path)
    local ok, e = pcall(runner.load_op, "deepep/nosuch")
    assert.is_false(ok)
    assert.equal("usage", runner.kind(e))
    assert.matches("unknown operator 'deepep/nosuch'", tostring(e), 1, true)
  end)

  it("sets up one launch as the benches time it", function()
    local op_, c, m = runner.one_launch("allgather", { pes = 4, count = 256, timing_only = true,
                                                      iters = 7 }, { run_ahead = false })
    assert.same({ 0, 1, "none" }, { c.warmup, c.iters, c.baseline })
    local p = m:profile()
    assert.same({ 4, true, -1, false }, { p.pes, m:timing_only(), p.prof_pe, p.run_ahead })
    op_.run(m, c, op_.setup(m, c))
    assert.is_true(m:now() > 0)
    m:close()
  end)
end)
