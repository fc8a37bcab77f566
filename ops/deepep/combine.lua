-- DeepEP-Ascend normal-mode combine, the shipping kernel written on CANN SHMEM
-- (sgl-project/sgl-kernel-npu, shmem_moe_combine_normal.h), ported by
-- structure: one kernel on every AIV core, a pull design. The expert outputs
-- stay in each expert rank's receive buffer (DeepEP's per-expert windows, the
-- dispatch's layout); each rank gathers its own tokens' rows.
--
-- Reset the meta state, publish the addresses of the six buffers the kernel
-- shares, flag barrier, read every rank's; load put_offset (n x E int32, the
-- notify's output in the dispatch handle); the block's share of this rank's
-- tokens, one at a time: load the token's topk weights, expert ids and
-- send_token_idx, then for each k read the row from the expert's rank at
-- put_offset[e * n + me] + send_token_idx (DataCopyPad remote GM -> UB,
-- double-buffered), Cast to fp32, Muls by the weight, Add into the sum; Cast
-- the sum back (CAST_RINT) and write the token; flag barrier (every rank is
-- done reading). The balance path (ENABLE_REBALANCE, off by default) is not
-- ported.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local moe = require("shmemlab.moe")
local deepep = require("shmemlab.deepep")
local F = lab.frames

-- the UB of ReadTokenFromRemote (sizes as the source's InitBuffer calls)
local function read_ub(k, a)
  local H, S = a.hidden, a.stride
  local f32 = moe.stride(H, 4)
  return { out = k:ub(a.dtype, S), f = k:ub("fp32", f32), mul = k:ub("fp32", (H + 63) // 64 * 64),
           sum = k:ub("fp32", f32), q = k:ub(a.dtype, 2 * S),
           w = k:ub("fp32", 8, "backed"), idx = k:ub("int32", 8, "backed"),
           ids = k:ub("int32", 8, "backed"), cnt = k:ub("int32", a.n * a.E, "backed") }
end

-- ReadTokenAndWeightedSum: token t's topk rows, weighted and summed in fp32;
-- j counts the rows through the two-buffer queue; returns j
local function weighted_sum(k, a, u, t, j)
  local H, S, K, n, E = a.hidden, a.stride, a.routes.topk, a.n, a.E
  k:duplicate(u.sum, 0, H)
  for kk = 0, K - 1 do
    local e = k:get_value(u.ids, kk)
    if e >= 0 and e < E then
      local w = k:get_value(u.w, kk)
      local slot = k:get_value(u.cnt, e * n + k.pe) + k:get_value(u.idx, kk)
      local h = j % 2
      local row = u.q:sub(h * S, H)
      if j >= 2 then k:wait_flag("V_MTE2", h) end              -- AllocTensor: that half is free
      k:data_copy_pad(row, k:ptr(a.expert_out, e // (E // n)):sub(slot * H, H), H)
      k:set_flag("MTE2_V", h); k:wait_flag("MTE2_V", h)         -- EnQue, DeQue
      k:cast(u.f, row, H)
      k:pipe_barrier("V")
      k:muls(u.mul, u.f, w, H)
      k:pipe_barrier("V")
      k:add(u.sum, u.sum, u.mul, H)
      k:set_flag("V_MTE2", h)                                   -- FreeTensor
      k:pipe_barrier("V")
      j = j + 1
    end
  end
  k:pipe_barrier("V")
  k:cast(u.out, u.sum, H, "rint")
  deepep.sync(k, "V_MTE3")
  k:data_copy_pad(a.output:sub(t * H, H), u.out, H)
  return j
end

-- ReadTokenFromRemote: the block's share of this rank's tokens
local function read_token_from_remote(k, a)
  local K = a.routes.topk
  local per, first = deepep.split(a.routes.tokens, k.block_num, k.block)
  if per == 0 then return end
  local u = read_ub(k, a)
  deepep.sync(k, "MTE3_MTE2")
  k:data_copy_pad(u.cnt, a.put_offset, a.n * a.E)
  k:pipe_barrier("V")
  deepep.sync(k, "MTE2_S")
  local j = 0
  for t = first, first + per - 1 do
    deepep.sync(k, "MTE3_MTE2")
    k:data_copy_pad(u.w, a.weights:sub(t * K, K), K)
    k:data_copy_pad(u.ids, a.expert_ids:sub(t * K, K), K)
    k:data_copy_pad(u.idx, a.send_token_idx:sub(t * K, K), K)
    deepep.sync(k, "MTE2_S")
    j = weighted_sum(k, a, u, t, j)
  end
  for h = 0, math.min(j, 2) - 1 do k:wait_flag("V_MTE2", (j - 1 - h) % 2) end
end

local function kernel(k, a)
  local u = deepep.meta_ub(k, a)
  deepep.prologue(k, a, u, 6)        -- recv_x, topk_idx, weights, send_token_idx, counts, out
  k:prof_start(F.REMOTE_PUT_GET)
  read_token_from_remote(k, a)
  k:prof_end(F.REMOTE_PUT_GET)
  deepep.barrier(k, a, u, "STATE")   -- every rank has read its rows
end

return op.define {
  name = "deepep_combine",
  baseline = "combine",                 -- run as a primary op: beside ops/hccl/combine.lua
  collective = "combine",
  title = "DeepEP-Ascend normal combine (on CANN SHMEM)",
  dtypes = { "bf16", "fp16" },
  unused = {
    [F.COPY_IN] = "the tables and rows load inside the per-token loop (remote_put_get)",
    [F.LOCAL_COMPUTE] = "the weighted sum runs row by row between the reads (remote_put_get)",
  },

  describe = function(_, s)
    return deepep.describe(s, "pull: each token's topk rows read from the experts' windows, "
      .. "weighted fp32 sum in UB, one write per token; flag barriers, every AIV core", s.hidden)
  end,

  payload = moe.payload,
  deepep = moe.deepep_combine,

  setup = function(m, c)
    local s = deepep.state(m, c)
    local R, n, E, H = s.routes, s.n, s.E, s.hidden
    local row, f32 = s.stride * s.esize, moe.stride(H, 4) * 4
    deepep.check_ub(c, "combine", 3 * row + 2 * f32 + (H + 63) // 64 * 256 + 3 * 32
                    + (4 * n * E + 31) // 32 * 32 + 2 * 4 * deepep.SLOT + 256 + 4 * deepep.ADDR,
                    "three token rows, three fp32 rows, n x experts int32 offsets")
    deepep.combine_tables(m, s)
    local buf = m:malloc(c.dtype, R.max_recv * H, "recv_x")
    s.expert_out, s.expect = moe.expert_outputs(m, s.layout.routes, c.dtype, R.max_recv, c.seed,
                                                buf)
    s.output = m:alloc(c.dtype, R.tokens * H, "output"):fill("zero")
    return s
  end,

  run = function(m, _, s)
    return { m:launch({ name = "shmem_moe_combine_normal", kernel = kernel }, s.blocks, s) }
  end,

  check = moe.check_combine,
}
