-- DeepEP-Ascend normal-mode dispatch as sgl-kernel-npu's main branch ships it
-- on Ascend910_93 (deep_ep.cpp's intranode_dispatch at any rank count), ported
-- by structure: two launches, aclnnNotifyDispatch (notify_dispatch.h,
-- NotifyDispatch<int>, tiling key 23) and aclnnCamMoeDispatchNormal
-- (cam_moe_dispatch_normal.h, CamMoeDispatchNormal, tiling key 13000), each on
-- every AIV core (blockDim = aivNum). One round (DEEPEP_NORMAL_LONG_SEQ_ROUND
-- unset: per_round_tokens 8192, batchRounds 1). The notify's port is
-- ops/deepep/notify_hccl.lua; ops/deepep/dispatch_hybrid.lua runs it with the
-- SHMEM data kernel instead, for comparison.
--
-- The data kernel (one launch, every AIV core), one round of Process:
-- 0. Init: the block's data state (a word per block in windowsExp, read and
--    flipped each launch) picks the half of the window's data area and of the
--    status area; the rank's own window address from the HCCL context.
-- 1. InputToShare: the block's share of the rank's tokens x topk rows (the
--    first TK % blocks blocks one more); send_data_offset, its expert ids and
--    send_token_idx into UB; each row GM -> UB (xQueue, two buffers), the
--    triple (rank, token, k) written after the scale's 32 bytes (FillTriple:
--    MTE3_S before, S_MTE3 after), UB -> the rank's OWN window at row
--    send_data_offset[e] + send_token_idx, hScaleIdxSize bytes at a 512-byte
--    pitch.
-- 2. SetStatus: SyncAll (every row of the rank is in its window), then each
--    block's share of the E experts: 1.0f into slot rank + local expert x n of
--    the expert's rank's status area (one 32-byte DataCopy each).
-- 3. WaitStatus: pipe reset; recv_offset and recv_count into UB; the block's
--    share of the E (local expert, source) slots of its own status area polled
--    until they all hold 1.0f (the source sums the first floats until the sum is
--    the count), then cleared; SyncAll.
-- 4. ShareToOutputLongSeq: expert_global_offset, srcrank_in_expert_offset into
--    UB, r_in_srcrank_offset by E scalar GM reads into UB (GlobalTensor
--    GetValue through the scalar data cache, which the lab does not model, and
--    SetValue: here one DataCopyPad of the E int32, standing for the cache's
--    line fills; the 2E scalar accesses, 2.6 us at 256 experts, left out: E k:g
--    at the lab's uncached scalar_ns + 2 local_alpha would be 155 us a block,
--    and a loop of E in each of 6144 blocks trips the runaway guard); per
--    (local expert, source) pair of the block: its count (recv_count's
--    difference), the source's window address (HCCL context reads), and each
--    row pulled from the source's window into UB (xQueue), its triple to
--    expand_idx (12 bytes), its hidden values to expand_x at
--    expert_global_offset + srcrank_in_expert_offset + r_in_srcrank_offset + j.
-- Not modelled: the DynamicQuant (int8) path (refused; dispatch_hybrid.lua sends
-- int8), the diagnose statistics (off by default), more than one round
-- (SetRoundStatus / WaitRoundStatus), the combine's area before the data in the
-- window and the tiling's HCCL_BUFFSIZE check. The masked Duplicate that puts
-- 1.0f into word 0 of each status slot fills the slot here (one V pass either
-- way; only word 0 is read). expand_x's pitch is the lab's row stride (hidden
-- rounded up to 32 bytes; the source's is hidden: the same when hidden is a
-- multiple of 16, as 7168 is).
local lab = require("shmemlab")
local op = require("shmemlab.op")
local moe = require("shmemlab.moe")
local deepep = require("shmemlab.deepep")
local F = lab.frames
local dir = (debug.getinfo(1, "S").source:match("^@(.*)[/\\][^/\\]*$") or ".")
local D = dofile(dir .. "/dispatch.lua")                  -- the SHMEM dispatch beside this file
local N = dofile(dir .. "/notify_hccl.lua")               -- main's notify

