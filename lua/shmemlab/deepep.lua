-- shmemlab.deepep: the plumbing of the DeepEP-Ascend normal-mode ports
-- (ops/deepep/): the kernels of sgl-project/sgl-kernel-npu csrc/deepep written
-- on CANN SHMEM (shmem_notify_dispatch.h, shmem_moe_dispatch_normal.h,
-- shmem_moe_combine_normal.h) and the layout kernel they use
-- (dispatch_layout.h), so that each op file reads as a page of orchestration:
-- the host-side layout and references, the layout kernel, the notify
-- kernel's steps, the INT8 QuantProcess, and what the three kernels share:
--
-- * a meta region on every rank (their gva_gm): a STATE and a FLAG area of one
--   32-byte slot per rank, and an ADDR area where block 0 publishes the
--   addresses of the rank's buffers (PutShareAddr) and every block reads every
--   rank's (GetShareAddr: one 32/64-byte remote read per rank, in series). The
--   lab's buffers are symmetric, so k:ptr gives the address; the reads are
--   made for their cost.
-- * the rank split (SplitCoreCal): block b serves ranks [first, first + per)
--   of the n ranks, the first n % blocks blocks one more.
-- * the flag barrier (SetSyncFlag / WaitSyncFlag): SyncAll, then each block
--   writes 1.0f into its ranks' slots for this rank (one 32-byte DataCopy per
--   rank), polls its own slots of those ranks until they all hold 1.0f
--   (the sum of their first floats reaches per), clears them, SyncAll.
--
-- The layout DeepEP's receive buffers use (per-expert windows): on rank d the
-- rows of d's experts land by local expert, then source rank, then the row's
-- index among its source's rows to that expert (send_token_idx, (token, k)
-- order). put_offset[e * n + src] is where source src's rows to expert e start
-- on e's rank (the prefix the notify kernel computes); row (p, i) lands in slot
-- put_offset[e * n + p] + send_token_idx[p][i].
local lab = require("shmemlab")
local moe = require("shmemlab.moe")

local deepep = {}

deepep.SLOT = 8               -- int32 of one status slot (STATE_OFFSET: 32 bytes)
deepep.ADDR = 16              -- int32 of the ADDR area: up to 8 uint64 addresses (64 bytes)
deepep.ONE = 0x3F800000       -- the bits of 1.0f, the flag value

-- the source the ports follow (the SHMEM variant of DeepEP-Ascend's normal mode)
deepep.SOURCE = "sgl-project/sgl-kernel-npu csrc/deepep/ops/op_kernel/shmem_*_normal.h, "
  .. "shmem_notify_dispatch.h (pull request 328 @ 4054137)"

------------------------------------------------------------------------------
-- host side: sizes, layout, buffers

-- SplitCoreCal: block b's share of total items over blocks: per, first
function deepep.split(total, blocks, b)
  local per, rem = total // blocks, total % blocks
  if b < rem then return per + 1, per * b + b end
  return per, per * b + rem
end

-- the layout of a routing R as DeepEP computes it: count[p][e] (rows of p to
-- expert e), idx[p][i] (send_token_idx), put_offset[e * n + src] (0-based
-- Lua array, index e * n + src + 1) and a routing table RD that is R with
-- the slots of DeepEP's receive layout (for moe's references). idx and RD's
-- slot are made when first read: a timing-only dispatch never reads them
function deepep.layout(R)
  local n, E, per, TK = R.n_pes, R.experts, R.per_pe, R.tokens * R.topk
  local count, slot = {}, {}
  for p = 0, n - 1 do count[p] = lab.core.route_count(R.expert[p], TK, E, per) end
  local put = {}
  for d = 0, n - 1 do
    local at = 0
    for e = d * per, (d + 1) * per - 1 do
      for src = 0, n - 1 do
        put[e * n + src + 1] = at
        at = at + count[src][e]
      end
    end
  end
  local L = setmetatable({ count = count, put_offset = put }, { __index = function(t, key)
    if key ~= "idx" then return nil end
    local idx = {}                                 -- each row's index among its expert's
    for p = 0, n - 1 do
      local c, ix, ex = {}, {}, R.expert[p]
      for e = 0, E - 1 do c[e] = 0 end
      for i = 1, TK do
        local e = ex[i]
        ix[i] = c[e]
        c[e] = c[e] + 1
      end
      idx[p] = ix
    end
    rawset(t, "idx", idx)
    return idx
  end })
  L.routes = setmetatable({}, { __index = function(t, key)    -- slot made when first read
    if key ~= "slot" then return R[key] end
    for p = 0, n - 1 do
      local sl, ex, ix = {}, R.expert[p], L.idx[p]
      for i = 1, TK do sl[i] = put[ex[i] * n + p + 1] + ix[i] end
      slot[p] = sl
    end
    rawset(t, "slot", slot)
    return slot
  end })
  return L
end

