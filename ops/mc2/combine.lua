-- mc2 combine: the CANN ops-transformer MoE combine kernel ported as a
-- baseline, by its structure: MoeDistributeCombineV2 (mc2/moe_distribute_combine_v2,
-- the LL kernel of Ascend910_93), one kernel on every AIV core, two phases:
-- 1. ExpertAlltoAllDispatchCopyAdd: the rows this PE received (expand_x, the
--    mc2 dispatch layout) split evenly over the cores; each core loads its rows'
--    expand_idx (PE, token, k) and sends row by row, starting at a rotation by
--    its PE number: GM -> UB, UB -> the source PE's window at slot token * topk
--    + k, then a 32-byte status block to the source PE's status window at the
--    same index (one flag per row);
-- 2. LocalWindowCopy: the PE's own tokens split over the cores; per token the
--    core polls the topk status blocks until all are set, clears them, then
--    per k: the row window -> UB, Cast to fp32, Muls by the expert scale, Add;
--    Cast back and one write of the token.
-- Window and status window alternate halves from one launch to the next.
local lab = require("shmemlab")
local moe = require("shmemlab.moe")
local mc2 = require("shmemlab.mc2")
local F = lab.frames

-- 1. the core's received rows back to their source PEs, one status block each
local function send_back(k, a)
  local H, K, g = a.hidden, a.routes.topk, a.geo
  local first, cnt = mc2.split(#a.layout.rows[k.pe], k.block_num, k.block)
  if cnt == 0 then return end
  k:prof_start(F.COPY_IN)
  local idx = k:ub("int32", mc2.align(cnt * mc2.IDX, 8), "backed")
  k:data_copy_pad(idx:sub(0, cnt * mc2.IDX), a.idx:sub(first * mc2.IDX, cnt * mc2.IDX),
                  cnt * mc2.IDX)
  local st = k:ub("int32", mc2.STATE, "backed")
  k:duplicate(st, mc2.FLAG, mc2.STATE)
  k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  k:prof_end(F.COPY_IN)
  local rows = { [0] = k:ub(a.dtype, a.stride), [1] = k:ub(a.dtype, a.stride) }
  for l = 0, cnt - 1 do
    local j, b = (l + k.pe) % cnt, l % 2                      -- staggered start
    local p, t, kk = k:get_value(idx, j * 3), k:get_value(idx, j * 3 + 1),
                     k:get_value(idx, j * 3 + 2)
    k:prof_start(F.COPY_IN)
    if l >= 2 then k:wait_flag("MTE3_MTE2", b) end
    k:data_copy_pad(rows[b]:sub(0, H), a.x:sub((first + j) * H, H), H)
    k:set_flag("MTE2_MTE3", b); k:wait_flag("MTE2_MTE3", b)
    k:prof_end(F.COPY_IN)
    k:prof_start(F.REMOTE_PUT_GET)
    local at = t * K + kk
    k:data_copy_pad(k:ptr(a.win, p):sub(a.half_win + at * g.slot, H), rows[b]:sub(0, H), H)
    k:pipe_barrier("MTE3")
    k:data_copy(k:ptr(a.state, p):sub(a.half_state + at * mc2.STATE, mc2.STATE), st, mc2.STATE)
    k:set_flag("MTE3_MTE2", b)
    k:prof_end(F.REMOTE_PUT_GET)
  end
  for l = math.max(0, cnt - 2), cnt - 1 do k:wait_flag("MTE3_MTE2", l % 2) end
end

-- WaitDispatch: the token's topk status blocks all set, then cleared
local function wait_token(k, a, u, t)
  local K = a.routes.topk
  local base = a.half_state + t * K * mc2.STATE
  k:prof_start(F.SIGNAL_WAIT)
  for kk = 0, K - 1 do
    k:wait_signal_value(a.state:sub(base + kk * mc2.STATE, mc2.STATE), u.wait, mc2.STATE,
                        lab.CMP_EQ, mc2.FLAG)
  end
  k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
  k:data_copy(a.state:sub(base, K * mc2.STATE), u.zero, K * mc2.STATE)
  k:set_value(u.dfx, 0, t)
  mc2.dfx(k, a.data_state, u.dfx)                              -- the DFX position word
  k:prof_end(F.SIGNAL_WAIT)
end

-- 2. the core's tokens: wait, weighted sum of the topk rows, one write each
local function combine_tokens(k, a)
  local H, K, T, g = a.hidden, a.routes.topk, a.routes.tokens, a.geo
  local first, n = mc2.split(T, k.block_num, k.block)
  if n == 0 then return end
  local Fs = moe.stride(H, 4)
  local u = { wait = k:ub("int32", mc2.STATE, "backed"), zero = k:ub("int32", K * mc2.STATE),
              dfx = k:ub("int32", 8, "backed"),
              sc = k:ub("fp32", mc2.align(T * K, 8), "backed"), row = k:ub(a.dtype, a.stride),
              f = k:ub("fp32", Fs), mul = k:ub("fp32", Fs), sum = k:ub("fp32", Fs),
              out = k:ub(a.dtype, a.stride) }
  k:prof_start(F.COPY_IN)
  k:duplicate(u.zero, 0, K * mc2.STATE)
  k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
  k:data_copy_pad(u.sc:sub(0, T * K), a.scales, T * K)
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  k:prof_end(F.COPY_IN)
  for t = first, first + n - 1 do
    wait_token(k, a, u, t)
    k:prof_start(F.LOCAL_COMPUTE)
    if t > first then k:set_flag("MTE3_V", 0); k:wait_flag("MTE3_V", 0) end
    k:duplicate(u.sum:sub(0, H), 0, H)
    for kk = 0, K - 1 do                                       -- ProcessMoeExpert
      local scale = k:get_value(u.sc, t * K + kk)
      if kk > 0 then k:set_flag("V_MTE2", 0); k:wait_flag("V_MTE2", 0) end
      k:data_copy_pad(u.row:sub(0, H), a.win:sub(a.half_win + (t * K + kk) * g.slot, H), H)
      k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
      k:cast(u.f:sub(0, H), u.row:sub(0, H), H)
      k:pipe_barrier("V")
      k:muls(u.mul:sub(0, H), u.f:sub(0, H), scale, H)
      k:pipe_barrier("V")
      k:add(u.sum:sub(0, H), u.sum:sub(0, H), u.mul:sub(0, H), H)
    end
    k:pipe_barrier("V")
    k:cast(u.out:sub(0, H), u.sum:sub(0, H), H, "rint")
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    k:set_flag("V_MTE2", 0); k:wait_flag("V_MTE2", 0)
    k:prof_end(F.LOCAL_COMPUTE)
    k:prof_start(F.FINALIZE)
    k:data_copy_pad(a.output:sub(t * H, H), u.out:sub(0, H), H)
    k:prof_end(F.FINALIZE)
  end
end

------------------------------------------------------------------------------
-- A2: MoeDistributeCombineA2 (Ascend910B): the cores split the source PEs; per
-- source PE its rows (local expert by local expert, ep_send_counts) are staged in
-- that PE's region of the window out with a flag after them; SyncAll; core 0
-- posts one RDMA write per other PE (HCCL BatchWrite), the core holding this PE
-- copies its own region row by row and sets its flag. Preload: per-expert counts
-- of this PE's rows (scalar, atomic add into the workspace), window offsets per
-- expert; WaitDispatch polls each expert PE's flag; LocalWindowCopy sums each
-- token's topk rows from the window in.

local C = mc2.A2C

local at = mc2.at
local region = mc2.region

-- AlltoAllDispatch: stage each destination PE's rows and flag, then send
local function a2_send(k, a, u)
  local R, H, n, per = a.routes, a.hidden, k.n_pes, a.routes.per_pe
  local first, cnt = mc2.split(n, k.block_num, k.block)
  k:prof_start(F.COPY_IN)
  k:data_copy(u.sc:sub(0, mc2.align(R.experts, 8)), a.send_counts, mc2.align(R.experts, 8))
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  local rows = {}
  for d = first, first + cnt - 1 do
    local out, row = region(a, d), 0
    for le = 0, per - 1 do
      local j = le * n + d
      local pre = j > 0 and k:get_value(u.sc, j - 1) or 0
      for x = pre, k:get_value(u.sc, j) - 1 do
        local b = row % 2
        if row >= 2 then k:wait_flag("MTE3_MTE2", b) end
        k:data_copy(u.row[b], a.x:sub(x * H, H), H)
        k:set_flag("MTE2_MTE3", b); k:wait_flag("MTE2_MTE3", b)
        k:data_copy(at(a.win_out, out + row * a.row_bytes, H, a.dtype), u.row[b], H)
        k:set_flag("MTE3_MTE2", b)
        row = row + 1
      end
    end
    for r = math.max(0, row - 2), row - 1 do k:wait_flag("MTE3_MTE2", r % 2) end
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
    k:p(at(a.win_out, out + row * a.row_bytes + C.SKIP, 1, "int32"), C.FLAG, k.pe)
    mc2.batch_item(k, u.item, d - first, row)
    rows[d] = row
  end
  if cnt > 0 then
    k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
    k:data_copy(a.items:sub(first * 8, cnt * 8), u.item:sub(0, cnt * 8), cnt * 8)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
  end
  k:fence()                                  -- the flags' dcci: S's stores out before the DMA reads
  k:prof_end(F.COPY_IN)
  k:prof_start(F.REMOTE_PUT_GET)
  k:sync_all()
  local mine = region(a, k.pe)
  if k.block == 0 then                                         -- BatchWrite
    for d = 0, n - 1 do
      if d ~= k.pe then
        local bytes = R.send[d][k.pe] * a.row_bytes + C.SKIP + 4
        k:roce_put_nbi(a.win_in:sub(mine, bytes), a.win_out:sub(region(a, d), bytes), u.wqe,
                       bytes, d)
      end
    end
  end
  if rows[k.pe] then                                           -- my own region
    local function row(buf) return function(r) return at(buf, mine + r * a.row_bytes, H, a.dtype) end end
    mc2.copy_rows(k, row(a.win_in), row(a.win_out), u.row, rows[k.pe], H)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
    k:p(at(a.win_in, mine + rows[k.pe] * a.row_bytes + C.SKIP, 1, "int32"), C.FLAG, k.pe)
  end
  k:prof_end(F.REMOTE_PUT_GET)
end

-- the first n 4-byte values of GM src into UB ub: DataCopy of whole 32-byte
-- blocks, DataCopyPad when n is not a multiple of 8 (as the kernel's copy params)
local function load_ints(k, ub, src, n)
  if n % 8 == 0 then k:data_copy(ub:sub(0, n), src:sub(0, n), n)
  else k:data_copy_pad(ub:sub(0, mc2.align(n, 8)), src:sub(0, n), n) end
end

-- Preload: this PE's rows per expert (scalar counts over the core's share of
-- the ids, atomic add into the workspace), per-PE window offsets of each expert
-- (prefix sums, the cores split the PEs), read back by every core
local function a2_preload(k, a, u)
  local per, E, TK = a.routes.per_pe, a.routes.experts, a.routes.tokens * a.routes.topk
  local Ea = mc2.align(E, 8)
  k:prof_start(F.LOCAL_COMPUTE)
  load_ints(k, u.ids, a.route_table, TK)
  k:duplicate(u.cnt, 0, Ea)
  k:duplicate(u.off, 0, Ea)
  k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
  if k.block == k.block_num - 1 then k:data_copy_pad(a.recv_count, u.cnt:sub(0, E), E) end
  k:sync_all()
  local first, cnt = mc2.split(TK, k.block_num, k.block)
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  k:set_flag("V_S", 0); k:wait_flag("V_S", 0)
  for i = first, first + cnt - 1 do
    local e = k:get_value(u.ids, i)
    k:set_value(u.cnt, e, k:get_value(u.cnt, e) + 1)
  end
  k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
  k:set_atomic("add", "int32")
  k:data_copy_pad(a.recv_count, u.cnt:sub(0, E), E)
  k:set_atomic_none()
  k:sync_all()
  k:data_copy_pad(u.cnt:sub(0, E), a.recv_count, E)
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  local g0, gn = mc2.split(k.n_pes, k.block_num, k.block)
  for g = g0, g0 + gn - 1 do
    local sum = 0
    for e = g * per, g * per + per - 1 do
      k:set_value(u.off, e - g * per, sum)
      sum = sum + k:get_value(u.cnt, e)
    end
    k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
    k:data_copy_pad(a.win_offset:sub(g * per, per), u.off:sub(0, per), per)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
  end
  k:sync_all()
  k:data_copy_pad(u.off:sub(0, E), a.win_offset, E)
  load_ints(k, u.idx, a.a2_idx, TK)
  load_ints(k, u.sc, a.scales, TK)
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  k:prof_end(F.LOCAL_COMPUTE)
end

-- WaitDispatch: the cores split the expert PEs; each polls the flag behind the
-- rows of its PEs, clears them; SyncAll
local function a2_wait(k, a, u)
  local per, n = a.routes.per_pe, k.n_pes
  local first, cnt = mc2.split(n, k.block_num, k.block)
  k:prof_start(F.SIGNAL_WAIT)
  local flags = {}
  for r = first, first + cnt - 1 do
    local last = (r + 1) * per - 1
    local rows = k:get_value(u.cnt, last) + k:get_value(u.off, last)
    flags[r] = at(a.win_in, region(a, r) + C.SKIP + rows * a.row_bytes, 8, "int32")
    k:wait_signal_value(flags[r], u.poll, 8, lab.CMP_EQ, C.FLAG)
  end
  for r = first, first + cnt - 1 do k:p(flags[r]:sub(0, 1), 0, k.pe) end
  k:sync_all()
  k:prof_end(F.SIGNAL_WAIT)
end

-- LocalWindowCopy: the core's tokens, each the weighted sum of its topk rows
local function a2_sum(k, a, u)
  local R, H, K, per = a.routes, a.hidden, a.routes.topk, a.routes.per_pe
  local first, n = mc2.split(R.tokens, k.block_num, k.block)
  for t = first, first + n - 1 do
    k:prof_start(F.LOCAL_COMPUTE)
    k:duplicate(u.sum:sub(0, H), 0, H)
    for kk = 0, K - 1 do
      local i = t * K + kk
      local e, scale = k:get_value(u.ids, i), k:get_value(u.sc, i)
      local row = k:get_value(u.off, e) + k:get_value(u.idx, i)
      k:set_flag("V_MTE2", 0); k:wait_flag("V_MTE2", 0)
      k:data_copy(u.row[0], at(a.win_in, region(a, e // per) + row * a.row_bytes, H, a.dtype), H)
      k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
      k:cast(u.f:sub(0, H), u.row[0], H)
      k:pipe_barrier("V")
      k:muls(u.f:sub(0, H), u.f:sub(0, H), scale, H)
      k:pipe_barrier("V")
      k:add(u.sum:sub(0, H), u.sum:sub(0, H), u.f:sub(0, H), H)
    end
    k:pipe_barrier("V")
    if t > first then k:set_flag("MTE3_V", 0); k:wait_flag("MTE3_V", 0) end
    k:cast(u.out, u.sum:sub(0, H), H, "rint")
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    k:prof_end(F.LOCAL_COMPUTE)
    k:prof_start(F.FINALIZE)
    k:data_copy(a.output:sub(t * H, H), u.out, H)
    k:pipe_barrier("V")
    k:prof_end(F.FINALIZE)
  end
end

local function a2_kernel(k, a)
  local R, H, al = a.routes, a.hidden, mc2.align
  local TK, Ea, Fs = R.tokens * R.topk, mc2.align(R.experts, 8), moe.stride(H, 4)
  local u = { sc = k:ub("int32", al(math.max(TK, Ea), 8), "backed"),
              ids = k:ub("int32", al(TK, 8), "backed"), idx = k:ub("int32", al(TK, 8), "backed"),
              cnt = k:ub("int32", Ea, "backed"), off = k:ub("int32", Ea, "backed"),
              item = k:ub("int32", al(k.n_pes, 8) * 8), wqe = k:ub("int32", 16),
              poll = k:ub("int32", 8, "backed"), row = { [0] = k:ub(a.dtype, a.stride),
              [1] = k:ub(a.dtype, a.stride) }, f = k:ub("fp32", Fs), sum = k:ub("fp32", Fs),
              out = k:ub(a.dtype, a.stride) }
  a2_send(k, a, u)
  u.sc = k:ub("fp32", al(TK, 8), "backed")                     -- the expert scales
  a2_preload(k, a, u)
  a2_wait(k, a, u)
  a2_sum(k, a, u)
end

local function kernel(k, a)
  mc2.init_win_state(k, a.data_state)
  send_back(k, a)
  combine_tokens(k, a)
end

return require("shmemlab.op").define {
  name = "mc2_combine",
  collective = "combine",
  title = "CANN mc2 MoeDistributeCombine (ported)",
  dtypes = { "bf16", "fp16" },
  unused = {},

  describe = function(c, s)
    return moe.describe(s, "MoeDistributeCombineV2: each received row put back to its source "
      .. "PE's window slot (token, k) with a status block per row; per token poll topk flags, "
      .. "weighted sum in fp32, one write", s.hidden, c.cores)
  end,

  payload = moe.payload,
  deepep = moe.deepep_combine,

  setup = function(m, c)
    return mc2.combine_state(m, c)
  end,

  run = function(m, c, s)
    s.tag = s.tag + 1
    local h = s.tag % 2                                        -- the window half in use
    s.half_win, s.half_state = h * s.win_half, h * (s.state_half or 0)
    return { m:launch({ name = "mc2_combine", kernel = mc2.is_a2(c) and a2_kernel or kernel },
                      c.cores, s) }
  end,

  check = moe.check_combine,
}