local SLOT, al8, align32 = N.SLOT, N.al8, N.align32
local sync = deepep.sync
-- a row's views (GlobalTensor operator[], ReinterpretCast) by sub() and
-- reinterpret() as locals, as op.lua has sub: v:sub would look the method up
-- through the view's __index, a C call, each time (five views a row). A row's
-- primitives are locals too, called as deepep.sync is (the block or the TQue
-- first): k:name and q:name look the method up through the metatable's
-- __index, some 150 instructions each of the 25 calls a row
local sub, reinterpret = lab.core.view_methods.sub, lab.core.view_methods.reinterpret
local KM, QM = lab.core.block_methods, lab.core.tque_methods
local data_copy_pad, get_value, set_value = KM.data_copy_pad, KM.get_value, KM.set_value
local alloc_tensor, en_que, de_que, free_tensor = QM.alloc_tensor, QM.en_que, QM.de_que,
                                                  QM.free_tensor

-- the data kernel: CamMoeDispatchNormal (cam_moe_dispatch_normal.h, tiling key
-- 13000 on Ascend910_93, blockDim = every AIV core), one round

-- the row's sizes (Init): hUBAlignSize, the triple's int32 index in the UB row,
-- hScaleIdxSize (the row + a 32-byte scale + the triple), its UB pitch and its
-- window pitch (hOutGMAlignSize: 512-byte aligned), all in elements of dtype
-- (bytes for the triple's index)
local function cam_row(hidden, esize)
  local hub = align32(hidden * esize)
  local bytes = hub + 32 + 3 * 4
  return { hub = hub, idx = (hub + 32) // 4, len = bytes // esize,
           ub = align32(bytes) // esize, gm = (bytes + 511) // 512 * 512 // esize,
           bytes = bytes }
end

-- block b's share of total items over blocks (the source's split: the first
-- total % blocks blocks one more): count, first
local split = deepep.split

-- Init: the block's data state (a word per block in windowsExp: read, then
-- flipped), the rank's own window address from the HCCL context
local function cam_init(k, a)
  local word = a.cword:sub(k.block * SLOT, 1)
  local ds = k:g(word, k.pe)                                   -- DCCI, then the word
  k:p(word, ds == 0 and 1 or 0, k.pe)
  k:pipe_barrier("ALL")
  k:g(a.hctx:sub(0, 1), k.pe)                                  -- shareGM: localWindowsIn
  return { ds = ds, data = ds * a.cwin_half, status = ds * a.E * SLOT }
end

-- a row's views of its TQue buffer (the int32 view, its triple) are kept in a
-- table of the block's by the buffer (alloc_tensor gives each buffer's one
-- tensor), made on the buffer's first row: v:reinterpret and v:sub give back
-- the view they keep for that window, the same object, at a C call's cost.
-- Made inline, not by an __index function: a Lua call deeper than the row's
-- would grow every block's coroutine stack (6144 of them at EP128)

-- one row into the own window (xQueue: GM -> UB, FillTriple, UB -> window);
-- i32: the row tensors as int32, by tensor
local function share_row(k, a, q, i32, src, dst, token, kk)
  local R = a.row
  local row = alloc_tensor(q)
  data_copy_pad(k, row, src, a.hidden)
  en_que(q, row); row = de_que(q)
  sync(k, "MTE3_S")                                            -- FillTriple
  local t = i32[row]
  if t == nil then t = reinterpret(row, "int32"); i32[row] = t end
  set_value(k, t, R.idx, k.pe); set_value(k, t, R.idx + 1, token); set_value(k, t, R.idx + 2, kk)
  sync(k, "S_MTE3")
  data_copy_pad(k, dst, row, R.len)                            -- hScaleIdxSize bytes
  free_tensor(q, row)
end

