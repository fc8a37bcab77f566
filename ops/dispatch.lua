-- dispatch: MoE token dispatch. Every PE holds local_tokens x hidden input rows;
-- each token's row goes to the PE of each of its topk experts and lands in that
-- PE's symmetric receive buffer by source PE, then token, then k (the layout of
-- shmemlab.moe). SHMEM style: a block loads a tile of its tokens into UB once,
-- packs the rows by destination PE in UB, puts each destination's run with one
-- UB -> remote GM copy, then quiet and one signal_op(ADD, rows) per destination;
-- a receiving PE's blocks wait until every source's row count has arrived
-- (signal_wait_until GE, counts cumulative over launches).
local lab = require("shmemlab")
local op = require("shmemlab.op")
local moe = require("shmemlab.moe")
local F = lab.frames

local function kernel(k, a)
  local H, S = a.hidden, a.stride
  local ub = k:ub(a.dtype, a.ub_elems)
  local tile, pack = ub:sub(0, a.tile_tokens * S), ub:sub(a.tile_tokens * S)
  local tiles, sent = a.plan[k.pe][k.block], moe.counter(k.n_pes)
  for i, t in ipairs(tiles) do
    k:prof_start(F.COPY_IN)
    moe.load_rows(k, tile, a.input:sub(t.first * H), t.n, H, S)
    k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
    k:prof_end(F.COPY_IN)
    k:prof_start(F.LOCAL_COMPUTE)
    moe.pack(k, pack, tile, t, H, S)                           -- rows grouped by destination
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    k:prof_end(F.LOCAL_COMPUTE)
    k:prof_start(F.REMOTE_PUT_GET)
    for _, g in ipairs(t.groups) do                            -- one put per destination PE
      moe.store_rows(k, k:ptr(a.recv, g.pe):sub(g.slot * H), pack:sub(g.first * S), g.count, H, S)
      sent[g.pe] = sent[g.pe] + g.count
    end
    if i < #tiles then k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0) end
    k:prof_end(F.REMOTE_PUT_GET)
  end
  k:prof_start(F.SIGNAL_WAIT)
  k:quiet()                                                    -- every put has landed
  for pe = 0, k.n_pes - 1 do
    if sent[pe] > 0 then k:signal_op(moe.sig(a.sig, k.pe), sent[pe], lab.SIGNAL_ADD, pe) end
  end
  for src = k.block, k.n_pes - 1, k.block_num do              -- all of src's rows are here
    k:signal_wait_until(moe.sig(a.sig, src), lab.CMP_GE, a.tag * a.routes.send[src][k.pe])
  end
  k:prof_end(F.SIGNAL_WAIT)
end

return op.define {
  name = "dispatch",
  collective = "dispatch",
  dtypes = { "fp16", "bf16" },
  defaults = { block_dim = 16 },        -- sizes: moe.DEFAULTS (count = local_tokens x hidden)
  unused = {
    [F.FINALIZE] = "the puts land in the receive buffers themselves: no write-back",
  },

  describe = function(c, s)
    return { algorithm = "token tiles packed by destination in UB, one put per destination, "
               .. "signal_op ADD row counts, signal_wait_until per source",
             chunk_elems = s.tile_tokens * s.hidden, ub_bytes = s.ub_bytes,
             cores = c.block_dim, routing = moe.summary(s.routes) }
  end,

  payload = function(c)
    local cfg = moe.config(c)
    return { local_tokens = cfg.tokens, hidden = cfg.hidden,
             dtype_size = lab.core.dtype_size(c.dtype) }
  end,

  setup = function(m, c)
    local s = moe.state(c, c.ub_bytes)
    local R, cap = s.routes, s.routes.max_recv
    s.tile_tokens = moe.tile_tokens(s, 1 + R.topk)             -- tile row + topk packed rows
    s.plan = moe.plan(R, c.block_dim, s.tile_tokens)
    s.route_table = moe.route_buffer(m, R)
    s.input = op.fill_input(m:alloc(c.dtype, R.tokens * s.hidden, "input"), c.dtype)
    s.recv = m:malloc(c.dtype, cap * s.hidden, "recv"):fill("zero")
    s.sig = m:malloc("int32", c.pes * moe.SIG, "dispatch_signals"):fill("zero")
    s.expect = moe.expect_dispatch(m, R, s.input, cap)
    return s
  end,

  run = function(m, c, s)
    s.tag = s.tag + 1
    return { m:launch({ name = "dispatch", kernel = kernel }, c.block_dim, s) }
  end,

  check = function(_, c, s)
    return moe.compare(s.recv, s.expect, s.routes.max_recv * s.hidden, c.pes)
  end,
}
