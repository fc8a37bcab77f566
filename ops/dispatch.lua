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
    moe.put_groups(k, a.recv, "slot", pack, t.groups, sent, H, S)   -- one put per destination PE
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
    return moe.describe(s, "token tiles packed by destination in UB, one put per destination, "
                           .. "signal_op ADD row counts, signal_wait_until per source",
                        s.tile_tokens * s.hidden, c.block_dim)
  end,

  payload = moe.payload,

  setup = function(m, c)
    local s = moe.state(c)
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
    return op.launch(m, c, s, "dispatch", kernel)
  end,

  check = moe.check_dispatch,
}
