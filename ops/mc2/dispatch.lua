-- mc2 dispatch: the CANN ops-transformer MoE dispatch kernels ported as a
-- baseline, by their structure (one kernel, every AIV core: GetCoreNumAiv).
-- The SoC picks the kernel, as the CANN op does:
--
-- Ascend910_93 (A3), MoeDistributeDispatchV2 (mc2/moe_distribute_dispatch_v2),
-- the LL kernel, in its phases:
-- 1. AlltoAllDispatch: every core loads the expert ids (bs x topk) and takes an
--    even share (SplitToCore) of the (token, k) pairs; per pair it counts the
--    pair's earlier rows to the same expert (CalTokenSendExpertCnt: vector ops
--    over every earlier id), loads the token, quantises it (INT8: dynamic quant
--    per token, the scale after the row), writes the triple (PE, token, k)
--    behind it (after MTE3_S: the previous row's put has landed) and puts the
--    row straight into the destination PE's window at the slot of (source PE,
--    expert) + count;
-- 2. SetStatus: the experts split over the cores; per expert the count over all
--    bs x topk ids, SyncAll, then one 32-byte status block (flag, count) to the
--    expert's PE at (local expert, source PE);
-- 3. WaitDispatch: the (local expert, source PE) blocks of this PE split over
--    the cores; each polls its blocks until every flag is set, clears them, and
--    posts its row total to the workspace; SyncAll;
-- 4. LocalWindowCopy: the same blocks, each row window -> UB -> expand_x, its
--    triple -> expand_idx, its scale -> dynamic_scales; ep_recv_counts;
-- 5. UpdateTokenNumsOut: SyncAll, the last core writes expert_token_nums.
--
-- Ascend910B (A2), MoeDistributeDispatchA2 (mc2/moe_distribute_dispatch,
-- "fullmesh"): the rows are staged by destination in the local window out,
-- status + rows + a data flag per destination PE go out in one RDMA write each
-- (HCCL BatchWrite, issued by core 0), the receivers poll status and data flag
-- and copy out. See a2_kernel below.
local lab = require("shmemlab")
local moe = require("shmemlab.moe")
local mc2 = require("shmemlab.mc2")
local F = lab.frames

local CMP_EQ = lab.CMP_EQ

-- the UB of a v2 core: ids (backed: GetValue), two in/out row pairs, the count
-- scratch, the quantiser's fp32 rows
local function v2_ub(k, a)
  local g, TK = a.geo, a.routes.tokens * a.routes.topk
  local u = mc2.count_ub(k, TK)
  u.ids = k:ub("int32", mc2.align(TK, 8), "backed")
  u.x, u.o = {}, {}
  for b = 0, 1 do
    u.x[b] = k:ub(a.dtype, a.stride)
    u.o[b] = a.wire.quant and k:ub("int8", g.ub) or k:ub(a.dtype, g.ub)
  end
  if a.wire.quant then
    local Fs = moe.stride(a.hidden, 4)
    u.f, u.t, u.r = k:ub("fp32", Fs), k:ub("fp32", Fs), k:ub("fp32", 8, "backed")
  end
  return u
end

-- 1. the core's (token, k) pairs, each row straight into its expert's window slot
local function send_rows(k, a, u)
  local R, L, g, H, K = a.routes, a.layout, a.geo, a.hidden, a.routes.topk
  local first, cnt = mc2.split(R.tokens * K, k.block_num, k.block)
  for idx = first, first + cnt - 1 do
    local b, t = idx % 2, idx // K
    k:prof_start(F.LOCAL_COMPUTE)
    local e = k:get_value(u.ids, idx)                          -- dstExpertId
    if t > 0 then mc2.count_cost(k, u, idx) end                -- curExpertCnt
    k:prof_end(F.LOCAL_COMPUTE)
    k:prof_start(F.COPY_IN)
    local into = a.wire.quant and u.x[b] or u.o[b]:sub(0, H)   -- xInQueue / xQueue
    k:data_copy_pad(into, a.input:sub(t * H, H), H)
    k:set_flag(a.wire.quant and "MTE2_V" or "MTE2_S", 0)
    k:wait_flag(a.wire.quant and "MTE2_V" or "MTE2_S", 0)
    k:prof_end(F.COPY_IN)
    k:prof_start(F.LOCAL_COMPUTE)
    if a.wire.quant then                                       -- QuantProcess
      local scale = moe.quantise(k, u.o[b]:sub(0, H), u.x[b], u, H)
      k:set_value(u.o[b]:sub(g.scale_at, 4):reinterpret("fp32"), 0, scale)
      k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    end
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)          -- FillTriple
    local tri = mc2.triple(u.o[b], g.idx_at)
    k:set_value(tri, 0, k.pe); k:set_value(tri, 1, t); k:set_value(tri, 2, idx % K)
    k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
    k:prof_end(F.LOCAL_COMPUTE)
    k:prof_start(F.REMOTE_PUT_GET)
    local d, le = e // R.per_pe, e % R.per_pe
    local slot = a.half_win + ((k.pe * R.per_pe + le) * R.tokens + L.before[k.pe][idx + 1]) * g.slot
    k:data_copy_pad(k:ptr(a.win, d):sub(slot, g.moved), u.o[b], g.moved)
    k:prof_end(F.REMOTE_PUT_GET)
  end
