-- A pipelined transfer as one primitive (issue 24 item 2): k:mte_get_pipelined /
-- k:mte_put_pipelined issue the double-buffered chain of op.get_pipelined /
-- put_pipelined from C (core/mte.c sl_mte_pipe_step), one primitive at a time,
-- the block yielding between them where the chunked calls did. The chunked form
-- (op.pipelined_chunked, the Lua loop of mte_*_nbi + set_flag / wait_flag) and
-- the primitive run side by side on the same machines: sizes, chunk counts, one
-- and two buffers, gets and puts, PE counts, blocks contending for one link and
-- one HBM, settle windows 0 and 1000 ns. Every kernel time, the machine's clock,
-- the events and the flow solver's counts must be the same (the largest
-- difference is printed), and the bytes too in data runs.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local runner = require("shmemlab.runner")
local H = require("spec.helpers.engine")

-- the chain of a get (or put) in the chunked form or as the primitive
local function chain(chunked, get)
  if chunked then
    return function(k, ...) op.pipelined_chunked(k, get, ...) end
  end
  return get and op.get_pipelined or op.put_pipelined
end

-- one launch: every block of every PE moves n int32 in chunks of a ub_elems UB (bufs
-- buffers) from or to PE (pe + shift) % pes, twice in a row (the second waits for
-- the first's last writes on MTE2); data: bytes too. Its figures, and a checksum
-- of the output when data
local function program(chunked, o)
  local m = lab.machine{ pes = o.pes, data = o.data, settle_ns = o.settle, prof_pe = -1,
                         chain_flow = false }   -- the chunks, as the loop issues them
  local per = o.n * o.blocks * 2
  local s = m:malloc("int32", per, "src")
  local d = m:malloc("int32", per, "dst")
  if o.data then s:fill("iota") end
  local e0, f0 = m:events(), m:flow_stats()
  local r = m:launch(function(k)
    local ub = k:ub("int32", o.ub)
    local peer = (k.pe + o.shift) % k.n_pes
    local move = chain(chunked, o.get)
    for i = 0, 1 do
      local at = (k.block * 2 + i) * o.n
      move(k, d:sub(at, o.n), s:sub(at, o.n), ub, o.n, peer, o.bufs)
    end
  end, o.blocks)
  local f1 = m:flow_stats()
  local out = {
    kernel = r.kernel_us, now = m:now(), events = m:events() - e0,
    starts = f1.starts - f0.starts, continued = f1.continued - f0.continued,
    settles = f1.settles - f0.settles, rerated = f1.rerated - f0.rerated,
    sum = o.data and d:checksum() or nil,
  }
  m:close()
  return out
end

-- the configurations: sizes (elements per transfer) and UB sizes give 1 to 24
-- chunks, with a short last one; shift 0 reads the own HBM, 1 a neighbour over a
-- link; 16 and 48 blocks contend for links and HBMs
local CASES = {
  { pes = 2, blocks = 2, n = 4096, ub = 8192, bufs = 2, get = true, shift = 1 },
  { pes = 2, blocks = 2, n = 100000, ub = 8192, bufs = 2, get = true, shift = 1 },
  { pes = 2, blocks = 4, n = 100000, ub = 8192, bufs = 1, get = true, shift = 1 },
  { pes = 2, blocks = 4, n = 100000, ub = 8192, bufs = 2, get = false, shift = 1 },
  { pes = 4, blocks = 16, n = 49000, ub = 4096, bufs = 2, get = true, shift = 1 },
  { pes = 4, blocks = 16, n = 49000, ub = 4096, bufs = 2, get = false, shift = 3 },
  { pes = 8, blocks = 48, n = 24600, ub = 2048, bufs = 2, get = true, shift = 0 },
  { pes = 8, blocks = 48, n = 24600, ub = 2048, bufs = 2, get = true, shift = 5 },
  { pes = 16, blocks = 8, n = 65536, ub = 48640, bufs = 2, get = true, shift = 9 },
}

-- the largest difference of two runs' kernel times (us)
local function largest(a, b)
  local d = math.abs(a.now - b.now)
  for i = 1, #a.kernel do d = math.max(d, math.abs(a.kernel[i] - b.kernel[i])) end
  return d
end

describe("a pipelined transfer as one primitive", function()
  it("times as the chunked calls, at windows 0 and 1000 ns, timing-only and with data",
     function()
    local worst, runs, events = 0, 0, 0
    for _, o in ipairs(CASES) do
      for _, w in ipairs({ 0, 1000 }) do
        for _, data in ipairs({ false, true }) do
          if data == false or o.pes <= 4 then
            local c = { data = data, settle = w }
            for key, v in pairs(o) do c[key] = v end
            local a, b = program(true, c), program(false, c)
            worst = math.max(worst, largest(a, b))
            runs, events = runs + 1, events + a.events
            assert.same(a, b)
          end
        end
      end
    end
    print(string.format("\npipelined chain, chunked calls vs the primitive: %d runs, %d events,"
                        .. " largest time difference %.6f us", runs, events, worst))
    assert.equal(0, worst)
  end)

  it("times an operator as the chunked calls: allgather on 16 PEs x 48 blocks, flat and the "
     .. "server relay", function()
    local saved = { op.get_pipelined, op.put_pipelined }
    local function run(chunked, algo)
      if chunked then
        op.get_pipelined, op.put_pipelined = chain(true, true), chain(true, false)
      end
      local o = runner.load_op("allgather")
      local c = runner.config(o, { pes = 16, count = 65536, block_dim = 48, warmup = 0, iters = 1,
                                   baseline = "none", timing_only = true, algo = algo })
      local m = lab.machine{ profile = c.profile, pes = 16, prof_pe = -1, data = false,
                             chain_flow = false }   -- the chunks, as the loop issues them
      local s = o.setup(m, c)
      local e0 = m:events()
      local ok, err = pcall(o.run, m, c, s)
      op.get_pipelined, op.put_pipelined = saved[1], saved[2]
      assert(ok, err)
      local t, ev = m:now(), m:events() - e0
      m:close()
      return t, ev
    end
    for _, algo in ipairs({ "flat", "hier" }) do
      local t0, e0 = run(true, algo)
      local t1, e1 = run(false, algo)
      assert.equal(t0, t1)
      assert.equal(e0, e1)
    end
  end)

  it("refuses bad arguments with a clear error", function()
    local m = lab.machine{ pes = 2 }
    local s = m:malloc("int32", 64)
    local d = m:malloc("int32", 64)
    local msg = H.launch_err(m, function(k)
      k:mte_get_pipelined(d, s, k:ub("int32", 16), 64, 1, 0)
    end, 1)
    assert.matches("bufs must be in 1..8", msg)
    msg = H.launch_err(m, function(k) k:mte_get_pipelined(d, s, k:ub("int32", 16), 64, 2) end, 1)
    assert.matches("PE 2 out of range", msg)
    msg = H.launch_err(m, function(k) k:mte_get_pipelined(d, s, 7, 64, 1) end, 1)
    assert.matches("tensor view", msg)
    msg = H.launch_err(m, function(k) k:mte_get_pipelined(d, s, k:ub("int32", 1), 64, 1) end, 1)
    assert.matches("UB tensor of 1 elements holds no 2 buffers", msg)
    msg = H.launch_err(m, function(k) k:mte_get_pipelined(d, s, k:ub("int32", 16), 65, 1) end, 1)
    assert.matches("out of bounds", msg)
    m:close()
  end)
end)
