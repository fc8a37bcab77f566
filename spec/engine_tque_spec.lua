-- k:tque (a TQueBind of UB buffers between MTE2 and MTE3, each method one
-- primitive) and k:sync_func (SyncFunc: a set_flag and a wait_flag in one
-- call) issue what the hand-written flags issue: the same virtual times, events
-- and bytes, side by side; their refusals.

local H = require("spec.helpers.engine")
local lab = H.lab

local ROW = 64

-- rows of src (a symmetric buffer) through UB into dst: the hand-written
-- flags of a depth-2 queue and a SyncFunc of MTE3_S (a wait of S, which may
-- catch up) between its two copies; each block its share of the rows from
-- the next PE's copy
local function by_hand(k, a)
  local ub, n = k:ub("fp32", 2 * ROW), 0
  for r = k.block, a.rows - 1, k.block_num do
    local h = n % 2
    local row = ub:sub(h * ROW, ROW)
    if n >= 2 then k:wait_flag("MTE3_MTE2", h) end
    k:data_copy(row, k:ptr(a.src, (k.pe + 1) % k.n_pes):sub(r * ROW, ROW), ROW)
    k:set_flag("MTE2_MTE3", h); k:wait_flag("MTE2_MTE3", h)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
    k:data_copy(a.dst:sub(r * ROW, ROW), row, ROW)
    k:set_flag("MTE3_MTE2", h)
    n = n + 1
  end
  for h = 0, math.min(n, 2) - 1 do k:wait_flag("MTE3_MTE2", (n - 1 - h) % 2) end
end

-- the same rows through a TQue, the MTE3_S flag by sync(k)
local function tque_kernel(sync)
  return function(k, a)
    local q = k:tque("fp32", 2, ROW)
    for r = k.block, a.rows - 1, k.block_num do
      local row = q:alloc_tensor()
      k:data_copy(row, k:ptr(a.src, (k.pe + 1) % k.n_pes):sub(r * ROW, ROW), ROW)
      q:en_que(row); row = q:de_que()
      sync(k)
      k:data_copy(a.dst:sub(r * ROW, ROW), row, ROW)
      q:free_tensor(row)
    end
    q:free_all_event()
  end
end
local by_tque = tque_kernel(function(k) k:sync_func("MTE3_S", 0) end)

-- one launch of kernel on a fresh machine: its end, events and dst's checksum
local function launch(kernel, opts)
  local m = lab.machine{ pes = opts.pes, data = opts.data }
  local a = { rows = opts.rows }
  a.src = m:malloc("fp32", opts.rows * ROW, "src"):fill("iota_pe")
  a.dst = m:alloc("fp32", opts.rows * ROW, "dst")
  local e0 = m:events()
  m:launch(kernel, opts.blocks, a)
  local out = { m:now(), m:events() - e0, opts.data and a.dst:checksum() or "" }
  m:close()
  return out
end