-- InputToShare: the block's share of the rank's (token, k) rows, each into the
-- rank's own window at row send_data_offset[e] + send_token_idx
local function input_to_share(k, a, w)
  local E, K, R = a.E, a.routes.topk, a.row
  local q = k:tque(a.dtype, 2, R.ub)
  local off = k:ub("int32", al8(E), "backed")
  k:data_copy_pad(off, a.send_data_offset, E)
  sync(k, "MTE2_S")
  local cnt, first = split(a.routes.tokens * K, k.block_num, k.block)
  if cnt == 0 then return end
  local ids, idx = k:ub("int32", al8(cnt), "backed"), k:ub("int32", al8(cnt), "backed")
  k:data_copy_pad(ids, a.expert_ids:sub(first, cnt), cnt)
  k:data_copy_pad(idx, a.send_token_idx:sub(first, cnt), cnt)
  sync(k, "MTE2_S")
  local i32 = {}
  local token, src = -1, nil                 -- a token's K rows read one window of input
  for i = 0, cnt - 1 do
    local e = get_value(k, ids, i)
    if e >= 0 and e < E then
      local slot = get_value(k, off, e) + get_value(k, idx, i)
      local t = first + i
      if t // K ~= token then token = t // K; src = sub(a.input, token * a.hidden, a.hidden) end
      share_row(k, a, q, i32, src, sub(a.cwin, w.data + slot * R.gm, R.len), token, t % K)
    end
  end
  q:free_all_event()
end