end

-- 2. SetStatus: the core's experts counted, SyncAll, one status block each
local function set_status(k, a, u)
  local R, L, n, TK = a.routes, a.layout, k.n_pes, a.routes.tokens * a.routes.topk
  local first, cnt = mc2.split(R.experts, k.block_num, k.block)
  local st = {}
  k:prof_start(F.LOCAL_COMPUTE)
  for e = first, first + cnt - 1 do
    mc2.count_cost(k, u, TK)
    st[e] = mc2.status_ub(k, L.counts[e // R.per_pe][(e % R.per_pe) * n + k.pe])
  end
  k:pipe_barrier("ALL")
  k:prof_end(F.LOCAL_COMPUTE)
  k:prof_start(F.SIGNAL_WAIT)
  k:sync_all()
  for e = first, first + cnt - 1 do
    local at = a.half_state + ((e % R.per_pe) * n + k.pe) * mc2.STATE
    k:data_copy(k:ptr(a.state, e // R.per_pe):sub(at, mc2.STATE), st[e], mc2.STATE)
  end
  k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
  k:prof_end(F.SIGNAL_WAIT)
end

-- 3. WaitDispatch: poll the core's status blocks, clear them, post the row total
local function wait_status(k, a)
  local first, cnt = mc2.split(a.routes.per_pe * k.n_pes, k.block_num, k.block)
  local ubs, total = {}, 0
  k:prof_start(F.SIGNAL_WAIT)
  for j = first, first + cnt - 1 do
    ubs[j] = k:ub("int32", mc2.STATE, "backed")
    k:wait_signal_value(a.state:sub(a.half_state + j * mc2.STATE, mc2.STATE), ubs[j],
                        mc2.STATE, CMP_EQ, mc2.FLAG)
    total = total + k:get_value(ubs[j], 1)
  end
  if cnt > 0 then                                              -- WaitDispatchClearStatus
    local z = k:ub("int32", cnt * mc2.STATE)
    k:duplicate(z, 0, cnt * mc2.STATE)
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    k:data_copy(a.state:sub(a.half_state + first * mc2.STATE, cnt * mc2.STATE), z, cnt * mc2.STATE)
    local w = k:ub("int32", mc2.STATE, "backed")               -- SyncCntOnCore
    k:duplicate(w, total, mc2.STATE)
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    k:data_copy(a.work:sub(k.block * mc2.STATE, mc2.STATE), w, mc2.STATE)
  end
  k:sync_all()
  k:prof_end(F.SIGNAL_WAIT)
  return first, cnt, ubs
end

-- 4. LocalWindowCopy: the core's blocks' rows window -> UB -> the outputs
local function copy_out(k, a, u, first, cnt, ubs)
  if cnt == 0 then return end
  local R, L, g, H, n = a.routes, a.layout, a.geo, a.hidden, k.n_pes
  k:prof_start(F.FINALIZE)
  local sums = k:ub("int32", mc2.align(k.block_num * mc2.STATE, 8))  -- GetCumSum
  k:data_copy(sums, a.work:sub(0, k.block_num * mc2.STATE), k.block_num * mc2.STATE)
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  local begin = first > 0 and L.recv_counts[k.pe][first - 1] or 0
  local out, row = k:ub("int32", mc2.align(cnt, 8), "backed"), 0
  for j = first, first + cnt - 1 do
    local c = k:get_value(ubs[j], 1)
    local p, le = j % n, j // n
    local base = a.half_win + (p * R.per_pe + le) * R.tokens * g.slot
    for r = 0, c - 1 do
      local b = row % 2
      if row >= 2 then k:wait_flag("MTE3_MTE2", b) end
      k:data_copy_pad(u.o[b], a.win:sub(base + r * g.slot, g.moved), g.moved)
      k:set_flag("MTE2_MTE3", b); k:wait_flag("MTE2_MTE3", b)
      local at = begin + r
      k:data_copy_pad(a.idx:sub(at * mc2.IDX, mc2.IDX), mc2.triple(u.o[b], g.idx_at), mc2.IDX)
      if a.wire.quant then
        k:data_copy_pad(a.scales:sub(at, 1), u.o[b]:sub(g.scale_at, 4):reinterpret("fp32"), 1)
      end
      k:data_copy_pad(a.x:sub(at * H, H), u.o[b]:sub(0, H), H)
      k:set_flag("MTE3_MTE2", b)
      row = row + 1
    end
    begin = begin + c
    k:set_value(out, j - first, begin)
  end
  for b = 0, math.min(row, 2) - 1 do k:wait_flag("MTE3_MTE2", (row - 1 - b) % 2) end
  k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
  k:data_copy_pad(a.counts:sub(first, cnt), out:sub(0, cnt), cnt)
  k:prof_end(F.FINALIZE)
end

-- 5. UpdateTokenNumsOut: the last core writes expert_token_nums (SetValue + dcci)
local function token_nums(k, a)
  local R = a.routes
  if R.per_pe > 1 then
    k:prof_start(F.SIGNAL_WAIT); k:sync_all(); k:prof_end(F.SIGNAL_WAIT)
  end
  if k.block ~= math.min(R.per_pe * k.n_pes, k.block_num) - 1 then return end
  k:prof_start(F.FINALIZE)
  for le = 0, R.per_pe - 1 do
    k:p(a.nums:sub(le, 1), a.layout.token_nums[k.pe][le], k.pe)
  end
  k:prof_end(F.FINALIZE)
end

local function a2_kernel()
  error("mc2 dispatch: the A2 kernel is not ported yet", 0)
end

local function v2_kernel(k, a)
  local u = v2_ub(k, a)
  local TK = a.routes.tokens * a.routes.topk
  k:prof_start(F.COPY_IN)
  k:data_copy_pad(u.ids:sub(0, TK), a.route_table, TK)
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  k:prof_end(F.COPY_IN)
  send_rows(k, a, u)
  set_status(k, a, u)
  local first, cnt, ubs = wait_status(k, a)
  copy_out(k, a, u, first, cnt, ubs)
  token_nums(k, a)
end

return require("shmemlab.op").define {
  name = "mc2_dispatch",
  collective = "dispatch",
  title = "CANN mc2 MoeDistributeDispatch (ported)",
  dtypes = { "bf16", "fp16" },
  unused = {},

  describe = function(c, s)
    return moe.describe(s, mc2.is_a2(c) and "MoeDistributeDispatchA2: stage by destination, "
        .. "one RDMA write (status + rows + flag) per PE, poll, copy out"
      or "MoeDistributeDispatchV2: per (token, k) count, quantise, put into the expert's "
        .. "window slot; status block per (expert, PE); poll, copy out", s.hidden, c.cores)
  end,

  payload = moe.dispatch_payload,
  deepep = moe.deepep_dispatch,

  setup = function(m, c)
    return mc2.dispatch_state(m, c)
  end,

  run = function(m, c, s)
    s.tag = s.tag + 1
    local h = s.tag % 2                                        -- dataState: the half in use
    s.half_win, s.half_state = h * s.win_half, h * s.state_half
    local kernel = mc2.is_a2(c) and a2_kernel or v2_kernel
    return { m:launch({ name = "mc2_dispatch", kernel = kernel }, c.cores, s) }
  end,

  check = mc2.check_dispatch,
}