describe("k:tque and k:sync_func", function()
  it("time, count and move what the hand-written flags do", function()
    for _, o in ipairs({ { pes = 2, blocks = 3, rows = 20, data = true },
                         { pes = 4, blocks = 8, rows = 64, data = false },
                         { pes = 1, blocks = 1, rows = 1, data = true } }) do
      local want, got = launch(by_hand, o), launch(by_tque, o)
      assert.are.same(want, got, string.format("%d PEs x %d blocks", o.pes, o.blocks))
    end
  end)

  it("deepep.sync, the DeepEP ports' SyncFunc, is k:sync_func itself: its times and refusals", function()
    local deepep = require("shmemlab.deepep")
    assert.equals(lab.core.block_methods.sync_func, deepep.sync)
    local by_sync = tque_kernel(function(k) deepep.sync(k, "MTE3_S") end)   -- id omitted: 0
    local o = { pes = 2, blocks = 3, rows = 20, data = true }
    assert.are.same(launch(by_hand, o), launch(by_sync, o))
    local m, e = lab.machine{ pes = 1 }, nil
    m:launch(function(k) e = H.strip(H.err(function() deepep.sync(k, "MTE4_S") end)) end, 1)
    assert.matches("'MTE4_S' is not an AIV hard event (", e, 1, true)
    m:close()
  end)

  it("hand out the same buffer views and take back only their own", function()
    local m = lab.machine{ pes = 1 }
    local seen, e = {}, {}
    m:launch(function(k)
      local q = k:tque("bf16", 3, 16)
      for j = 1, 6 do
        local t = q:alloc_tensor()
        seen[j] = t
        q:en_que(t)
        assert(rawequal(q:de_que(), t))
        q:free_tensor(t)
      end
      e.foreign = H.strip(H.err(function() q:en_que(k:ub("bf16", 16)) end))
      e.empty = H.strip(H.err(function() q:de_que() end))
      e.depth = H.strip(H.err(function() k:tque("bf16", 9, 16) end))
      local t = q:alloc_tensor()
      q:en_que(t)
      e.sub = H.strip(H.err(function() q:free_tensor(t:sub(0, 8)) end))
      e.held = H.strip(H.err(function() q:free_all_event() end))
      q:free_tensor(q:de_que())
      q:free_all_event()
      e.after = H.strip(H.err(function() q:alloc_tensor() end))
    end, 1)
    for j = 1, 3 do assert.is_true(rawequal(seen[j], seen[j + 3])) end
    assert.is_false(rawequal(seen[1], seen[2]))
    assert.same({ 16, 16, "bf16" }, { #seen[1], seen[2].offset, seen[2].dtype })
    assert.same({
      foreign = "bad argument #1 to 'en_que' (not a tensor of this TQue (its alloc_tensor's))",
      empty = "DeQue of an empty TQue",
      depth = "bad argument #2 to 'tque' (depth must be in 1..8)",
      sub = "bad argument #1 to 'free_tensor' (not a tensor of this TQue (its alloc_tensor's))",
      held = "FreeAllEvent of a TQue with 1 tensor(s) not freed (1 queued)",
      after = "a TQue is not used after its free_all_event",
    }, e)
    m:close()
  end)

  it("take event ids of their own and 32-byte aligned buffers, as InitBuffer does", function()
    local m = lab.machine{ pes = 1 }
    local got, e = {}, {}
    m:launch(function(k)
      local a, b = k:tque("bf16", 2, 17), k:tque("fp32", 4, 8)
      local t1, t2 = a:alloc_tensor(), a:alloc_tensor()
      got.pitch = t2.offset - t1.offset                                -- 34 bytes -> 64
      a:en_que(t1); a:en_que(t2)
      a:free_tensor(a:de_que()); a:free_tensor(a:de_que())
      e.ids = H.strip(H.err(function() k:tque("int32", 3, 8) end))    -- 6 held, 2 left
      for _ = 1, 2 do                                  -- interleaved: no flag of a's is b's
        local ta, tb = a:alloc_tensor(), b:alloc_tensor()
        a:en_que(ta); b:en_que(tb)
        a:free_tensor(a:de_que()); b:free_tensor(b:de_que())
      end
      a:free_all_event()
      got.again = #k:tque("int32", 3, 8):alloc_tensor()                -- a's ids free again
      b:free_all_event()
    end, 1)
    assert.same({ pitch = 32, again = 8 }, got)
    assert.same({ ids = "bad argument #2 to 'tque' (the block's live TQues hold the other "
                        .. "event ids (8 in all))" }, e)
    m:close()
  end)

  it("a queue is its block's, in its launch", function()
    local m = lab.machine{ pes = 1 }
    local qs, e = {}, {}
    m:launch(function(k) qs[k.block] = k:tque("int32", 2, 8) end, 2)
    m:launch(function(k)
      if k.block == 0 then e.later = H.strip(H.err(function() qs[0]:alloc_tensor() end)) end
    end, 1)
    m:launch(function(k)
      if k.block == 0 then qs.live = k:tque("int32", 2, 8) end
      k:sync_all()
      if k.block == 1 then e.other = H.strip(H.err(function() qs.live:alloc_tensor() end)) end
    end, 2)
    local want = "a TQue is used by the block that made it (k:tque), in its launch"
    assert.same({ later = want, other = want }, e)
    m:close()
  end)

  it("core.tque_methods are a queue's own methods, callable as locals (q first)", function()
    local QM, m, got = lab.core.tque_methods, lab.machine{ pes = 1 }, {}
    local names = { "alloc_tensor", "en_que", "de_que", "free_tensor", "free_all_event" }
    m:launch(function(k)
      local q = k:tque("int32", 2, 8)
      for _, name in ipairs(names) do got[name] = QM[name] ~= nil and QM[name] == q[name] end
      local row = QM.alloc_tensor(q)
      QM.en_que(q, row); row = QM.de_que(q)
      QM.free_tensor(q, row)
      QM.free_all_event(q)
    end, 1)
    assert.same({ alloc_tensor = true, en_que = true, de_que = true, free_tensor = true,
                  free_all_event = true }, got)
    m:close()
  end)
end)
