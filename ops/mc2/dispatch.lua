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
  for b = 0, 1 do k:duplicate(u.o[b], 0, #u.o[b]) end       -- the rows' pads go out as zeros
  k:pipe_barrier("ALL")
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
      local scale = mc2.quantise(k, u.o[b]:sub(0, H), u.x[b], u, H)
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

-- 3. WaitDispatch: poll the core's status blocks (into one UB), clear their
-- flags (the masked Duplicate, timed as one SetValue per block: the lab has no
-- masked Duplicate) and write the blocks back, post the row total; SyncAll
local function wait_status(k, a)
  local first, cnt = mc2.split(a.routes.per_pe * k.n_pes, k.block_num, k.block)
  local S = mc2.STATE
  local st, total = k:ub("int32", math.max(cnt, 1) * S, "backed"), 0
  k:prof_start(F.SIGNAL_WAIT)
  for j = 0, cnt - 1 do
    k:wait_signal_value(a.state:sub(a.half_state + (first + j) * S, S), st:sub(j * S, S), S,
                        CMP_EQ, mc2.FLAG)
    total = total + k:get_value(st, j * S + 1)
  end
  if cnt > 0 then                                              -- WaitDispatchClearStatus
    for j = 0, cnt - 1 do k:set_value(st, j * S, 0) end
    k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
    k:data_copy(a.state:sub(a.half_state + first * S, cnt * S), st:sub(0, cnt * S), cnt * S)
    local w = k:ub("int32", S, "backed")                       -- SyncCntOnCore
    k:duplicate(w, total, S)
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    k:data_copy(a.work:sub(k.block * S, S), w, S)
  end
  k:sync_all()
  k:prof_end(F.SIGNAL_WAIT)
  return first, cnt, st
end

-- 4. LocalWindowCopy: the core's blocks' rows window -> UB -> the outputs
local function copy_out(k, a, u, first, cnt, st)
  k:prof_start(F.FINALIZE)
  k:set_value(u.dfx, 0, 1)                                     -- FLAG_AFTER_WAIT
  mc2.dfx(k, a.data_state, u.dfx)
  if cnt == 0 then k:prof_end(F.FINALIZE) return end
  local R, L, g, H, n = a.routes, a.layout, a.geo, a.hidden, k.n_pes
  if k.block > 0 then                                          -- GetCumSum: the cores before
    local sums = k:ub("int32", k.block * mc2.STATE)
    k:data_copy(sums, a.work:sub(0, k.block * mc2.STATE), k.block * mc2.STATE)
    k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  end
  local begin = first > 0 and L.recv_counts[k.pe][first - 1] or 0
  local out, row = k:ub("int32", mc2.align(cnt, 8), "backed"), 0
  for j = first, first + cnt - 1 do
    local c = k:get_value(st, (j - first) * mc2.STATE + 1)
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

------------------------------------------------------------------------------
-- A2: MoeDistributeDispatchA2

local A2 = mc2.A2

local at = mc2.at
local region = mc2.region

-- IndexSort (every core): each row's count within its expert, the per-expert
-- counts and their running sum, by scalar loops; the last core writes
-- expand_idx, its own status into its window in, and per PE the status block
-- and the data flag into that PE's region of its window out
local function a2_index_sort(k, a, u)
  local R, n, per, TK = a.routes, k.n_pes, a.routes.per_pe, a.routes.tokens * a.routes.topk
  k:prof_start(F.LOCAL_COMPUTE)
  for idx = 0, TK - 1 do
    local e = k:get_value(u.ids, idx)
    local slot = (e // per) * A2.ENTRIES + e % per
    local c = k:get_value(u.st, slot)
    k:set_value(u.cnt, idx, c)
    k:set_value(u.st, slot, c + 1)
  end
  local run = 0                                                -- expertCumsumTensor_
  for e = 0, R.experts - 1 do
    k:set_value(u.cum, e, run)
    run = run + k:get_value(u.st, (e // per) * A2.ENTRIES + e % per)
  end
  k:set_value(u.cum, R.experts, run)
  k:prof_end(F.LOCAL_COMPUTE)
  if k.block ~= k.block_num - 1 then return end
  k:prof_start(F.SIGNAL_WAIT)
  k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
  k:data_copy_pad(a.idx, u.cnt:sub(0, TK), TK)
  local me = k.pe * A2.ENTRIES
  k:data_copy(at(a.win_in, region(a, k.pe), A2.ENTRIES, "int32"), u.st:sub(me, A2.ENTRIES),
              A2.ENTRIES)
  for d = 0, n - 1 do
    local base = region(a, d)
    k:data_copy(at(a.win_out, base, A2.ENTRIES, "int32"), u.st:sub(d * A2.ENTRIES, A2.ENTRIES),
                A2.ENTRIES)
    local rows = a.routes.send[k.pe][d]
    k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
    k:data_copy_pad(at(a.win_out, base + A2.DATA + rows * a.row_bytes + A2.SKIP, 1, "int32"),
                    u.flag, 1)
  end
  k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
  k:prof_end(F.SIGNAL_WAIT)
end

-- ReorderTokens: the core's share of (token, k), each row (quantised) into its
-- destination's region of the window out at (expert offset + count), ping-pong
local function a2_reorder(k, a, u)
  local R, H, K, per = a.routes, a.hidden, a.routes.topk, a.routes.per_pe
  local first, cnt = mc2.split(R.tokens * K, k.block_num, k.block)
  local wd, rw = a.wire.dtype, a.row_bytes // lab.core.dtype_size(a.wire.dtype)
  for idx = first, first + cnt - 1 do
    local b = idx % 2
    k:prof_start(F.LOCAL_COMPUTE)
    local e = k:get_value(u.ids, idx)
    local d = e // per
    local off = k:get_value(u.cum, e) - k:get_value(u.cum, d * per) + k:get_value(u.cnt, idx)
    k:prof_end(F.LOCAL_COMPUTE)
    k:prof_start(F.COPY_IN)
    if idx - first >= 2 then k:wait_flag(a.wire.quant and "V_MTE2" or "MTE3_MTE2", b) end
    k:data_copy(a.wire.quant and u.x[b] or u.o[b]:sub(0, H), a.input:sub((idx // K) * H, H), H)
    k:prof_end(F.COPY_IN)
    k:prof_start(F.LOCAL_COMPUTE)
    if a.wire.quant then                                       -- QuantProcess
      k:set_flag("MTE2_V", b); k:wait_flag("MTE2_V", b)
      local scale = mc2.quantise(k, u.o[b]:sub(0, H), u.x[b], u, H)
      k:set_flag("V_MTE2", b)
      k:set_value(u.o[b]:sub(H, 4):reinterpret("fp32"), 0, scale)
      k:set_flag("V_MTE3", b); k:wait_flag("V_MTE3", b)
      k:set_flag("S_MTE3", b); k:wait_flag("S_MTE3", b)
    else
      k:set_flag("MTE2_MTE3", b); k:wait_flag("MTE2_MTE3", b)
    end
    k:prof_end(F.LOCAL_COMPUTE)
    k:prof_start(F.COPY_IN)
    k:data_copy(at(a.win_out, region(a, d) + A2.DATA + off * a.row_bytes, rw, wd), u.o[b], rw)
    if not a.wire.quant then k:set_flag("MTE3_MTE2", b) end
    k:prof_end(F.COPY_IN)
  end
  for idx = math.max(first, first + cnt - 2), first + cnt - 1 do
    k:wait_flag(a.wire.quant and "V_MTE2" or "MTE3_MTE2", idx % 2)
  end
end
-- SendToMoeExpert: the batch-write items (cores split the PEs), SyncAll; core 0
-- posts one RDMA write per other PE (HCCL BatchWrite: status + rows + data flag
-- of that PE's region of the window out into this PE's region of its window in);
-- the last core copies its own region row by row and sets its data flag
local function a2_send(k, a, u)
  local R, n = a.routes, k.n_pes
  local first, cnt = mc2.split(n, k.block_num, k.block)
  k:prof_start(F.REMOTE_PUT_GET)
  for d = first, first + cnt - 1 do                            -- ConstructBatchWriteInfo
    mc2.batch_item(k, u.item, d - first, d)
  end
  if cnt > 0 then
    k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
    k:data_copy(a.items:sub(first * 8, cnt * 8), u.item:sub(0, cnt * 8), cnt * 8)
  end
  k:pipe_barrier("ALL")
  k:sync_all()
  local mine = region(a, k.pe)
  if k.block == 0 then
    for d = 0, n - 1 do
      local bytes = A2.DATA + R.send[k.pe][d] * a.row_bytes + 4 + A2.SKIP
      if d ~= k.pe then
        k:roce_put_nbi(a.win_in:sub(mine, bytes), a.win_out:sub(region(a, d), bytes), u.wqe,
                       bytes, d)
      end
    end
  end
  if k.block == k.block_num - 1 then                           -- the PE's own rows
    local rows, RB = R.send[k.pe][k.pe], a.row_bytes
    local function row(buf) return function(r) return buf:sub(mine + A2.DATA + r * RB, RB) end end
    mc2.copy_rows(k, row(a.win_in), row(a.win_out), u.raw, rows, RB)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
    k:p(at(a.win_in, mine + A2.DATA + rows * a.row_bytes + A2.SKIP, 1, "int32"), A2.FLAG, k.pe)
  end
  k:prof_end(F.REMOTE_PUT_GET)
end

-- WaitDispatch: the cores split the source PEs; per PE poll its status flag,
-- read its counts, poll the data flag behind its rows and clear it; SyncAll
local function a2_wait(k, a, u)
  local per = a.routes.per_pe
  local first, cnt = mc2.split(k.n_pes, k.block_num, k.block)
  k:prof_start(F.SIGNAL_WAIT)
  for r = first, first + cnt - 1 do
    local base = region(a, r)
    k:wait_signal_value(at(a.win_in, base + 4 * A2.FLAG_AT, 8, "int32"), u.poll, 8, CMP_EQ,
                        A2.FLAG)
    k:data_copy(u.st:sub(r * A2.ENTRIES, A2.ENTRIES), at(a.win_in, base, A2.ENTRIES, "int32"),
                A2.ENTRIES)
    k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
    local rows = 0
    for le = 0, per - 1 do rows = rows + k:get_value(u.st, r * A2.ENTRIES + le) end
    local flag = at(a.win_in, base + A2.DATA + rows * a.row_bytes + A2.SKIP, 8, "int32")
    k:wait_signal_value(flag, u.poll, 8, CMP_EQ, A2.FLAG)
    k:p(flag:sub(0, 1), 0, k.pe)
  end
  k:sync_all()
  k:prof_end(F.SIGNAL_WAIT)
end

-- GetStatusCumSum (every core): every status block read (one copy per block:
-- the lab has no strided DataCopyPad), the running sums on V (Add per PE,
-- GatherMask timed as Muls, Adds per expert); the last core writes
-- expert_token_nums and ep_recv_counts
local function a2_cumsum(k, a, u)
  local L, n, per = a.layout, k.n_pes, a.routes.per_pe
  for r = 0, n - 1 do
    k:data_copy(u.rst:sub(r * A2.ENTRIES, A2.ENTRIES),
                at(a.win_in, region(a, r), A2.ENTRIES, "int32"), A2.ENTRIES)
  end
  k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
  k:duplicate(u.vs, 0, #u.vs)                   -- the UB -> UB gather of the counts, timed on V
  for _ = 1, n - 1 do k:add(u.vs:sub(0, per), u.vs:sub(0, per), u.vs:sub(0, per), per) end
  for _ = 0, per - 1 do
    k:muls(u.vs:sub(0, n), u.vs:sub(0, n), 1, n)
    k:add(u.vs:sub(0, n), u.vs:sub(0, n), u.vs:sub(0, n), n)
    k:set_flag("V_S", 0); k:wait_flag("V_S", 0)
  end
  if k.block ~= k.block_num - 1 then return end
  for le = 0, per - 1 do k:set_value(u.nums, le, L.token_nums[k.pe][le]) end
  for j = 0, n * per - 1 do k:set_value(u.counts, j, L.recv_counts[k.pe][j]) end
  k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
  k:data_copy_pad(a.nums, u.nums:sub(0, per), per)
  k:data_copy_pad(a.counts, u.counts:sub(0, n * per), n * per)
end

-- LocalWindowCopy: the cores split the source PEs; per (PE, local expert) the
-- rows window in -> UB -> expand_x at their running offset, the scales gathered
-- in UB and written once per (PE, expert)
local function a2_copy_out(k, a, u)
  local L, H, n, per = a.layout, a.hidden, k.n_pes, a.routes.per_pe
  k:prof_start(F.FINALIZE)
  a2_cumsum(k, a, u)
  local first, cnt = mc2.split(n, k.block_num, k.block)
  for r = first, first + cnt - 1 do
    local data = region(a, r) + A2.DATA
    for le = 0, per - 1 do
      local c = k:get_value(u.rst, r * A2.ENTRIES + le)
      local off = L.recv_counts[k.pe][le * n + r] - c
      for j = 0, c - 1 do
        local b = j % 2
        if j >= 2 then k:wait_flag("MTE3_MTE2", b) end
        k:data_copy(u.raw[b], a.win_in:sub(data + j * a.row_bytes, a.row_bytes), a.row_bytes)
        k:set_flag("MTE2_MTE3", b)
        if a.wire.quant then
          k:pipe_barrier("ALL")
          k:set_value(u.dyn, j, k:get_value(u.raw[b]:sub(H, 4):reinterpret("fp32"), 0))
          k:pipe_barrier("ALL")
        end
        k:wait_flag("MTE2_MTE3", b)
        k:data_copy(a.x:sub((off + j) * H, H), at(u.raw[b], 0, H, a.wire.dtype), H)
        k:set_flag("MTE3_MTE2", b)
      end
      for j = math.max(0, c - 2), c - 1 do k:wait_flag("MTE3_MTE2", j % 2) end
      data = data + c * a.row_bytes
      k:pipe_barrier("ALL")
      if a.wire.quant and c > 0 then k:data_copy_pad(a.scales:sub(off, c), u.dyn:sub(0, c), c) end
    end
  end
  k:prof_end(F.FINALIZE)
end

-- after a SyncAll core 0 clears every status block of this half
local function a2_clear(k, a, u)
  k:prof_start(F.SIGNAL_WAIT)
  k:sync_all()
  if k.block == 0 then
    k:duplicate(u.zero, 0, A2.ENTRIES)
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    for r = 0, k.n_pes - 1 do
      k:data_copy(at(a.win_in, region(a, r), A2.ENTRIES, "int32"), u.zero, A2.ENTRIES)
    end
  end
  k:prof_end(F.SIGNAL_WAIT)
end

-- the UB of an A2 core (scalar tables backed: the kernel reads them back)
local function a2_ub(k, a)
  local R, n, H, TK = a.routes, k.n_pes, a.hidden, a.routes.tokens * a.routes.topk
  local wd, rw = a.wire.dtype, a.row_bytes // lab.core.dtype_size(a.wire.dtype)
  local al = mc2.align
  local u = { ids = k:ub("int32", al(TK, 8), "backed"), cnt = k:ub("int32", al(TK, 8), "backed"),
              st = k:ub("int32", n * A2.ENTRIES, "backed"), rst = k:ub("int32", n * A2.ENTRIES, "backed"),
              cum = k:ub("int32", al(R.experts + 1, 8), "backed"), flag = k:ub("int32", 8, "backed"),
              poll = k:ub("int32", 8, "backed"), zero = k:ub("int32", A2.ENTRIES),
              item = k:ub("int32", al(n, 8) * 8), wqe = k:ub("int32", 16),
              vs = k:ub("int32", al(math.max(n, R.per_pe), 64)),
              nums = k:ub("int64", al(R.per_pe, 4), "backed"),
              counts = k:ub("int32", al(n * R.per_pe, 8), "backed"),
              dyn = k:ub("fp32", al(R.tokens, 8), "backed"), x = {}, o = {}, raw = {} }
  for b = 0, 1 do
    u.x[b] = k:ub(a.dtype, al(H, 16))
    u.o[b] = k:ub(wd, rw)
    u.raw[b] = k:ub("int8", a.row_bytes)
    k:duplicate(u.o[b], 0, rw)                                 -- the scale pads go out as zeros
  end
  k:pipe_barrier("ALL")
  if a.wire.quant then
    local Fs = moe.stride(H, 4)
    u.f, u.t, u.r = k:ub("fp32", Fs), k:ub("fp32", Fs), k:ub("fp32", 8, "backed")
  end
  return u
end

local function a2_kernel(k, a)
  local u = a2_ub(k, a)
  local TK, n = a.routes.tokens * a.routes.topk, k.n_pes
  k:prof_start(F.COPY_IN)
  k:data_copy_pad(u.ids:sub(0, TK), a.route_table, TK)
  k:duplicate(u.st, 0, n * A2.ENTRIES)
  k:duplicate(u.flag, A2.FLAG, 8)
  k:set_flag("V_S", 0); k:wait_flag("V_S", 0)
  for d = 0, n - 1 do k:set_value(u.st, d * A2.ENTRIES + A2.FLAG_AT, A2.FLAG) end
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  k:prof_end(F.COPY_IN)
  a2_index_sort(k, a, u)
  a2_reorder(k, a, u)
  a2_send(k, a, u)
  a2_wait(k, a, u)
  a2_copy_out(k, a, u)
  a2_clear(k, a, u)
end

local function v2_kernel(k, a)
  local u = v2_ub(k, a)
  u.dfx = mc2.init_win_state(k, a.data_state)
  local TK = a.routes.tokens * a.routes.topk
  k:prof_start(F.COPY_IN)
  k:data_copy_pad(u.ids:sub(0, TK), a.route_table, TK)
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  k:prof_end(F.COPY_IN)
  send_rows(k, a, u)
  set_status(k, a, u)
  local first, cnt, st = wait_status(k, a)
  copy_out(k, a, u, first, cnt, st)
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
