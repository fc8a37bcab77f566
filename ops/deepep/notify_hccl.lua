-- The notify of DeepEP-Ascend's normal-mode dispatch as sgl-kernel-npu's main
-- branch ships it on Ascend910_93: aclnnNotifyDispatch (notify_dispatch.h,
-- NotifyDispatch<int>, tiling key 23) on every AIV core, ported by structure. It
-- is the first launch of ops/deepep/dispatch_hccl.lua (main's dispatch) and of
-- ops/deepep/dispatch_hybrid.lua; not an op itself: both load it for its kernel,
-- its checks and the setup they share (N.prepare).
--
-- The notify (one launch, every AIV core), its window the rank's HCCL window
-- (a symmetric buffer here: two halves, chosen by the launch's magic; in each
-- a flag area of one 32-byte slot per rank, then the data, perRankDataNum = 3 x
-- local experts int32 per destination rank):
-- 0. Init: every block reads its magic (a status word per block, then +1) and its
--    window addresses from the HCCL context (one scalar GM read for its own
--    rank, two for each rank of its slice).
-- 1. block 0, AssembleSendData: the rank's per-expert counts GM -> UB; a scalar
--    pass makes a (count, offset, tokens) triple per expert and send_data_offset
--    (to GM); per destination rank, its experts' triples in a row, to send_data
--    (n copies). SyncAll.
-- 2. every block, InputToShareSlice: its slice of ceil(n / blocks) ranks' rows of
--    send_data into its own window (CpGM2GMPingPong), then flag magic * 2 + 1
--    into each of those ranks' windows at slot `rank`; ShareToShareSlice: wait
--    for its slice's slots in its own window, then read each of those ranks' rows
--    for this rank from their windows into recv_data (one ping-pong copy each,
--    starting at rank % slice). SyncAll, pipe reset.
-- 3. role cores 0-7 each load recv_data (n copies of one rank's triples) and build
--    one output: total_recv_tokens, recv_count, recv_offset, max_bs,
--    recv_tokens_per_expert, expert_global_offset, srcrank_in_expert_offset,
--    r_in_srcrank_offset. Blocks 8 and up end.
local lab = require("shmemlab")
local moe = require("shmemlab.moe")
local deepep = require("shmemlab.deepep")
local F = lab.frames
local D = dofile((debug.getinfo(1, "S").source:match("^@(.*)[/\\][^/\\]*$") or ".")
                 .. "/dispatch.lua")                         -- the dispatch beside this file

local SLOT = 8                          -- int32 of a flag slot (FLAG_UNIT_INT_NUM uint64)
local sync = deepep.sync

-- int32 of n int32 rounded up to whole 32-byte blocks
local function al8(n) return (n + 7) // 8 * 8 end
local function align32(bytes) return (bytes + 31) // 32 * 32 end

-- the block's slice of ranks (InitCoreGroup: ceil(n / blocks) each): count, first
local function slice(k, n)
  local per = (n + k.block_num - 1) // k.block_num
  local first = k.block * per
  return math.max(0, math.min(per, n - first)), first
end

-- Init (InitSmallFullMesh): GetMagicValue, the window addresses, tBuf
local function init(k, a)
  local st = a.hstate:sub(k.block * SLOT, 1)
  local magic = k:g(st, k.pe)                                  -- DCCI, then the status word
  if magic <= 0 then magic = 1 end
  k:p(st, magic + 1, k.pe)
  k:g(a.hctx:sub(0, 1), k.pe)                                  -- localWindowsIn
  local cnt = slice(k, a.n)
  for _ = 1, cnt do                                            -- remoteRes[i] -> windowsIn
    k:g(a.hctx:sub(1, 1), k.pe); k:g(a.hctx:sub(2, 1), k.pe)
  end
  local half = (magic % 2) * a.hhalf
  return { magic = magic, flags = half, data = half + a.n * SLOT,
           tbuf = k:ub("int32", 8192 // 4, "backed") }
end

-- AssembleSendData (block 0; one batch of one round)
local function assemble_send_data(k, a, w)
  local n, E, le, T = a.n, a.E, a.le, a.routes.tokens
  local tpe, sd = k:ub("int32", al8(E), "backed"), k:ub("int32", al8(3 * E), "backed")
  local off, row = k:ub("int32", al8(E), "backed"), k:ub("int32", al8(3 * le), "backed")
  sync(k, "S_MTE2")
  k:data_copy_pad(tpe, a.tokens_per_expert, E)
  sync(k, "MTE2_S")
  local prefix = 0
  for i = 0, E - 1 do
    local c = k:get_value(tpe, i)
    k:set_value(sd, 3 * i, c); k:set_value(sd, 3 * i + 1, prefix); k:set_value(sd, 3 * i + 2, T)
    k:set_value(off, i, prefix)
    prefix = prefix + c
  end
  sync(k, "S_MTE3")
  k:data_copy_pad(a.send_data_offset, off, E)
  sync(k, "MTE3_S")
  for tr = 0, n - 1 do
    for j = 0, 3 * le - 1 do k:set_value(row, j, k:get_value(sd, 3 * tr * le + j)) end
    sync(k, "S_MTE3")
    k:data_copy_pad(a.send_data:sub(tr * 3 * le, 3 * le), row, 3 * le)
    sync(k, "MTE3_S")
  end
  sync(k, "MTE3_S")
  return w
end

-- InputToShareSlice and ShareToShareSlice: the block's slice of ranks
local function slices(k, a, w)
  local n, P = a.n, 3 * a.le
  local cnt, first = slice(k, n)
  if cnt == 0 then return end
  local pp = k:ub("int32", 2 * math.min(cnt * P, deepep.HCCL_CHUNK), "backed")
  deepep.cp_gm2gm(k, a.hwin:sub(w.data + first * P, cnt * P), a.send_data:sub(first * P, cnt * P),
                  cnt * P, pp)
  local v = w.magic * 2 + 1                                    -- MergeMagicWithValue(magic, 1)
  k:set_value(w.tbuf, 0, v); k:set_value(w.tbuf, 1, 0)
  sync(k, "S_MTE3")
  for i = first, first + cnt - 1 do
    k:data_copy_pad(k:ptr(a.hwin, i):sub(w.flags + k.pe * SLOT, 2), w.tbuf:sub(0, 2), 2)
  end
  k:pipe_barrier("ALL")
  for i = first, first + cnt - 1 do                            -- WaitSyncFlag: the slice's slots
    k:wait_signal_value(a.hwin:sub(w.flags + i * SLOT, SLOT), w.tbuf:sub(0, SLOT), SLOT,
                        lab.CMP_GE, v)
  end
  for j = 0, cnt - 1 do                                        -- checkRank: from rank % cnt on
    local r = first + (j + k.pe % cnt) % cnt
    deepep.cp_gm2gm(k, a.recv_data:sub(r * P, P), k:ptr(a.hwin, r):sub(w.data + k.pe * P, P), P, pp)
  end
end

-- ReorderOutput: recv_data (n rows of 3 x le, each at a 32-byte pitch) into UB
local function reorder_output(k, a, u)
  local P = 3 * a.le
  k:duplicate(u.recv, 0, #u.recv)
  for i = 0, a.n - 1 do k:data_copy_pad(u.recv:sub(i * al8(P), P), a.recv_data:sub(i * P, P), P) end
  sync(k, "MTE2_S")
end

-- ReorderSendCountOutput (field 0) / ReorderSendOffsetOutput (field 1): into
-- dst[l * n + src] in (local expert, source) order
local function reorder_field(k, a, u, dst, field)
  local n, P = a.n, al8(3 * a.le)
  k:duplicate(dst, 0, #dst)
  sync(k, "V_S")
  for l = 0, a.le - 1 do
    for src = 0, n - 1 do
      k:set_value(dst, l * n + src, k:get_value(u.recv, src * P + 3 * l + field))
    end
  end
end

-- the role cores' common UB: the triples and the (expert, source) row
local function role_ub(k, a)
  return { recv = k:ub("int32", a.n * al8(3 * a.le), "backed"),
           cnt = k:ub("int32", al8(a.E), "backed") }
end

-- a GM scalar store as the source's one-element DataCopyPad out of a UB word
local function store_one(k, dst, ub, value)
  k:set_value(ub, 0, value)
  sync(k, "S_MTE3")
  k:data_copy_pad(dst, ub, 1)
end

local build = {}

build[0] = function(k, a)                                      -- BuildTotalRecvTokens
  local u = role_ub(k, a)
  local f = k:ub("fp32", al8(a.E))                             -- tmpBuf2_ (Cast writes E floats)
  reorder_output(k, a, u); reorder_field(k, a, u, u.cnt, 0)
  sync(k, "S_V")
  k:cast(f, u.cnt, a.E)
  k:pipe_barrier("V")
  k:reduce_max(u.cnt:reinterpret("fp32"), f, a.E)              -- ReduceSum's pass over the row
  sync(k, "V_S")
  k:get_value(u.cnt, 0)
  sync(k, "S_V")
  store_one(k, a.total_recv, k:ub("int32", 8, "backed"), a.hccl[k.pe].total)
  sync(k, "MTE3_MTE2")
end

build[1] = function(k, a)                                      -- BuildRecvCount
  local u = role_ub(k, a)
  reorder_output(k, a, u); reorder_field(k, a, u, u.cnt, 0)
  local acc = 0
  for i = 0, a.E - 1 do
    acc = acc + k:get_value(u.cnt, i)
    k:set_value(u.cnt, i, acc)
  end
  sync(k, "S_MTE3")
  k:data_copy_pad(a.recv_count, u.cnt, a.E)
  sync(k, "MTE3_MTE2")
end

build[2] = function(k, a)                                      -- BuildRecvOffset
  local u = role_ub(k, a)
  reorder_output(k, a, u); reorder_field(k, a, u, u.cnt, 1)
  sync(k, "S_MTE3")
  k:data_copy_pad(a.recv_offset, u.cnt, a.E)
  sync(k, "MTE3_MTE2")
end

build[3] = function(k, a)                                      -- BuildMaxBs
  local n, P = a.n, al8(3 * a.le)
  local u = { recv = k:ub("int32", n * P, "backed"), spr = k:ub("int32", al8(n), "backed"),
              seen = k:ub("int32", al8(n), "backed") }
  k:duplicate(u.spr, 0, #u.spr)
  sync(k, "V_S"); sync(k, "MTE2_S")
  reorder_output(k, a, u)
  sync(k, "MTE2_S")
  k:duplicate(u.seen, 0, #u.seen)
  sync(k, "V_S")
  for l = 0, a.le - 1 do
    for src = 0, n - 1 do
      if k:get_value(u.seen, src) == 0 then
        k:set_value(u.spr, src, k:get_value(u.spr, src) + k:get_value(u.recv, src * P + 3 * l + 2))
        k:set_value(u.seen, src, 1)
      end
    end
  end
  sync(k, "S_V")
  local mx = 0
  for src = 0, n - 1 do mx = math.max(mx, k:get_value(u.spr, src)) end
  store_one(k, a.max_bs, k:ub("int32", 8, "backed"), mx)      -- SetValue + DCCI
end

-- a scalar pass summing each local expert's n sources of u.cnt: fn(l, sum)
local function expert_sums(k, a, u, fn)
  for l = 0, a.le - 1 do
    local sum = 0
    for src = 0, a.n - 1 do sum = sum + k:get_value(u.cnt, l * a.n + src) end
    fn(l, sum)
  end
end

build[4] = function(k, a)                                      -- BuildRecvTokenPerExp
  local u = role_ub(k, a)
  local t = k:ub("int32", al8(a.le), "backed")
  sync(k, "MTE3_V")
  k:duplicate(t, 0, a.le)
  reorder_output(k, a, u); reorder_field(k, a, u, u.cnt, 0)
  expert_sums(k, a, u, function(l, sum) k:set_value(t, l, sum) end)
  sync(k, "S_V"); sync(k, "S_MTE3"); sync(k, "V_MTE3")
  k:data_copy_pad(a.recv_per_expert, t, a.le)
  sync(k, "MTE3_MTE2")
end

build[5] = function(k, a)                                      -- BuildExpGlobalOffset
  local u = role_ub(k, a)
  local t = k:ub("int32", al8(a.le), "backed")
  k:duplicate(t, 0, a.le)
  sync(k, "V_S")
  reorder_output(k, a, u); reorder_field(k, a, u, u.cnt, 0)
  expert_sums(k, a, u, function(l, sum) k:set_value(t, l, k:get_value(t, l) + sum) end)
  sync(k, "S_V")
  local x = k:ub("int32", al8(a.le), "backed")
  k:set_value(x, 0, 0)
  for l = 1, a.le - 1 do k:set_value(x, l, k:get_value(x, l - 1) + k:get_value(t, l - 1)) end
  sync(k, "S_MTE3")
  k:data_copy_pad(a.expert_global_offset, x, a.le)
end

build[6] = function(k, a)                                      -- BuildsrcRankInExpOffset
  local u, n, E = role_ub(k, a), a.n, a.E
  local t = k:ub("int32", al8(E), "backed")
  k:duplicate(t, 0, E)
  sync(k, "V_S")
  reorder_output(k, a, u); reorder_field(k, a, u, u.cnt, 0)
  sync(k, "S_V")
  for i = 0, E - 1 do k:set_value(t, i, k:get_value(t, i) + k:get_value(u.cnt, i)) end
  local x = k:ub("int32", al8(E), "backed")
  for l = 0, a.le - 1 do
    local cum = 0
    for src = 0, n - 1 do
      k:set_value(x, l * n + src, cum)
      cum = cum + k:get_value(t, l * n + src)
    end
  end
  sync(k, "S_MTE3")
  k:data_copy_pad(a.srcrank_in_expert_offset, x, E)
end

build[7] = function(k, a)                                      -- BuildRInSrcrankOffset
  local u, E = role_ub(k, a), a.E
  local prev = k:ub("int32", al8(E), "backed")
  k:duplicate(prev, 0, E)
  local t = k:ub("int32", al8(E) + 8, "backed")                -- its last aligned index: E
  reorder_output(k, a, u); reorder_field(k, a, u, u.cnt, 0)
  sync(k, "S_MTE3")
  for i = 0, E - 1 do                                          -- (local expert, source) pairs
    local at = al8(i)
    k:duplicate(t, 0, E)
    sync(k, "V_S")
    local off = k:get_value(prev, i)
    local c = k:get_value(u.cnt, i)
    k:set_value(t, at, off)
    k:set_value(prev, i, off + c)
    k:data_copy_pad(a.r_in_srcrank_offset:sub(i, 1), t:sub(at, 1), 1)
    sync(k, "MTE3_V")
  end
  sync(k, "MTE3_MTE2")
end

local function notify_kernel(k, a)
  k:prof_start(F.FINALIZE)
  local w = init(k, a)
  if k.block == 0 then assemble_send_data(k, a, w) end
  k:prof_end(F.FINALIZE)
  k:sync_all()
  k:prof_start(F.REMOTE_PUT_GET)
  slices(k, a, w)
  k:prof_end(F.REMOTE_PUT_GET)
  k:sync_all()
  k:prof_start(F.LOCAL_COMPUTE)
  if build[k.block] then build[k.block](k, a) end
  k:prof_end(F.LOCAL_COMPUTE)
end

-- the notify's GM: its inputs and outputs (per rank; at::empty on the host, so -1
-- here: the check sees every element the kernel leaves unwritten), the window,
-- status and context (zero: the first magic is 1)
local function notify_buffers(m, s)
  local n, E, le = s.n, s.E, s.le
  local function out(name, len) return m:alloc("int32", len, name, "backed"):fill("const", -1) end
  s.total_recv:fill("const", -1); s.max_bs:fill("const", -1)
  s.send_data, s.send_data_offset = out("send_data", 3 * E), out("send_data_offset", E)
  s.recv_data, s.recv_count, s.recv_offset = out("recv_data", 3 * E), out("recv_count", E),
                                             out("recv_offset", E)
  s.expert_global_offset = out("expert_global_offset", le)
  s.srcrank_in_expert_offset = out("srcrank_in_expert_offset", E)
  s.r_in_srcrank_offset = out("r_in_srcrank_offset", E)
  s.recv_per_expert = out("recv_tokens_per_expert", le)
  s.hhalf = n * SLOT + n * 3 * le
  s.hwin = m:malloc("int32", 2 * s.hhalf, "hccl_window", "backed"):fill("zero")
  s.hstate = m:malloc("int32", s.blocks * SLOT, "hccl_status", "backed"):fill("zero")
  s.hctx = m:malloc("int32", 8, "hccl_context", "backed"):fill("zero")
end

-- the notify's checks: tables against the host's (deepep.hccl_notify_tables)
local TABLES = { { "send_data_offset", "send_data_offset" }, { "recv_data", "recv_data" },
                 { "recv_count", "recv_count" }, { "recv_offset", "recv_offset" },
                 { "expert_global_offset", "expert_global_offset" },
                 { "srcrank_in_expert_offset", "srcrank_in_expert_offset" },
                 { "r_in_srcrank_offset", "r_in_srcrank_offset" },
                 { "recv_per_expert", "per_expert" } }

local function check_tables(m, c, s)
  for _, t in ipairs(TABLES) do
    local buf, len = s[t[1]], #s[t[1]]:on(0)
    local e = m:host("int32", c.pes * len, "expect_" .. t[1])
    for p = 0, c.pes - 1 do e:sub(p * len, len):fill(s.hccl[p][t[2]]) end
    local wrong, at, pe, want, got = moe.compare(buf, e, len, c.pes)
    if wrong > 0 then return wrong, at, pe, want, got end
  end
  for p = 0, c.pes - 1 do
    for _, t in ipairs({ { s.total_recv, "total" }, { s.max_bs, "max_bs" } }) do
      local got = t[1]:on(p):read(0)
      if got ~= s.hccl[p][t[2]] then return 1, 0, p, s.hccl[p][t[2]], got end
    end
  end
  return 0
end

local N = {}

-- the setup both dispatches with this notify share: refusals, the notify's UB
-- plan, the layout and the notify's buffers
function N.prepare(m, c, recv_local)
  local cfg = moe.config(c)
  if cfg.tokens > 8192 then
    error(string.format("deepep: the HCCL notify runs one round of per_round_tokens 8192 "
      .. "tokens (DEEPEP_NORMAL_LONG_SEQ_ROUND unset), got local_tokens %d", cfg.tokens), 0)
  end
  if c.cores < 8 then
    error(string.format("deepep: the HCCL notify's role cores are blocks 0-7, the SoC has %d "
      .. "AIV cores", c.cores), 0)
  end
  local ub, what = deepep.hccl_notify_ub_bytes(c.pes, cfg.experts, 1)
  deepep.check_ub(c, "notify_dispatch", ub, "its largest phase: " .. what)
  local s = D.prepare(m, c, false, recv_local)
  s.le = s.E // s.n
  s.hccl = deepep.hccl_notify_tables(s.layout, s.routes)
  notify_buffers(m, s)
  return s
end

-- what the dispatches use: the kernel, the tables' check, the flag slot and the
-- 32-byte roundings
N.kernel, N.check_tables, N.SLOT, N.al8, N.align32 = notify_kernel, check_tables, SLOT,
                                                     al8, align32
return N