-- refuse a UB plan that does not fit: the shipping kernel's buffers of one
-- block against the core's UB (the profile's ub_bytes: the kernels size their
-- own buffers, not by --ub-bytes)
function deepep.check_ub(c, what, bytes, detail)
  local ub = c.profile.ub_bytes
  if bytes > ub then
    local runner = require("shmemlab.runner")
    error(runner.error_of("refused", string.format("deepep: the shipping %s kernel needs %d UB "
      .. "bytes per block at %d PEs (%s), the UB of a core is %d bytes", what, bytes, c.pes,
      detail, ub)), 0)
  end
end

-- bytes rounded up to whole 32-byte UB blocks (Ceil(x, UB_ALIGN) * UB_ALIGN)
local function align32(bytes) return (bytes + 31) // 32 * 32 end

-- the UB the shipping notify kernel (shmem_notify_dispatch.h) holds on its
-- largest block, block blocks / 2, at n ranks and E experts: ReloadRecvData
-- resets the pipe and holds the n x E int32 counts; BuildMaxBs adds five rows
-- of E int32 / fp32 (the source row, its max, its fp32 cast, the sum, the
-- ReduceSum work row) and BuildBalanceMatrix the n x 2n int32 matrix, none
-- freed before the kernel ends. Returns the total and its three parts
function deepep.notify_ub_bytes(n, E)
  local counts, rows, matrix = align32(4 * n * E), 5 * align32(4 * E), align32(8 * n * n)
  return counts + rows + matrix, counts, rows, matrix
end

-- sgl-kernel-npu main's notify (csrc/deepep/ops/op_kernel/notify_dispatch.h,
-- NotifyDispatch<int>, tiling key 23 on Ascend910_93): batchRounds (Init) at
-- round rounds (the host's DEEPEP_NORMAL_LONG_SEQ_ROUND, 1 when unset), E experts
-- and le local experts
function deepep.hccl_batch_rounds(round, E, le)
  if round == 1 then return 1 end
  if le >= 512 // 4 then return 16 end
  if E > 512 then return 8 end
  if E <= 256 then return 32 end
  return 16
end

-- CpGM2GMPingPong's two halves sit at fixed UB addresses (comm_args.h:
-- UB_HEAD_OFFSET 96, UB_MID_OFFSET = 96 + UB_SINGLE_PING_PONG_ADD_SIZE_MAX 97280 +
-- 32), each UB_SINGLE_PING_PONG_ADD_SIZE_MAX bytes, whatever they copy
deepep.HCCL_PINGPONG_END = 96 + 97280 + 32 + 97280
deepep.HCCL_CHUNK = 97280 // 4                 -- int32 of one ping-pong half

-- the UB NotifyDispatch holds at n ranks, E experts, round rounds: the largest of
-- its phases on any block (each phase starts from a pipe reset or uses fixed
-- addresses): Init's flag buffer (UB_FLAG_SIZE 8 KiB); block 0's AssembleSendData
-- (counts, the (count, offset, tokens) triples, offsets, one rank's triples, each of
-- batchRounds rounds); the slices' ping-pong at fixed addresses; the role cores
-- 0-7 after the pipe reset (the n x batch triples, aligned per rank, and each
-- role's rows; block 0's Cast writes E floats from a 32-byte buffer, block 7's
-- aligned index reaches one 32-byte block past its row: counted as written).
-- Returns the total, the phase's name and a table of every phase's bytes
function deepep.hccl_notify_ub_bytes(n, E, round)
  local le = E // n
  local B = deepep.hccl_batch_rounds(round, E, le)
  local recv, cnt = n * align32(B * le * 3 * 4), align32(B * E * 4)
  local phases = {
    { "Init's flag buffer", 8192 },
    { "AssembleSendData", align32(B * E * 4) + align32(B * E * 12) + align32(B * E * 4)
                          + align32(B * le * 12) },
    { "the slices' ping-pong halves at fixed addresses", deepep.HCCL_PINGPONG_END },
    { "BuildTotalRecvTokens", recv + cnt + math.max(align32(B * 4), B * E * 4) + 32 },
    { "BuildRecvCount", recv + cnt },
    { "BuildRecvOffset", recv + cnt },
    { "BuildMaxBs", recv + 2 * align32(n * 4) },
    { "BuildRecvTokenPerExp", recv + cnt + align32(B * le * 4) },
    { "BuildExpGlobalOffset", recv + cnt + 2 * align32(le * 4) },
    { "BuildsrcRankInExpOffset", recv + cnt + 2 * align32(n * le * 4) },
    { "BuildRInSrcrankOffset", recv + cnt + align32(n * le * 4) + align32(B * E * 4) + 32 },
  }
  local top = phases[1]
  for _, ph in ipairs(phases) do if ph[2] > top[2] then top = ph end end
  return top[2], top[1], phases
end

