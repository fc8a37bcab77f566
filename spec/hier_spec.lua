-- The hierarchical designs (issue 23 items 3 and 4): the server relays of allgather,
-- reduce_scatter and allreduce across the RDMA cut of A2 servers, reduce_scatter's card
-- relay on A3, --algo flat|hier, and doc/hier.md's blocks.
local H = require("spec.helpers.ops")
local relay = require("shmemlab.relay")

local MiB16 = 4 * 1024 * 1024          -- int32 elements of 16 MiB

-- a timing-only run of op without a baseline, unprofiled: its result
local function timed(op, o)
  o.timing_only, o.baseline, o.prof_pe, o.warmup, o.iters = true, "none", -1, 0, 1
  return H.run(op, o)
end

-- the run's latency as the report prints it (us, 3 decimals) and its efficiency
-- against the bound (per cent)
local function eff(r)
  local s = r.metrics.summary
  return string.format("%.3f", s.latency_us), s.efficiency_pct
end

-- every element right, nothing reported by the checkers of a checked run
local function exact(r, what)
  assert.are.equal(0, r.shmem.check.wrong, what)
  if r.config.check then assert.are.equal(0, r.shmem.sanitizer.errors, what) end
end

describe("server relays on several A2 servers", function()
  it("reach at least 70% of the bound at 16 MiB a PE on 16 and 32 PEs", function()
    local want = {   -- op, PEs -> kernel_us (exact, virtual), a floor of efficiency
      { "allgather", 16, "1230.261", 90 }, { "allgather", 32, "2455.360", 95 },
      { "reduce_scatter", 16, "1265.645", 90 }, { "reduce_scatter", 32, "3295.153", 70 },
      { "allreduce", 16, "167.269", 80 }, { "allreduce", 32, "185.600", 75 },
    }
    for _, w in ipairs(want) do
      local r = timed(w[1], { pes = w[2], count = MiB16 })
      local us, pct = eff(r)
      local what = string.format("%s on %d PEs", w[1], w[2])
      assert.matches("server relay", r.shmem.describe.algorithm, 1, true)
      assert.are.equal(w[3], us, what)
      assert.is_true(pct >= w[4] and pct <= 100, what .. ": " .. pct)
    end
  end)

  it("are chosen from the size, and --algo forces either design", function()
    local function algo(op, pes, count, o)
      o = o or {}
      o.pes, o.count = pes, count
      return timed(op, o).shmem.describe.algorithm
    end
    assert.matches("^server relay", algo("allgather", 16, 12288))     -- 48 KiB over the NIC
    assert.matches("^signal ready", algo("allgather", 16, 8192))      -- 32 KiB
    assert.matches("^signal ready", algo("allgather", 8, MiB16))      -- one server
    assert.matches("^server relay", algo("allgather", 16, 8, { algo = "hier" }))
    assert.matches("^signal ready", algo("allgather", 16, MiB16, { algo = "flat" }))
    assert.matches("server relay", algo("reduce_scatter", 32, 1024))    -- 4 KiB slices
    assert.matches("atomic%-add puts", algo("reduce_scatter", 32, 512))
    assert.matches("server relays", algo("allreduce", 16, 131072))      -- 512 KiB
    assert.matches("atomic%-add puts", algo("allreduce", 16, 65536))
    assert.matches("atomic%-add puts", algo("allreduce", 16, 131073)) -- no whole slices
    local ok, e = pcall(algo, "allgather", 8, 1024, { algo = "hier" })      -- its tune constraint
    assert.is_false(ok)
    assert.matches("it needs algo flat or hier; hier needs several whole servers", tostring(e), 1, true)
    ok, e = pcall(algo, "reduce_scatter", 8, 1024, { algo = "hier" })        -- relay.mode
    assert.is_false(ok)
    assert.equal("refused", require("shmemlab.runner").kind(e))
    assert.matches("reduce_scatter: --algo hier needs several whole servers", tostring(e), 1, true)
  end)

  it("move every element, pulled or pushed, under --tool all", function()
    local function run(op, o)
      o.baseline, o.algo, o.check = "none", "hier", "all"
      return H.run(op, o)
    end
    exact(run("allgather", { pes = 16, count = 5003 }), "allgather 16")
    exact(run("allgather", { pes = 24, count = 5003, dtype = "int8", iters = 2 }), "allgather 24")
    exact(run("allgather", { pes = 16, count = 3001, block_dim = 11 }), "allgather 11 blocks")
    exact(run("allgather", { pes = 16, count = 5003, block_dim = 48, ub_bytes = 4096 }),
          "allgather 48 blocks, parts of several chunks")
    exact(run("allgather", { pes = 24, count = 301, dtype = "fp16", block_dim = 40,
                             ub_bytes = 1024 }), "allgather 40 blocks, by shard")
    exact(run("reduce_scatter", { pes = 16, count = 5003 }), "reduce_scatter pulled")
    exact(run("reduce_scatter", { pes = 24, count = 4099, reduce = "max", sym_bytes = 300000,
                                  iters = 2 }), "reduce_scatter pushed")
    exact(run("reduce_scatter", { pes = 16, count = 3001, reduce = "min", dtype = "int8",
                                  block_dim = 11 }), "reduce_scatter int8")
    exact(run("allreduce", { pes = 16, count = 16384, iters = 2 }), "allreduce")
    exact(run("allreduce", { pes = 24, count = 24576, reduce = "max", dtype = "bf16",
                             sym_bytes = 100000 }), "allreduce pushed")
    exact(run("broadcast", { pes = 16, count = 5003, iters = 2 }), "broadcast")
    exact(run("broadcast", { pes = 24, count = 40000, root = 13, dtype = "int8" }),
          "broadcast root 13")
  end)

  -- the gather blocks on a peer deal its shard and pieces in parts of whole UB chunks
  -- (relay.deal, relay.deal_turn): each part a few chunks, not a share of every piece
  it("deal a peer's items in parts of whole UB chunks, round robin", function()
    assert.same({ 0, 0 }, { relay.deal(0, 100, 7, 3) })
    assert.same({ 300, 1 }, { relay.deal(250, 100, 7, 3) })        -- less than 3 chunks
    assert.same({ 400, 3 }, { relay.deal(1080, 100, 7, 3) })       -- 11 chunks: 4 + 4 + 3
    assert.same({ 200, 7 }, { relay.deal(1400, 100, 7, 2) })       -- at most one a block
    local got = {}                              -- block -> its parts' {lo, n}, 3 items
    for t = 0, 2 do
      local turn = 0
      got[t] = {}
      for _, len in ipairs({ 650, 150, 450 }) do
        local per, parts, x0
        per, parts, x0, turn = relay.deal_turn(t, 3, turn, len, 100, 2)
        for x = x0, parts - 1, 3 do
          got[t][#got[t] + 1] = { len, x * per, math.min(per, len - x * per) }
        end
      end
    end
    -- 650: 3 parts (300 + 300 + 50), a whole round: the next item starts at block 1;
    -- 150: one part (block 1); 450: 2 parts (blocks 2 and 0)
    assert.same({ { 650, 0, 300 }, { 450, 300, 150 } }, got[0])
    assert.same({ { 650, 300, 300 }, { 150, 0, 150 } }, got[1])
    assert.same({ { 650, 600, 50 }, { 450, 0, 300 } }, got[2])
  end)

  it("gathers 1 MiB a PE on 16 PEs x 48 blocks in a fifth of the gets, and sooner",
     function()
    local op = require("shmemlab.op")
    local saved, calls, single = op.get_pipelined, 0, 0
    op.get_pipelined = function(k, dst, src, ub, count, pe, bufs)   -- the relay's gets
      calls = calls + 1
      if count <= #ub // 2 then single = single + 1 end
      return saved(k, dst, src, ub, count, pe, bufs)
    end
    local ok, r = pcall(timed, "allgather", { pes = 16, count = 262144, block_dim = 48 })
    op.get_pipelined = saved
    assert(ok, r)
    assert.matches("^server relay", r.shmem.describe.algorithm)
    -- a share of every piece for each of a peer's 6-7 blocks: 7,520 gets, 6,688 of one
    -- chunk at most, 92.428 us
    assert.are.equal(1504, calls)
    assert.are.equal(512, single)
    assert.are.equal("79.007", (eff(r)))
  end)

  -- broadcast's scatter relay (the root's server scatters a sub-piece to each other
  -- server, which gather the rest from each other); its root fetch one chain of gets
  -- (two get_pipelined calls a chunk, each draining its pipeline, held it at 60.6%;
  -- the root's local index elsewhere getting from the root unpaced, in bursts, at 76.6%)
  it("broadcast: from 1.6% to 83% of its bound on 16 PEs at 16 MiB", function()
    local r = timed("broadcast", { pes = 16, count = MiB16 })
    assert.matches("^scatter relay", r.shmem.describe.algorithm)
    local us, pct = eff(r)
    assert.are.equal("102.848", us)
    assert.is_true(pct > 80, tostring(pct))
    assert.matches("^root 0 stages", timed("broadcast", { pes = 16, count = 2048 })
                                        .shmem.describe.algorithm)     -- 8 KiB on two servers
  end)
end)

describe("reduce_scatter card relay on A3", function()
  it("reaches 81% and 90% of the card cut on 16 and 32 dies at 16 MiB", function()
    for pes, want in pairs({ [16] = "884.336", [32] = "1703.456" }) do
      local r = timed("reduce_scatter", { soc = "Ascend910_93", pes = pes, count = MiB16 })
      assert.matches("card relay", r.shmem.describe.algorithm, 1, true)
      local us, pct = eff(r)
      assert.are.equal(want, us)
      assert.is_true(pct >= 80, tostring(pct))
    end
  end)

  it("moves every element, chosen or forced, under --tool all", function()
    local function run(o)
      o.soc, o.baseline, o.check = "Ascend910_93", "none", "all"
      return H.run("reduce_scatter", o)
    end
    local r = run{ pes = 6, count = 163840 }
    assert.matches("card relay", r.shmem.describe.algorithm, 1, true)
    exact(r, "6 dies")
    exact(run{ pes = 8, count = 5000, reduce = "max", algo = "hier", iters = 2 }, "8 dies forced")
    assert.is_true(relay.applies({ profile = r.config.profile, pes = 6, count = 163840,
      block_dim = 16, sym_bytes = r.config.sym_bytes }, 3 * 163840, 4))
  end)
end)

describe("allreduce card relays on A3", function()
  it("reach 75.0% of the bound on 16 dies at 16 MiB, and move every element", function()
    local r = timed("allreduce", { soc = "Ascend910_93", pes = 16, count = MiB16 })
    assert.matches("card relays", r.shmem.describe.algorithm, 1, true)
    local us, pct = eff(r)
    assert.are.equal("120.389", us)
    assert.is_true(pct >= 70, tostring(pct))
    for _, o in ipairs({ { pes = 6, count = 48000 }, { pes = 8, count = 16384, reduce = "max",
                                                         iters = 2 } }) do
      o.soc, o.algo, o.baseline, o.check = "Ascend910_93", "hier", "none", "all"
      local c = H.run("allreduce", o)
      assert.matches("card relays", c.shmem.describe.algorithm, 1, true)
      exact(c, "allreduce on " .. o.pes .. " dies")
    end
  end)
end)