-- SetStatus: the block's experts [first, first + cnt): 1.0f into slot
-- (rank + local expert x n) of the expert's rank's status area, after SyncAll
local function set_status(k, a, w, cnt, first)
  local st = k:ub("int32", math.max(al8(cnt), 8) * SLOT, "backed")
  if cnt > 0 then                                              -- 0, then 1.0f (masked: word 0)
    k:duplicate(st, 0, cnt * SLOT)
    k:pipe_barrier("V")
    k:duplicate(st, deepep.ONE, cnt * SLOT)
  end
  k:pipe_barrier("ALL")
  k:sync_all()
  for i = first, first + cnt - 1 do
    local at = w.status + (k.pe + i % a.le * a.n) * SLOT
    k:data_copy(k:ptr(a.cstat, i // a.le):sub(at, SLOT), st:sub((i - first) * SLOT, SLOT), SLOT)
  end
  sync(k, "MTE3_S")
end

-- WaitStatus: recv_offset and recv_count into UB, then the block's status
-- slots [first, first + cnt) (pairs local expert x n + source) polled until
-- each holds 1.0f (the source sums them until the sum is cnt: the same moment),
-- the last poll's copy and ReduceSum (timed as a reduce_max), the slots cleared;
-- SyncAll. Returns the UB the output step uses
local function wait_status(k, a, w, cnt, first)
  local E, R = a.E, a.row
  local u = { ws = k:ub("int32", math.max(cnt * SLOT, 64), "backed"), g = k:ub("fp32", al8(E)),
              sc = k:ub("fp32", 24, "backed"), q = k:tque(a.dtype, 2, R.ub),
              off = k:ub("int32", al8(E), "backed"), cnt = k:ub("int32", al8(E), "backed") }
  k:data_copy_pad(u.off, a.recv_offset, E)
  k:data_copy_pad(u.cnt, a.recv_count, E)
  if first >= E then k:sync_all(); return nil end
  local base = w.status + first * SLOT
  sync(k, "S_V")
  for i = 0, cnt - 1 do
    k:wait_signal_value(a.cstat:sub(base + i * SLOT, SLOT), u.ws:sub(i * SLOT, SLOT), SLOT,
                        lab.CMP_EQ, deepep.ONE)
  end
  k:data_copy(u.ws, a.cstat:sub(base, cnt * SLOT), cnt * SLOT)
  sync(k, "MTE2_V")
  k:reduce_max(u.sc:sub(8, 8), u.ws:reinterpret("fp32"), cnt * SLOT)   -- ReduceSum's pass
  sync(k, "V_S")
  k:get_value(u.sc, 8)
  sync(k, "MTE3_S"); sync(k, "S_V")
  k:duplicate(u.ws, 0, cnt * SLOT)
  sync(k, "V_MTE3")
  k:data_copy(a.cstat:sub(base, cnt * SLOT), u.ws, cnt * SLOT)
  sync(k, "MTE3_S")
  k:sync_all()
  return u
end

-- one row from its source's window to expand_x and its triple to expand_idx;
-- tri: the row tensors' triples, by tensor
local function output_row(k, a, q, tri, src, slot)
  local R = a.row
  local row = alloc_tensor(q)
  data_copy_pad(k, row, src, R.len)
  en_que(q, row); row = de_que(q)
  local t = tri[row]
  if t == nil then t = sub(reinterpret(row, "int32"), R.idx, 3); tri[row] = t end
  data_copy_pad(k, sub(a.expand_idx, slot * 3, 3), t, 3)
  data_copy_pad(k, sub(a.recv, slot * a.wire.row, a.hidden), row, a.hidden)
  free_tensor(q, row)
end

-- ShareToOutputLongSeq: the offsets into UB (r_in_srcrank_offset by E scalar
-- GM reads), then per pair its rows from the source's window, each to
-- expand_x at expert_global_offset + srcrank_in_expert_offset +
-- r_in_srcrank_offset + j
local function share_to_output(k, a, w, u, cnt, first)
  local n, E = a.n, a.E
  local ego, sie = k:ub("int32", al8(a.le), "backed"), k:ub("int32", al8(E), "backed")
  k:data_copy_pad(ego, a.expert_global_offset, a.le)
  k:data_copy_pad(sie, a.srcrank_in_expert_offset, E)
  local rin = k:ub("int32", al8(E), "backed")
  k:data_copy_pad(rin, a.r_in_srcrank_offset, E)               -- E GetValue + SetValue
  sync(k, "S_MTE2")
  sync(k, "MTE2_S")
  local tri = {}
  for i = first, first + cnt - 1 do
    local pre = i > 0 and k:get_value(u.cnt, i - 1) or 0
    local from, l = i % n, i // n
    local rows, off = k:get_value(u.cnt, i) - pre, k:get_value(u.off, i)
    local at = k:get_value(ego, l) + k:get_value(sie, i) + k:get_value(rin, l * n + from)
    k:g(a.hctx:sub(0, 1), k.pe)                                -- GetWindAddrByRankId
    if from ~= k.pe then k:g(a.hctx:sub(1, 1), k.pe) end
    local win = k:ptr(a.cwin, from)
    for r = 0, rows - 1 do
      output_row(k, a, u.q, tri, sub(win, w.data + (off + r) * a.row.gm, a.row.len), at + r)
    end
  end
  u.q:free_all_event()
end

local function cam_kernel(k, a)
  k:prof_start(F.FINALIZE)
  local w = cam_init(k, a)
  k:prof_end(F.FINALIZE)
  k:prof_start(F.REMOTE_PUT_GET)
  input_to_share(k, a, w)
  k:prof_end(F.REMOTE_PUT_GET)
  local cnt, first = split(a.E, k.block_num, k.block)
  k:prof_start(F.SIGNAL_WAIT)
  set_status(k, a, w, cnt, first)
  local u = wait_status(k, a, w, cnt, first)
  k:prof_end(F.SIGNAL_WAIT)
  if u then
    k:prof_start(F.REMOTE_PUT_GET)
    share_to_output(k, a, w, u, cnt, first)
    k:prof_end(F.REMOTE_PUT_GET)
  end
end

-- the data kernel's GM (per rank): the HCCL window's data halves (rows at a
-- 512-byte pitch; the combine's area before them is not modelled), the status
-- areas of windowsExp (two halves, a 32-byte slot per (local expert, source)),
-- the per-block data-state words, expand_idx (3 int32 a received row)
local function cam_buffers(m, s)
  local R, TK = s.routes, s.routes.tokens * s.routes.topk
  s.row = cam_row(s.hidden, s.esize)
  s.cwin_half = TK * s.row.gm
  local bytes, heap = 2 * s.cwin_half * s.esize, m:state().profile.sym_heap_bytes
  if bytes > heap then                 -- the tiling's HCCL_BUFFSIZE check, on the lab's heap
    error(string.format("deepep: the HCCL window's two data halves need %d bytes (2 x %d rows x "
      .. "%d), more than the symmetric heap's %d (machine option sym_heap_bytes stands for "
      .. "HCCL_BUFFSIZE)", bytes, TK, s.row.gm * s.esize, heap), 0)
  end
  s.cwin = m:malloc(s.dtype, 2 * s.cwin_half, "hccl_window_data")
  s.cstat = m:malloc("int32", 2 * s.E * SLOT, "hccl_window_status", "backed"):fill("zero")
  s.cword = m:malloc("int32", s.blocks * SLOT, "hccl_data_state", "backed"):fill("zero")
  s.expand_idx = m:alloc("int32", 3 * R.max_recv, "expand_idx", m:timing_only() and nil or "backed")
  s.expand_idx:fill("const", -1)
end

-- expand_idx on the host: (source rank, token, k) of every received row in its slot
local function check_expand_idx(m, c, s)
  local RD, K, cap = s.layout.routes, s.routes.topk, s.routes.max_recv
  local e = m:host("int32", c.pes * 3 * cap, "expect_expand_idx"):fill("const", -1)
  for p = 0, c.pes - 1 do
    for i = 1, RD.tokens * K do
      e:sub((RD.dest[p][i] * cap + RD.slot[p][i]) * 3, 3):fill({ p, (i - 1) // K, (i - 1) % K })
    end
  end
  return moe.compare(s.expand_idx, e, 3 * cap, c.pes)
end

return op.define {
  name = "deepep_dispatch_hccl",
  baseline = "dispatch",
  collective = "dispatch",
  title = "DeepEP-Ascend normal dispatch as sgl-kernel-npu main ships it on Ascend910_93 "
    .. "(NotifyDispatch, then CamMoeDispatchNormal, over the HCCL window)",
  dtypes = { "bf16", "fp16" },
  unused = { [F.COPY_IN] = "this notify loads its tables inside its role cores' local compute" },

  describe = function(_, s)
    return deepep.describe(s, string.format("notify_dispatch.h (counts to each expert's rank "
      .. "through the HCCL window, magic flags, eight role cores), then "
      .. "cam_moe_dispatch_normal.h (each rank's rows into its own window, a status flag per "
      .. "(expert, source), each expert's rank pulls its rows); sgl-kernel-npu main; "
      .. "get_dispatch_layout at setup %.3f us, not timed here", s.layout_us), s.hidden)
  end,

  payload = moe.dispatch_payload,
  deepep = moe.deepep_dispatch,

  setup = function(m, c)
    local s = N.prepare(m, c, true)
    if s.wire.quant then
      error("deepep: the port of cam_moe_dispatch_normal.h sends rows in the input dtype "
        .. "(its DynamicQuant path is not ported): use ops/deepep/dispatch_hybrid.lua for int8", 0)
    end
    local ub, what = deepep.cam_dispatch_ub_bytes(s.n, s.E, s.routes.tokens * s.routes.topk,
                                                  s.blocks, s.hidden, s.esize)
    deepep.check_ub(c, "cam_moe_dispatch_normal", ub, "its largest phase: " .. what)
    cam_buffers(m, s)
    return s
  end,

  run = function(m, _, s)
    return { m:launch({ name = "notify_dispatch", kernel = N.kernel }, s.blocks, s),
             m:launch({ name = "cam_moe_dispatch_normal", kernel = cam_kernel }, s.blocks, s) }
  end,

  check = function(m, c, s)
    local wrong, at, pe, want, got = D.check(m, c, s)
    if wrong > 0 then return wrong, at, pe, want, got end
    wrong, at, pe, want, got = N.check_tables(m, c, s)
    if wrong > 0 or m:timing_only() then return wrong, at, pe, want, got end
    return check_expand_idx(m, c, s)
  end,
}