-- the UB CamMoeDispatchNormal (cam_moe_dispatch_normal.h, no quant) holds on
-- its largest block at n ranks, E experts, TK (token, k) rows per rank over
-- `blocks` cores, hidden x esize-byte rows: InputToShare (xQueue's two rows of
-- hScaleIdxSize rounded to 32 bytes, the E send offsets, the block's expert ids
-- and send_token_idx) or, after the pipe reset, WaitStatus and
-- ShareToOutputLongSeq (the status slots, at least 256 bytes; E floats for
-- ReduceSum; 96 scalar bytes; xQueue; recv_offset, recv_count; the le global
-- offsets; srcrank_in_expert_offset; r_in_srcrank_offset). Returns the larger,
-- its phase's name, and both
function deepep.cam_dispatch_ub_bytes(n, E, TK, blocks, hidden, esize)
  local row = align32(align32(hidden * esize) + 32 + 12)
  local rows = (TK + blocks - 1) // blocks
  local share = 2 * row + align32(4 * E) + 2 * align32(4 * rows)
  local status = (E + blocks - 1) // blocks
  local out = math.max(32 * status, 256) + align32(4 * E) + 96 + 2 * row + 2 * align32(4 * E)
              + align32(4 * (E // n)) + 2 * align32(4 * E)
  if share >= out then return share, "InputToShare", share, out end
  return out, "WaitStatus and ShareToOutputLongSeq", share, out
end

-- the tables NotifyDispatch leaves on each rank (round 1), from the host layout:
-- per PE p, Lua arrays (1-based) of send_data_offset, recv_data (per source: le
-- triples count, the source's offset, its tokens), recv_count (inclusive prefix
-- over (local expert, source)), recv_offset (the source's send_data_offset),
-- expert_global_offset, srcrank_in_expert_offset, r_in_srcrank_offset (zeros
-- at one round), and total, max_bs, per_expert (recv_tokens_per_expert)
function deepep.hccl_notify_tables(L, R)
  local n, E, le = R.n_pes, R.experts, R.per_pe
  local t, sdo = {}, {}
  for p = 0, n - 1 do
    local o, at = {}, 0
    for e = 0, E - 1 do o[e + 1] = at; at = at + L.count[p][e] end
    sdo[p] = o
  end
  for d = 0, n - 1 do
    local x = { send_data_offset = sdo[d], recv_data = {}, recv_count = {}, recv_offset = {},
                expert_global_offset = {}, srcrank_in_expert_offset = {},
                r_in_srcrank_offset = {}, total = 0, max_bs = R.tokens, per_expert = {} }
    for src = 0, n - 1 do
      for l = 0, le - 1 do
        local e, b = d * le + l, src * 3 * le + 3 * l
        x.recv_data[b + 1], x.recv_data[b + 2] = L.count[src][e], sdo[src][e + 1]
        x.recv_data[b + 3] = R.tokens
      end
    end
    for l = 0, le - 1 do
      local sum = 0
      for src = 0, n - 1 do
        local i, c = l * n + src + 1, L.count[src][d * le + l]
        x.total = x.total + c
        x.recv_count[i], x.recv_offset[i] = x.total, sdo[src][d * le + l + 1]
        x.srcrank_in_expert_offset[i], x.r_in_srcrank_offset[i] = sum, 0
        sum = sum + c
      end
      x.expert_global_offset[l + 1] = x.total - sum
      x.per_expert[l + 1] = sum
    end
    t[d] = x
  end
  return t
end

-- the state both ops start from: moe's, with every AIV core as a block (the
-- tiling's blockDim = aivNum), the layout and the meta region
function deepep.state(m, c)
  local s = moe.state(c)
  s.blocks, s.n, s.E = c.cores, c.pes, s.routes.experts
  s.layout = deepep.layout(s.routes)
  s.meta = m:malloc("int32", 2 * c.pes * deepep.SLOT + deepep.ADDR, "deepep_meta", "backed")
  s.meta:fill("zero")
  return s
end

-- an int32 GM buffer filled per PE from fn(p) -> Lua array (symmetric if sym)
function deepep.table_buffer(m, n_pes, len, name, sym, fn)
  local buf = sym and m:malloc("int32", len, name, "backed") or m:alloc("int32", len, name, "backed")
  for p = 0, n_pes - 1 do buf:on(p):fill(fn(p)) end
  return buf
end

-- combine's per-token inputs on every PE: topk_idx (the routes), topk weights
-- (fp32, moe.weight(k)) and send_token_idx; put_offset (the notify's output)
function deepep.combine_tables(m, s)
  local R, L, TK = s.routes, s.layout, s.routes.tokens * s.routes.topk
  s.expert_ids = moe.route_buffer(m, R)
  s.send_token_idx = deepep.table_buffer(m, s.n, TK, "send_token_idx", false,
                                         function(p) return L.idx[p] end)
  s.put_offset = deepep.table_buffer(m, s.n, s.n * s.E, "put_offset", false,
                                     function() return L.put_offset end)
  local w = {}
  for i = 1, TK do w[i] = moe.weight((i - 1) % R.topk) end
  s.weights = m:alloc("fp32", TK, "topk_weights", "backed")
  for p = 0, s.n - 1 do s.weights:on(p):fill(w) end
end

-- the dispatch's rows on the wire: the input dtype, or "int8" (quant_mode
-- int8, the kernel's DynamicQuant): {dtype, row = pitch of a receive row in
-- elements (hUBAlignSize: hidden padded to 32 bytes), stride, bytes = bytes a
-- row sends (int8: hidden values + its fp32 scale, which goes to dynamic_scales
-- apart), quant}. (The shipping combine reads rows at hidden x size bytes, so
-- the pair agrees only for whole 32-byte rows; each op here stands alone.)
function deepep.wire(c, s)
  local want = c.dispatch_dtype or c.dtype
  if want == c.dtype then
    return { dtype = c.dtype, row = s.stride, stride = s.stride, bytes = s.hidden * s.esize,
             quant = false }
  end
  if want ~= "int8" then
    error(string.format("deepep: dispatch dtype must be int8 or the input dtype %s, got '%s'",
                        c.dtype, tostring(want)), 0)
  end
  local P = (s.hidden + 31) // 32 * 32                        -- hUBAlignSize
  return { dtype = "int8", row = P, stride = P, bytes = s.hidden + 4, quant = true }
end

-- the dispatch's references: every row (pitch P elements, hidden values, pads
-- zero) in its slot; INT8 rows quantised on the host (view:quant_int8), their
-- scales (one fp32 per slot) in a second buffer. Returns rows, scales (or nil)
function deepep.expect_rows(m, RD, input, cap, wire)
  local H, K, P = RD.hidden, RD.topk, wire.row
  local e = m:host(wire.dtype, RD.n_pes * cap * P, "expect"):fill("zero")
  local sc = wire.quant and m:host("fp32", RD.n_pes * cap, "expect_scales"):fill("zero") or nil
  if m:timing_only() then return e, sc end
  for p = 0, RD.n_pes - 1 do
    local src = input:on(p)
    for i = 1, RD.tokens * K do
      local at, x = RD.dest[p][i] * cap + RD.slot[p][i], src:sub((i - 1) // K * H, H)
      if sc then e:sub(at * P, H):quant_int8(x, sc:sub(at, 1))
      else e:sub(at * P, H):copy(x) end
    end
  end
  return e, sc
end

------------------------------------------------------------------------------
-- kernel side: the meta region and the flag barrier

local function area(a, kind)
  local n = a.n
  if kind == "STATE" then return 0 end
  if kind == "FLAG" then return n * deepep.SLOT end
  return 2 * n * deepep.SLOT
end

-- SyncFunc<HardEvent::event>: set + wait of the event on id 0, one call:
-- sync(k, event) is k:sync_func(event) itself (its id omitted: 0), so a row's
-- syncs cost no Lua frame and no method lookup, and a checked run's finding
-- names the line that called sync (a C function adds no frame of its own)
local sync = lab.core.block_methods.sync_func
deepep.sync = sync

-- the block's meta UB and rank share: {status, wait, addr, per, first}
function deepep.meta_ub(k, a)
  local per, first = deepep.split(a.n, k.block_num, k.block)
  local u = { per = per, first = first }
  if per > 0 then
    u.status = k:ub("int32", (per + 7) // 8 * 8 * deepep.SLOT, "backed")
    u.wait = k:ub("int32", math.max(per * deepep.SLOT, 64), "backed")
  end
  u.addr = k:ub("int32", deepep.ADDR, "backed")
  return u
end

-- ResetMetaState: clear this rank's STATE slots of the block's ranks
function deepep.reset_meta_state(k, a, u)
  if u.per == 0 then return end
  sync(k, "S_V")
  k:duplicate(u.wait, 0, u.per * deepep.SLOT)
  sync(k, "V_MTE3")
  k:data_copy(a.meta:sub(u.first * deepep.SLOT, u.per * deepep.SLOT), u.wait,
              u.per * deepep.SLOT)
  sync(k, "MTE3_S")
end

-- PutShareAddr: block 0 writes the rank's `count` buffer addresses (a 64-bit
-- SetValue each: its two 32-bit words here; S_MTE3, MTE2_MTE3) into its own ADDR
-- area (DataCopyPad of 8 bytes each)
function deepep.put_share_addr(k, a, u, count)
  if k.block ~= 0 then return end
  for i = 0, count - 1 do k:set_value(u.addr, 2 * i, k.pe); k:set_value(u.addr, 2 * i + 1, 0) end
  sync(k, "S_MTE3"); sync(k, "MTE2_MTE3")
  k:data_copy_pad(a.meta:sub(area(a, "ADDR"), 2 * count), u.addr, 2 * count)
end

-- GetShareAddr: every rank's addresses, one remote read of the ADDR area
-- (count addresses, 32-byte aligned) per rank in series (MTE3_MTE2, DataCopyPad,
-- MTE2_S, GetValue each, S_MTE2 before the next rank's read reuses the buffer)
function deepep.get_share_addr(k, a, u, count)
  local len = (2 * count + 7) // 8 * 8
  for i = 0, a.n - 1 do
    sync(k, "MTE3_MTE2")
    k:data_copy_pad(u.addr:sub(0, len), k:ptr(a.meta, i):sub(area(a, "ADDR"), len), len)
    sync(k, "MTE2_S")
    for j = 0, count - 1 do k:get_value(u.addr, 2 * j) end
    sync(k, "S_MTE2")
  end
end

-- SetSyncFlag(kind): 1.0f into slot (this rank) of the block's ranks' kind area
-- (the masked Duplicate sets a slot's first float, the one the waiter sums: a
-- full Duplicate of 1.0f costs the same and sets it too), after SyncAll
function deepep.set_sync_flag(k, a, u, kind)
  if u.per == 0 then k:sync_all(); return end
  local S = deepep.SLOT
  k:duplicate(u.status, 0, u.per * S)
  k:pipe_barrier("V")
  k:duplicate(u.status, deepep.ONE, #u.status)
  k:pipe_barrier("ALL")
  k:sync_all()
  local at = area(a, kind) + k.pe * S
  for i = u.first, u.first + u.per - 1 do
    k:data_copy(k:ptr(a.meta, i):sub(at, S), u.status:sub((i - u.first) * S, S), S)
  end
  sync(k, "MTE3_S")
end

-- WaitSyncFlag(kind): poll this rank's kind slots of the block's ranks until
-- each holds 1.0f (the source polls them together until their sum is per: the
-- same moment), clear them, SyncAll
function deepep.wait_sync_flag(k, a, u, kind)
  if u.per == 0 then k:sync_all(); return end
  local S, base = deepep.SLOT, area(a, kind)
  sync(k, "S_V")
  for i = u.first, u.first + u.per - 1 do
    k:wait_signal_value(a.meta:sub(base + i * S, S), u.wait:sub(0, S), S, lab.CMP_EQ, deepep.ONE)
  end
  sync(k, "MTE3_S"); sync(k, "S_V")
  k:duplicate(u.wait, 0, u.per * S)
  sync(k, "V_MTE3")
  k:data_copy(a.meta:sub(base + u.first * S, u.per * S), u.wait, u.per * S)
  sync(k, "MTE3_S")
  k:sync_all()
end

-- x rounded to fp32 (the scalar unit's float arithmetic)
local function f32(x)
  return (string.unpack("<f", string.pack("<f", x)))
end

-- QuantProcess (DynamicQuant) of token row x into int8 row o: Cast to fp32
-- (then xInQueue's FreeTensor, event id h), Abs, the max (ReduceMaxInplace),
-- dynamicScale = 127 / (max + 1e-12) on S, Muls; Cast to int32 (CAST_RINT), to
-- half, to int8 (CAST_TRUNC); 1 / dynamicScale into the row's scale float at
-- byte P. Returns that float's view
function deepep.quant_process(k, u, x, o, H, P, h)
  k:cast(u.f, x, H)
  k:set_flag("V_MTE2", h)
  k:pipe_barrier("V")
  k:abs(u.t, u.f, H)
  k:pipe_barrier("V")
  k:reduce_max(u.r, u.t, H)
  sync(k, "V_S")
  local scale = f32(127 / f32(k:get_value(u.r, 0) + 1e-12))
  sync(k, "S_V")
  k:muls(u.f, u.f, scale, H)
  k:pipe_barrier("V")
  local i32, half = u.t:reinterpret("int32"):sub(0, H), u.f:reinterpret("fp16"):sub(0, H)
  k:cast(i32, u.f, H, "rint")
  k:pipe_barrier("V"); k:pipe_barrier("V")                     -- SetDeqScale between
  k:cast(half, i32, H)
  k:pipe_barrier("V")
  k:cast(o:sub(0, H), half, H, "trunc")
  local s = o:sub(P, 4):reinterpret("fp32")
  k:set_value(s, 0, f32(1 / scale))
  return s
end

-- the two halves of the kernels' prologue and epilogue, in frames: the
-- meta state reset and the address exchange (finalize: metadata), the flag
-- barrier (signal_or_barrier_wait)
function deepep.prologue(k, a, u, addrs)
  local F = lab.frames
  k:prof_start(F.FINALIZE)
  deepep.reset_meta_state(k, a, u)
  deepep.put_share_addr(k, a, u, addrs)
  k:prof_end(F.FINALIZE)
  deepep.barrier(k, a, u, "FLAG")               -- every rank's addresses are published
  k:prof_start(F.FINALIZE)
  deepep.get_share_addr(k, a, u, addrs)
  k:prof_end(F.FINALIZE)
end

-- SetSyncFlag + WaitSyncFlag on kind, in a signal_or_barrier_wait frame
function deepep.barrier(k, a, u, kind)
  local F = lab.frames
  k:prof_start(F.SIGNAL_WAIT)
  deepep.set_sync_flag(k, a, u, kind)
  deepep.wait_sync_flag(k, a, u, kind)
  k:prof_end(F.SIGNAL_WAIT)
end

-- CpGM2GMPingPong (COPYONLY): count elements GM -> GM through two UB halves of
-- ub, MTE3_MTE2 event ids 0 and 1 alternating (the first chunk on id 1)
function deepep.cp_gm2gm(k, dst, src, count, ub)
  local chunk = #ub // 2
  k:pipe_barrier("ALL"); k:pipe_barrier("ALL")                -- SetAtomic(COPYONLY)
  k:set_flag("MTE3_MTE2", 0); k:set_flag("MTE3_MTE2", 1)
  local i, done = 0, 0
  while done < count do
    local n, id = math.min(chunk, count - done), (i % 2 == 1) and 0 or 1
    local half = ub:sub(id == 0 and 0 or chunk, n)
    k:wait_flag("MTE3_MTE2", id)
    k:data_copy_pad(half, src:sub(done, n), n)
    k:set_flag("MTE2_MTE3", id); k:wait_flag("MTE2_MTE3", id)
    k:data_copy_pad(dst:sub(done, n), half, n)
    k:set_flag("MTE3_MTE2", id)
    done, i = done + n, i + 1
  end
  k:wait_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 1)
  sync(k, "MTE3_S")
  k:pipe_barrier("ALL")                                        -- UnsetAtomic
end

------------------------------------------------------------------------------
-- the layout kernel (DispatchLayout, dispatch_layout.h: get_dispatch_layout)

-- token i's count by its accesses one by one (k:scalar_topk_count's pass
-- refused it: pipe work pending)
local function count_accesses(k, u, i, n, E, K)
  local per = E // n
  for j = 0, K - 1 do
    local e = k:get_value(u.topk, i * K + j)
    if e >= 0 and e < E then
      k:set_value(u.per_expert, e, k:get_value(u.per_expert, e) + 1)
      local r = e // per
      if k:get_value(u.seen, r) == 0 then
        local c = k:get_value(u.per_rank, r)
        k:set_value(u.in_rank, i * n + r, 1)
        k:set_value(u.seen, r, 1)
        k:set_value(u.per_rank, r, c + 1)
      end
    end
  end
end

-- token i: the seen-rank row cleared on V between two syncs, then its count
local function count_token(k, u, i, n, E, K)
  sync(k, "S_V")
  k:duplicate(u.seen, 0, n)
  sync(k, "V_S")
  if not k:scalar_topk_count(u.topk, i * K, K, E, E // n, u.per_expert, u.seen, u.per_rank,
                             u.in_rank, i * n) then
    count_accesses(k, u, i, n, E, K)
  end
end

-- first pass over the block's tokens: counts per expert and per rank, and the
-- token-in-rank marks, by scalar GetValue / SetValue (a seen-rank row cleared
-- per token on V): count_token for each token. k:scalar_layout_count makes
-- its primitives for every token in one call, each as the calls would, and
-- returns the token whose count pass refused (its accesses made here), or
-- nothing in a checked run (the calls are made one by one: each names its
-- own line in a finding)
local function layout_count(k, a, u, tt)
  local n, E, K = a.n, a.E, a.routes.topk
  local i = 0
  while i < tt do
    local j = k:scalar_layout_count(u.topk, i, tt, K, E, E // n, u.per_expert, u.seen,
                                    u.per_rank, u.in_rank, n)
    if j == nil then
      for t = i, tt - 1 do count_token(k, u, t, n, E, K) end
      return
    end
    i = j
    if i < tt then
      count_accesses(k, u, i, n, E, K)
      i = i + 1
    end
  end
end

-- send_token_idx numbered from the block's prefix row: the rows' accesses one
-- by one while pipe work is pending (the prefix row's copy in, landing), the
-- rest by k:scalar_histogram once none is (the same accesses in one call)
local function layout_index(k, u, count, E)
  for i = 0, count - 1 do
    if k:scalar_histogram(u.topk, i, count - i, 0, E, u.per_expert, u.idx) then return end
    local e = k:get_value(u.topk, i)
    if e >= 0 and e < E then
      local v = k:get_value(u.per_expert, e)
      k:set_value(u.idx, i, v)
      k:set_value(u.per_expert, e, v + 1)
    end
  end
end

-- DispatchLayout: block b of min(tokens, blocks) counts its tokens' rows; it
-- adds its per-expert counts (atomic add) into the prefix rows of every later
-- block and into the rank's totals; SyncAll; then numbers its rows per expert
-- from its prefix row (send_token_idx)
function deepep.layout_kernel(k, a)
  local n, E, K, T = a.n, a.E, a.routes.topk, a.routes.tokens
  local blocks = math.min(T, k.block_num)
  if k.block >= blocks then k:sync_all(); return end
  local tt, t0 = deepep.split(T, blocks, k.block)
  local u = { topk = k:ub("int64", tt * K, "backed"), per_rank = k:ub("int32", n, "backed"),
              per_expert = k:ub("int32", E, "backed"), in_rank = k:ub("int32", tt * n, "backed"),
              seen = k:ub("int32", n, "backed"), idx = k:ub("int32", tt * K, "backed") }
  k:data_copy_pad(u.topk, a.topk_idx:sub(t0 * K, tt * K), tt * K)
  sync(k, "MTE2_S")
  k:duplicate(u.per_rank, 0, n); k:duplicate(u.per_expert, 0, E); k:duplicate(u.in_rank, 0, tt * n)
  sync(k, "V_S")
  layout_count(k, a, u, tt)
  sync(k, "S_MTE3")                  -- the counts written by S, before MTE3 reads them
  k:data_copy_pad(a.in_rank:sub(t0 * n, tt * n), u.in_rank, tt * n)
  k:set_atomic("add", "int32")
  for b = k.block + 1, blocks - 1 do
    k:data_copy_pad(a.notify_send:sub(b * E, E), u.per_expert, E)
  end
  k:data_copy_pad(a.tokens_per_rank, u.per_rank, n)
  k:data_copy_pad(a.tokens_per_expert, u.per_expert, E)
  k:set_atomic_none()
  k:pipe_barrier("MTE3")
  k:sync_all()
  sync(k, "MTE3_MTE2")
  k:data_copy_pad(u.per_expert, a.notify_send:sub(k.block * E, E), E)
  sync(k, "MTE2_S")
  layout_index(k, u, tt * K, E)
  sync(k, "S_MTE3")
  k:data_copy_pad(a.send_token_idx:sub(t0 * K, tt * K), u.idx, tt * K)
end

-- get_dispatch_layout once (at setup: DeepEP's tests time it apart from
-- dispatch): its GM outputs zeroed (at::zeros), one launch; s.layout_us is
-- its slowest PE's kernel time. The tables it fills: tokens_per_expert
-- (symmetric: the notify reads it on every rank), send_token_idx
function deepep.run_layout(m, s)
  local R, n, E = s.routes, s.n, s.E
  s.topk_idx = m:alloc("int64", R.tokens * R.topk, "topk_idx", "backed")
  for p = 0, n - 1 do s.topk_idx:on(p):fill(R.expert[p]) end
  s.tokens_per_expert = m:malloc("int32", E, "num_tokens_per_expert", "backed"):fill("zero")
  s.tokens_per_rank = m:alloc("int32", n, "num_tokens_per_rank", "backed"):fill("zero")
  s.in_rank = m:alloc("int32", R.tokens * n, "is_token_in_rank", "backed"):fill("zero")
  s.notify_send = m:alloc("int32", s.blocks * E, "notify_send_data", "backed"):fill("zero")
  s.send_token_idx = m:alloc("int32", R.tokens * R.topk, "send_token_idx", "backed"):fill("zero")
  local r = m:launch({ name = "dispatch_layout", kernel = deepep.layout_kernel }, s.blocks, s)
  local mx = 0
  for _, us in ipairs(r.kernel_us) do mx = math.max(mx, us) end
  s.layout_us = mx
end

------------------------------------------------------------------------------
-- the notify kernel's steps (ShmemNotifyDispatch)

-- AllGatherSendData: the block's ranks' num_tokens_per_expert (E int32, read
-- from each rank) into this rank's recv_data[rank * E], one ping-pong copy each
function deepep.all_gather_send_data(k, a, u, ub)
  for r = u.first, u.first + u.per - 1 do
    deepep.cp_gm2gm(k, a.recv_data:sub(r * a.E, a.E), k:ptr(a.tokens_per_expert, r), a.E, ub)
    k:pipe_barrier("ALL")
  end
end

-- ReorderRecvDataOutput: the counts of rank's experts from every source, in
-- (local expert, source) order, into out (the prefix sum when cumsum): two
-- scalar accesses per (expert, source) pair (k:scalar_transpose when no pipe
-- work is pending, else one by one: a copy out of an earlier row may be)
local function reorder(k, a, tbl, rank, out, cumsum)
  local n, E, per = a.n, a.E, a.E // a.n
  sync(k, "V_S"); sync(k, "MTE2_S")
  local done, prefix = k:scalar_transpose(out, tbl:sub(rank * per, n * E - rank * per), n, per,
                                          E, cumsum)
  if not done then
    prefix = 0
    for e = rank * per, rank * per + per - 1 do
      for src = 0, n - 1 do
        local v = k:get_value(tbl, src * E + e)
        k:set_value(out, (e - rank * per) * n + src, cumsum and prefix or v)
        prefix = prefix + v
      end
    end
  end
  k:pipe_barrier("ALL")
  k:set_flag("S_MTE2", 0); k:wait_flag("S_MTE2", 0)
  return prefix
end

-- BuildTotalRecvCount: the first min(n, blocks / 2) blocks split the ranks; for
-- each, the prefix of its window (put_offset[rank * E ..]) into GM. Each rank
-- gets its own UB row (the source reuses one and relies on its scalar loop
-- outlasting the copy out; here a copy reads its source when it lands)
function deepep.build_total_recv_count(k, a, tbl, out)
  local use = math.min(a.n, k.block_num // 2)
  if k.block >= use then return end
  local per, first = deepep.split(a.n, use, k.block)
  for j = 0, per - 1 do
    local rank, row = first + j, out:sub(j * a.E, a.E)
    reorder(k, a, tbl, rank, row, true)
    sync(k, "MTE2_MTE3")
    k:data_copy_pad(a.put_offset:sub(rank * a.E, a.E), row, a.E)
  end
end

-- one step of BuildMaxBs's loop: source src's row of recv_data copied (V),
-- Cast to fp32 and summed (timed as one vector pass: the lab has no
-- ReduceSum), the sum read on S; the token count itself comes from the layout
local function sum_counts(k, a, w, tbl, src)
  k:data_copy(w.cnt, tbl:sub(src * a.E, a.E), a.E)           -- UB -> UB (V)
  k:pipe_barrier("ALL")
  k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
  k:cast(w.f, w.cnt, a.E)
  k:pipe_barrier("V")
  k:reduce_max(w.r, w.f, a.E)                                -- ReduceSum's pass over the row
  sync(k, "V_S")
  k:get_value(w.r, 0)
  k:pipe_barrier("V")
end

-- a scalar GM store of value (GlobalTensor SetValue + DataCacheCleanAndInvalid)
local function gm_store(k, dst, w, value)
  k:set_value(w.one, 0, value)
  sync(k, "S_MTE3")
  k:data_copy_pad(dst, w.one, 1)
end

-- BuildBalanceMatrix's scalar passes over the n x 2n matrix (ranges of tokens
-- each rank combines for each other one); the combine reads it only with
-- ENABLE_REBALANCE, off by default
local function balance_matrix(k, a, w, bs, total)
  local n, avg = a.n, total // a.n
  k:duplicate(w.matrix, -1, 2 * n * n)
  k:pipe_barrier("V")
  sync(k, "V_S")
  for i = 0, n - 1 do
    if bs[i] > 0 then
      k:set_value(w.matrix, i * 2 * n + 2 * i, 0)
      k:set_value(w.matrix, i * 2 * n + 2 * i + 1, math.min(bs[i], math.ceil(avg)) - 1)
    end
  end
  if avg > 128 then                                          -- REBALANCE_MIN_TOKEN_NUM
    for tar = 0, n - 1 do                                    -- each column's ranges read
      if bs[tar] > 0 and not k:scalar_pair_scan(w.matrix, 2 * tar, n, 2 * n, -1) then
        for src = 0, n - 1 do
          if k:get_value(w.matrix, src * 2 * n + 2 * tar) ~= -1 then
            k:get_value(w.matrix, src * 2 * n + 2 * tar + 1)
          end
        end
      end
    end
  end
  k:pipe_barrier("ALL")
  sync(k, "S_MTE3")
  k:data_copy_pad(a.balance, w.matrix, 2 * n * n)
end

-- BuildMaxBs (block blocks / 2): every source's token count (a pass over its
-- row), the max into GM, then the balance matrix
function deepep.build_max_bs(k, a, tbl, w)
  local bs, total, mx = {}, 0, 0
  for src = 0, a.n - 1 do
    sum_counts(k, a, w, tbl, src)
    local rows = 0
    for e = 0, a.E - 1 do rows = rows + a.layout.count[src][e] end
    bs[src] = rows // a.routes.topk
    total, mx = total + bs[src], math.max(mx, bs[src])
  end
  k:pipe_barrier("V")
  gm_store(k, a.max_bs, w, mx)
  balance_matrix(k, a, w, bs, total)
end

-- BuildTotalRecvTokens (block blocks / 2 + 1): the rows this rank receives
function deepep.build_total_recv_tokens(k, a, tbl, w)
  local total = reorder(k, a, tbl, k.pe, w.cnt, false)
  sync(k, "MTE2_V")
  k:cast(w.f, w.cnt, a.E)
  k:pipe_barrier("V")
  k:reduce_max(w.r, w.f, a.E)                                -- ReduceSum's pass
  sync(k, "V_S")
  k:get_value(w.r, 0)
  k:pipe_barrier("ALL")
  gm_store(k, a.total_recv, w, total)
end

-- BuildRecvTokenPerExp (block blocks / 2 + 2): rows per local expert (int64)
function deepep.build_recv_token_per_exp(k, a, tbl, w)
  local per, n = a.E // a.n, a.n
  reorder(k, a, tbl, k.pe, w.cnt, false)
  sync(k, "MTE2_S")
  if not k:scalar_row_sums(w.per_exp, w.cnt, per, n, 2) then   -- an int64: low, high word
    for e = 0, per - 1 do
      local sum = 0
      for src = 0, n - 1 do sum = sum + k:get_value(w.cnt, e * n + src) end
      k:set_value(w.per_exp, 2 * e, sum)
      k:set_value(w.per_exp, 2 * e + 1, 0)
    end
  end
  k:pipe_barrier("ALL")
  k:set_flag("S_MTE2", 0); k:wait_flag("S_MTE2", 0)
  sync(k, "MTE2_MTE3")
  k:data_copy_pad(a.recv_per_expert, w.per_exp, 2 * per)
end

-- the UB of the notify's build steps on block b: {cnt, f, r, one, matrix, per_exp}
function deepep.notify_ub(k, a)
  local half, E = k.block_num // 2, a.E
  if k.block < half or k.block > half + 2 then return nil end
  local w = { cnt = k:ub("int32", E, "backed"), f = k:ub("fp32", E), r = k:ub("fp32", 8, "backed"),
              one = k:ub("int32", 8, "backed") }
  if k.block == half then w.matrix = k:ub("int32", 2 * a.n * a.n, "backed") end
  if k.block == half + 2 then w.per_exp = k:ub("int32", 2 * (E // a.n), "backed") end
  return w
end

------------------------------------------------------------------------------
-- describe

function deepep.describe(s, algorithm, chunk_elems)
  return moe.describe(s, algorithm .. " (" .. deepep.SOURCE .. ")", chunk_elems, s.blocks)
end

return deepep
