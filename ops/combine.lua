-- combine: MoE token combine, the reverse of dispatch. Every expert PE holds the
-- expert outputs of the rows it received (dispatch's receive layout); every
-- source PE ends with, for each of its tokens, sum over k of weight(k) times the
-- output of its k-th expert. SHMEM style, in two phases in one launch:
-- 1. as an expert PE (the put-back): each block takes an even share of the rows
--    of each path kind (RDMA, HCCS, SIO, local; moe.putback_plan), each PE and
--    block starting at a different source, so that every block moves the same
--    bytes over the same kinds of link and no source takes every PE's first
--    put at once; in chunks of half the UB, double-buffered (the next chunk
--    loads while the last one's puts stream): one GM -> UB load and one UB ->
--    remote GM put per source segment into that PE's symmetric staging buffer
--    (its send order); one quiet, then one signal_op(ADD, rows) per source PE,
--    all on the one row counter of each source;
-- 2. as a source PE: a block waits once, for the counter to reach all of its
--    PE's rows (tokens x topk), loads its tokens' staged rows (one copy per PE
--    group), sums them with weights in UB (Muls, Add) and writes the tile of
--    output tokens once.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local moe = require("shmemlab.moe")
local F = lab.frames

-- phase 1: chunk i in UB half i % 2; a half is loaded again once its puts have
-- landed (MTE3_MTE2 on event id = the half)
local function put_back(k, a, halves, sent)
  local H, S = a.hidden, a.stride
  local chunks = a.putback[k.pe][k.block]
  for i, ch in ipairs(chunks) do
    local h = i % 2
    if i > 2 then k:wait_flag("MTE3_MTE2", h) end
    k:prof_start(F.COPY_IN)
    moe.load_groups(k, halves[h], a.expert_out, "slot", ch.segs, H, S)
    k:set_flag("MTE2_MTE3", h); k:wait_flag("MTE2_MTE3", h)
    k:prof_end(F.COPY_IN)
    k:prof_start(F.REMOTE_PUT_GET)
    moe.put_groups(k, a.stage, "send", halves[h], ch.segs, sent, H, S)  -- one put per segment
    if i + 2 <= #chunks then k:set_flag("MTE3_MTE2", h) end
    k:prof_end(F.REMOTE_PUT_GET)
  end
end

local function kernel(k, a)
  local R, H, S, K = a.routes, a.hidden, a.stride, a.routes.topk
  local ub = k:ub(a.dtype, a.ub_elems)
  local half = a.chunk_rows * S
  local sent = moe.counter(k.n_pes)
  put_back(k, a, { [0] = ub:sub(0, half), [1] = ub:sub(half, half) }, sent)  -- 1. go home
  k:prof_start(F.SIGNAL_WAIT)
  moe.signal_counts(k, a.sig, sent, 0)                       -- quiet, then the row counts
  k:signal_wait_until(moe.sig(a.sig, 0), lab.CMP_GE, a.tag * R.tokens * K)  -- all mine home
  k:prof_end(F.SIGNAL_WAIT)
  local n = a.tile_tokens                                     -- 2. weighted sum per token
  local grp, out, tmp = ub:sub(0, n * K * S), ub:sub(n * K * S, n * S), ub:sub(n * (K + 1) * S, H)
  local tiles = a.plan[k.pe][k.block]
  for i, t in ipairs(tiles) do
    k:prof_start(F.COPY_IN)
    for _, g in ipairs(t.groups) do
      moe.load_rows(k, grp:sub(g.first * S), a.stage:sub(g.send * H), g.count, H, S)
    end
    k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
    k:prof_end(F.COPY_IN)
    k:prof_start(F.LOCAL_COMPUTE)
    moe.weighted_sum(k, out, grp, tmp, t, K, H, S)
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    k:prof_end(F.LOCAL_COMPUTE)
    k:prof_start(F.FINALIZE)
    moe.store_rows(k, a.output:sub(t.first * H), out, t.n, H, S)
    if i < #tiles then k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0) end
    k:prof_end(F.FINALIZE)
  end
end

return op.define {
  name = "combine",
  collective = "combine",
  dtypes = { "fp16", "bf16" },
  defaults = { block_dim = 16 },        -- sizes: moe.DEFAULTS (count = local_tokens x hidden)
  unused = {},

  describe = function(c, s)
    return moe.describe(s, "expert outputs put back to the sources' staging (each block an "
                           .. "even share of each path kind, staggered sources, double-buffered), "
                           .. "signal_op ADD row counts on one counter, weighted sum of each "
                           .. "token's topk rows in UB, one write per tile",
                        s.tile_tokens * s.hidden, c.block_dim)
  end,

  payload = moe.payload,
  tune = moe.tune(false),
  deepep = moe.deepep_combine,

  setup = function(m, c)
    local s = moe.state(c)
    local R, T, H = s.routes, s.routes.tokens, s.hidden
    s.tile_tokens = math.min(moe.tile_tokens(s, 1 + R.topk, 1),   -- topk rows + output row, tmp
                             c.tile_tokens or math.huge)          -- the tune knob
    s.plan = moe.plan(R, c.block_dim, s.tile_tokens)
    s.chunk_rows = s.ub_rows // 2                             -- double-buffered put-back
    s.putback = moe.putback_plan(R, c.block_dim, s.chunk_rows,
                                 function(d, p) return m:path(d, p) end)
    s.route_table = moe.route_buffer(m, R)
    s.expert_out, s.expect = moe.expert_outputs(m, R, c.dtype, R.max_recv, c.seed)
    s.stage = m:malloc(c.dtype, T * R.topk * H, "combine_stage")
    s.output = m:alloc(c.dtype, T * H, "output"):fill("zero")
    s.sig = m:malloc("int32", moe.SIG, "combine_signals", "backed"):fill("zero")
    return s
  end,

  run = function(m, c, s)
    s.tag = s.tag + 1
    return op.launch(m, c, s, "combine", kernel)
  end,

  check = moe.check_combine,
}
