-- A pipelined transfer as one flow (issue 24 item 2): in a timing-only machine made
-- with chain_flow = true, a double-buffered chain (op.get_pipelined / put_pipelined)
-- whose one leg sets the pace is issued as one flow of its whole chunks but the last
-- plus the other leg's edge chunk (core/chain.c), falling back to the chunked calls
-- whenever a condition does not hold. The other leg's chunks but the edge one are
-- ghost flows in the solver, so a full HBM shares as it would with the chunks. The
-- chunked form and the one-flow form run side by side on the same shapes and give
-- the same times to the picosecond.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local runner = require("shmemlab.runner")

-- one launch: every block of every PE moves n int32 o.chains times (2 unless
-- told), through a UB of ub elements, from (get) or to (put) PE (pe + shift) %
-- pes; its figures
local function program(one, o)
  local m = lab.machine{ pes = o.pes, data = o.data or false, settle_ns = o.settle or 0,
                         prof_pe = -1, chain_flow = one }
  local nc = o.chains or 2
  local per = o.n * o.blocks * nc
  local s = m:malloc("int32", per, "src")
  local d = m:malloc("int32", per, "dst")
  local e0 = m:events()
  local r = m:launch(function(k)
    local ub = k:ub("int32", o.ub)
    local peer = (k.pe + o.shift) % k.n_pes
    local move = o.get and op.get_pipelined or op.put_pipelined
    for i = 0, nc - 1 do
      local at = (k.block * nc + i) * o.n
      move(k, d:sub(at, o.n), s:sub(at, o.n), ub, o.n, peer, o.bufs or 2)
    end
  end, o.blocks)
  local out = { kernel = r.kernel_us, now = m:now(), events = m:events() - e0,
                chains = m:chains(), bytes = m:path_bytes(), ghosts = m:ghosts() }
  m:close()
  return out
end

-- the largest difference of two runs' kernel times and clocks (us)
local function largest(a, b)
  local d = math.abs(a.now - b.now)
  for i = 1, #a.kernel do d = math.max(d, math.abs(a.kernel[i] - b.kernel[i])) end
  return d
end

-- 97280-byte chunks (a UB of 48640 int32 in halves): 5 chunks of 100000 int32, a
-- short last one; over HCCS (2 PEs), RDMA (16 PEs, shift 9) and in a server of 8
local EXACT = {
  { pes = 2, blocks = 4, n = 100000, ub = 48640, get = true, shift = 1 },
  { pes = 16, blocks = 8, n = 65536, ub = 48640, get = true, shift = 9 },
  { pes = 16, blocks = 8, n = 65536, ub = 48640, get = true, shift = 9, settle = 1000 },
}
local CONTENDED = {
  { pes = 2, blocks = 4, n = 100000, ub = 48640, get = false, shift = 1 },
  { pes = 16, blocks = 8, n = 97280, ub = 48640, get = false, shift = 9 },
  { pes = 8, blocks = 48, n = 97280, ub = 48640, get = true, shift = 3, settle = 1000 },
  { pes = 8, blocks = 48, n = 97280, ub = 48640, get = false, shift = 3 },
}

