-- The server relay's kernels allocate per block, not per get (issue 24): a part is
-- (first, n) as two values, the deal's turn one table a block, each NIC block's pieces
-- made once at setup (relay.piece_lists), the outside PEs by arithmetic; so no closure,
-- upvalue or {first, n} table a piece or part (which made the Lua side's malloc and GC
-- 11-14 % of a timing-only allgather's CPU at 64-128 PEs).
local lab = require("shmemlab")
local op = require("shmemlab.op")
local relay = require("shmemlab.relay")
local runner = require("shmemlab.runner")

-- one timing-only launch of allgather on pes PEs x 48 blocks, count int32 a PE, the GC
-- stopped: KiB the launch allocated, the gets it issued (op.get_pipelined), its end
local function gather_heap(pes, count)
  local o = runner.load_op("allgather")
  local c = runner.config(o, { pes = pes, block_dim = 48, timing_only = true, count = count,
                               warmup = 0, iters = 1, baseline = "none" })
  local m = lab.machine{ profile = c.profile, pes = c.pes, prof_pe = -1, data = false }
  local s = o.setup(m, c)
  local saved, gets = op.get_pipelined, 0
  op.get_pipelined = function(...) gets = gets + 1; return saved(...) end
  collectgarbage(); collectgarbage("stop")
  local k0 = collectgarbage("count")
  local ok, err = pcall(o.run, m, c, s)
  local kib = collectgarbage("count") - k0
  collectgarbage("restart")
  op.get_pipelined = saved
  assert(ok, err)
  local now = m:now()
  m:close()
  return kib, gets, now
end

describe("the server relay's heap", function()
  it("grows by no closure or table a get: the gets added by a larger shard cost none", function()
    local kib1, gets1, us1 = gather_heap(16, 262144)
    local kib2, gets2, us2 = gather_heap(16, 524288)
    assert.are.equal(1504, gets1)
    assert.are.equal(2096, gets2)
    assert.are.equal("83.006756", string.format("%.6f", us1))
    -- (one-flow chains, the timing-only default, as the chunked chain and the data run)
    assert.are.equal("161.290058", string.format("%.6f", us2))
    -- the old kernels: 2,322 bytes a get added (a closure with its upvalues and a
    -- {first, n} table a part, a closure a piece); now only the windows first asked for
    local per_get = (kib2 - kib1) * 1024 / (gets2 - gets1)
    assert.is_true(per_get < 256, string.format("%.0f bytes a get", per_get))
  end)

  it("deals an item from a turn; an empty item keeps the turn", function()
    assert.same({ 0, 0, 0, 2 }, { relay.deal_turn(1, 3, 2, 0, 100, 2) })
    -- 650 in 3 parts of 300 from turn 0: block 1 takes part 1; a whole round moves the
    -- next item's first part on by one (turn 1)
    assert.same({ 300, 3, 1, 1 }, { relay.deal_turn(1, 3, 0, 650, 100, 2) })
    assert.same({ 200, 1, 0, 2 }, { relay.deal_turn(1, 3, 1, 150, 100, 2) })  -- 2 chunks, one part
  end)

  it("makes each NIC block's pieces once, as relay.pieces cuts them", function()
    local a = { count = 1000, esize = 4 }
    local lists = relay.piece_lists(a, 5, 2)
    local most = 0
    for b = 0, 1 do
      assert.same(relay.pieces(a, 5, b, 2), lists[b])
      most = math.max(most, #lists[b])
    end
    assert.are.equal(most, lists.most)
  end)
end)
