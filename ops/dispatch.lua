-- dispatch: MoE token dispatch. Every PE holds local_tokens x hidden input rows;
-- each token's row goes to the PE of each of its topk experts and lands in that
-- PE's symmetric receive buffer by source PE, then token, then k (the layout of
-- shmemlab.moe). SHMEM style: a block loads a tile of its tokens into UB once,
-- packs the rows by destination PE in UB, puts each destination's run with one
-- UB -> remote GM copy (the destinations staggered: each PE, and each block of
-- it, starts at a different one, moe.stagger), then quiet and one
-- signal_op(ADD, rows) per destination;
-- a receiving PE's blocks wait until every source's row count has arrived
-- (signal_wait_until GE, counts cumulative over launches).
-- dispatch_dtype "int8" sends every row as INT8 with a per-token fp32 scale
-- (DeepEP on Ascend's "INT8 dispatching, BF16 combining"): each token is
-- quantised in UB on the V pipe while its tile is packed (moe.pack_int8).
local lab = require("shmemlab")
local op = require("shmemlab.op")
local moe = require("shmemlab.moe")
local F = lab.frames

local function kernel(k, a)
  local H, S, W = a.hidden, a.stride, a.wire
  local u = moe.dispatch_ub(k, a)
  local tiles, sent = a.plan[k.pe][k.block], moe.counter(k.n_pes)
  for i, t in ipairs(tiles) do
    k:prof_start(F.COPY_IN)
    moe.load_rows(k, u.tile, a.input:sub(t.first * H), t.n, H, S)
    k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
    k:prof_end(F.COPY_IN)
    k:prof_start(F.LOCAL_COMPUTE)
    moe.pack_tile(k, u, t, a)                                  -- rows by destination (INT8?)
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    k:prof_end(F.LOCAL_COMPUTE)
    k:prof_start(F.REMOTE_PUT_GET)
    moe.put_groups(k, a.recv, "slot", u.pack, t.groups, sent, W.row, W.stride)  -- one per PE
    if i < #tiles then k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0) end
    k:prof_end(F.REMOTE_PUT_GET)
  end
  k:prof_start(F.SIGNAL_WAIT)
  moe.signal_counts(k, a.sig, sent)                            -- quiet, then the row counts
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
    return moe.describe(s, (s.wire.quant and "token tiles quantised to INT8 + fp32 scale and "
                            or "token tiles ") .. "packed by destination in UB, one put per "
                           .. "destination, signal_op ADD row counts, signal_wait_until per source",
                        s.tile_tokens * s.hidden, c.block_dim)
  end,

  payload = moe.dispatch_payload,
  tune = moe.tune(true),
  deepep = moe.deepep_dispatch,

  setup = function(m, c)
    local s = moe.state(c)
    local R, cap = s.routes, s.routes.max_recv
    s.wire = moe.wire(c, s)                                    -- the rows' dtype on the wire
    s.tile_tokens = math.min(moe.dispatch_tile_tokens(s, R.topk),   -- tile row + topk packed rows
                             c.tile_tokens or math.huge)      -- the tune knob
    s.plan = moe.plan(R, c.block_dim, s.tile_tokens, nil, nil, true)   -- staggered destinations
    s.route_table = moe.route_buffer(m, R)
    s.input = op.fill_input(m:alloc(c.dtype, R.tokens * s.hidden, "input"), c.dtype)
    s.recv = m:malloc(s.wire.dtype, cap * s.wire.row, "recv"):fill("zero")
    s.sig = m:malloc("int32", c.pes * moe.SIG, "dispatch_signals", "backed"):fill("zero")
    s.expect = moe.expect_dispatch(m, R, s.input, cap, s.wire)
    return s
  end,

  run = function(m, c, s)
    s.tag = s.tag + 1
    return op.launch(m, c, s, "dispatch", kernel)
  end,

  check = moe.check_dispatch,
}