describe("a pipelined transfer as one flow (chain_flow)", function()
  it("times as the chunked chain to the picosecond where no equal ends reorder", function()
    for _, o in ipairs(EXACT) do
      local a, b = program(false, o), program(true, o)
      assert.equal(0, largest(a, b))
      assert.same(a.bytes, b.bytes)             -- the hidden chunks' bytes count
      assert.equal(0, a.chains.one + a.chains.chunked)   -- off: no chain is asked
      assert.is_true(b.chains.one > 0)
      assert.is_true(b.events < a.events)
    end
    -- pinned: 2 PEs x 4 blocks, two gets of 5 chunks each
    local a, b = program(false, EXACT[1]), program(true, EXACT[1])
    assert.equal(123.336086, tonumber(string.format("%.6f", a.now)))
    assert.same({ 220, 112 }, { a.events, b.events })   -- (k:ub runs ahead: 8 wake-ups
                                                        -- fewer, 14 pipe steps more;
                                                        -- the one flow's ghosts end; a
                                                        -- pipe step due with its block's
                                                        -- landing rides on it)
    assert.same({ one = 16, chunked = 0 }, b.chains)
  end)

  it("times an operator as the chunked chain: allgather 16 PEs x 48 blocks, 1 MiB per PE",
     function()
    local function run(one, settle)
      local o = runner.load_op("allgather")
      local c = runner.config(o, { pes = 16, count = 262144, block_dim = 48, warmup = 0,
                                   iters = 1, baseline = "none", timing_only = true,
                                   algo = "flat", settle_ns = settle })
      local m = lab.machine{ profile = c.profile, pes = 16, prof_pe = -1, data = false,
                             chain_flow = one }
      local s = o.setup(m, c)
      local e0 = m:events()
      o.run(m, c, s)
      local t, ev, ch = m:now(), m:events() - e0, m:chains()
      m:close()
      return t, ev, ch
    end
    for _, settle in ipairs({ 0, 1000 }) do
      local t0, e0 = run(false, settle)
      local t1, e1, ch = run(true, settle)
      assert.equal(t0, t1)
      assert.same({ one = 720, chunked = 48 }, ch)
      assert.is_true(e1 < e0 * 0.75)
    end
  end)

  it("times as the chunked chain where flows contend for links and HBM", function()
    for _, o in ipairs(CONTENDED) do
      local a, b = program(false, o), program(true, o)
      assert.equal(0, largest(a, b), string.format("%.6f us", a.now))
      assert.is_true(b.chains.one > 0)
      assert.equal(0, b.ghosts.late)
    end
  end)

  it("times a relay on a full HBM as the chunked chain (the ghosts share the HBM)", function()
    -- the server relay's blocks read their chunks in step, so their writes (gets) or
    -- reads (puts) to local GM fill the HBM together; left out of the solver they
    -- gave 320.351791 us for the allgather's 319.739551 and allreduce's
    -- 175.268717 us for 175.268879
    local function run(name, one)
      local o = runner.load_op(name)
      local c = runner.config(o, { pes = 16, count = 1048576 * (name == "allreduce" and 4 or 1),
                                   block_dim = 16, warmup = 0, iters = 1, baseline = "none",
                                   timing_only = true, algo = "hier" })
      local m = lab.machine{ profile = c.profile, pes = 16, prof_pe = -1, data = false,
                             chain_flow = one }
      o.run(m, c, o.setup(m, c))
      local t, ch, g = m:now(), m:chains(), m:ghosts()
      m:close()
      return string.format("%.6f", t), ch, g
    end
    for name, want in pairs({ allgather = "319.739551", allreduce = "175.268879" }) do
      local t0 = run(name, false)
      local t1, ch, g = run(name, true)
      assert.equal(want, t0, name)
      assert.equal(t0, t1, name)
      assert.is_true(ch.one > 100 and g.ghosts > 100, name)
      assert.equal(0, g.late, name)
    end
  end)

  it("holds a get's last chunk for its last ghost's landing, as the chunked chain", function()
    -- the server relay's allgather of 2 MiB a PE on 16 PEs x 48 blocks: in 64 chains of
    -- 5 chunks the ghost of chunk 2 lands after the one flow's end, where the chunked
    -- read of chunk 4 waits for it; not held, the one flow ended at 161.290057 us
    local function run(one)
      local o = runner.load_op("allgather")
      local c = runner.config(o, { pes = 16, count = 524288, block_dim = 48, warmup = 0,
                                   iters = 1, baseline = "none", timing_only = true })
      local m = lab.machine{ profile = c.profile, pes = 16, prof_pe = -1, data = false,
                             chain_flow = one }
      o.run(m, c, o.setup(m, c))
      local t, g = m:now(), m:ghosts()
      m:close()
      return string.format("%.6f", t), g
    end
    local t0 = run(false)
    local t1, g = run(true)
    assert.equal("161.290058", t0)
    assert.equal(t0, t1)
    assert.same({ ghosts = 2128, late = 0 }, g)
  end)

  it("with a window, runs a chain bare where its other leg's HBM has room at its start",
     function()
    -- the server relay's allgather of 2 MiB a PE on 16 PEs x 48 blocks at 1000 ns: the
    -- chains that start with room for their writes in the local HBM have no ghosts
    -- (none of the exact run's 2,128 are left) and their gets are issued whole (the
    -- writes but the last out of the solver), so the HBM that fills during them shares
    -- less than with the chunks: 163.627368 us against the chunked chain's 163.681796 us
    -- (the window's own drift from the exact 161.290058 us is +1.48%)
    local function run(one)
      local o = runner.load_op("allgather")
      local c = runner.config(o, { pes = 16, count = 524288, block_dim = 48, warmup = 0,
                                   iters = 1, baseline = "none", timing_only = true })
      local m = lab.machine{ profile = c.profile, pes = 16, prof_pe = -1, data = false,
                             chain_flow = one, settle_ns = 1000 }
      o.run(m, c, o.setup(m, c))
      local t, g = m:now(), m:ghosts()
      m:close()
      return string.format("%.6f", t), g
    end
    assert.equal("163.681796", (run(false)))
    local t, g = run(true)
    assert.equal("163.627368", t)
    assert.same({ ghosts = 0, late = 0 }, g)
  end)

  it("with a window, issues a bare get whole where its last chunk outlasts a chunk's write",
     function()
    -- 2 PEs x 8 blocks, 3 gets each at 1000 ns: 3 whole chunks, and 10 chunks with a last
    -- of 20000 int32, go whole (the reads as one flow, its last chunk shorter); a last
    -- chunk of one int32 reads faster than a chunk is written, so that get keeps its
    -- last chunk's chunked calls. All time as the chunked chain to the picosecond
    local base = { pes = 2, blocks = 8, ub = 48640, get = true, shift = 1, chains = 3,
                   settle = 1000 }
    local ev = {}
    for i, n in ipairs({ 3 * 24320, 10 * 24320 + 20000, 3 * 24320 + 1 }) do
      local o = setmetatable({ n = n }, { __index = base })
      local a, b = program(false, o), program(true, o)
      assert.equal(0, largest(a, b), n)
      assert.same({ one = 48, chunked = 0 }, b.chains)
      ev[i] = b.events
    end
    assert.same({ 171, 174, 301 }, ev)
  end)

  it("takes chains whose chunks would fill the queues: S's park on them moves no pipe",
     function()
    -- 4 gets of 11 chunks back to back per block: the chunked calls fill the queues
    -- (depth 16) in the second chain and S parks on each landing from there on
    local o = { pes = 2, blocks = 2, n = 262144, ub = 48640, get = true, shift = 1, chains = 4 }
    for _, w in ipairs({ 0, 1000 }) do
      o.settle = w
      local a, b = program(false, o), program(true, o)
      assert.equal(0, largest(a, b))
      assert.same({ one = 16, chunked = 0 }, b.chains)
      assert.is_true(b.events * 2 < a.events, b.events .. " vs " .. a.events)
    end
  end)

  it("issues the chunked calls when a condition does not hold", function()
    local base = { pes = 2, blocks = 2, n = 100000, ub = 48640, get = true, shift = 1 }
    local function with(k, v)
      local o = {}
      for key, x in pairs(base) do o[key] = x end
      o[k] = v
      return program(true, o).chains
    end
    assert.same({ one = 0, chunked = 8 }, with("bufs", 1))          -- one buffer
    assert.same({ one = 0, chunked = 8 }, with("n", 48640))         -- two chunks
    assert.same({ one = 0, chunked = 8 }, with("ub", 8192))         -- the latencies set the pace
    assert.same({ one = 0, chunked = 8 }, with("data", true))       -- a data machine
  end)

  it("is on by default in every timing-only machine, off in a data one", function()
    local o = { pes = 2, blocks = 2, n = 100000, ub = 48640, get = true, shift = 1 }
    assert.same({ one = 8, chunked = 0 }, program(nil, o).chains)   -- settle_ns 0: exact
    o.settle = 1000
    assert.same({ one = 8, chunked = 0 }, program(nil, o).chains)
    o.data = true
    assert.same({ one = 0, chunked = 0 }, program(nil, o).chains)   -- data: never asked
  end)

  it("refuses a chain_flow that is not a boolean", function()
    assert.has_error(function() lab.machine{ pes = 2, data = false, chain_flow = 1 } end,
      "bad argument #1 to 'machine' (chain_flow must be a boolean, got number)")
  end)
end)
