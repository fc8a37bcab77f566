-- shmemlab.mc2: the plumbing of the CANN ops-transformer mc2 MoE kernels
-- ported as baselines (ops/mc2/dispatch.lua, ops/mc2/combine.lua): their
-- receive layout, window geometry, the per-row counting the sender does, the
-- status flags and the host-side references; the op files keep to a page of
-- orchestration each.
--
-- Layout (MoeDistributeDispatchV2 and MoeDistributeDispatchA2 alike). On PE d
-- the received rows (expand_x) are ordered by local expert le, then source PE
-- p, then p's (token, k) index ascending. ep_recv_counts[le * n + p] is the
-- running total of rows up to and including (le, p); expert_token_nums[le] the
-- rows of local expert le (int64); expand_idx three int32 per row: source PE,
-- token, k. The routing is shmemlab.moe's (expert e lives on PE e // per_pe).
--
-- Window geometry (A3, v2): a row on the wire is the token (align32(H) bytes
-- of the wire dtype), a 32-byte block whose first 4 bytes hold the fp32 scale,
-- and the 12-byte triple (PE, token, k); its slot in the window is that
-- rounded up to 512 bytes. The window holds one region of local_tokens slots per
-- (source PE, local expert); the status window one 32-byte block (flag, count)
-- per (local expert, source PE). Both alternate between two halves from one
-- launch to the next (the kernel's dataState).
local lab = require("shmemlab")
local moe = require("shmemlab.moe")
local op = require("shmemlab.op")

local mc2 = {}

mc2.STATE = 8                       -- int32 per status block: 32 bytes (STATE_OFFSET)
mc2.WIN_ALIGN = 512                 -- window slots start 512-byte aligned (WIN_ADDR_ALIGN)
mc2.IDX = 3                         -- expand_idx: (PE, token, k) (EXPAND_IDX_INFO)
mc2.FLAG = 1                        -- a status block's flag value once written

local function align(x, a) return (x + a - 1) // a * a end
mc2.align = align

-- is the machine an A2 (Ascend910B: MoeDistributeDispatchA2 / CombineA2)?
function mc2.is_a2(c)
  return c.profile.name == "Ascend910B"
end

-- SplitToCore: count items over blocks, the first count % blocks one more
function mc2.split(count, blocks, b)
  local n, rem = count // blocks, count % blocks
  local first = n * b
  if b < rem then return first + b, n + 1 end
  return first + rem, n
end

-- the mc2 layout of a routing: per PE d, rows = {{p =, i =}, ...} in expand order,
-- counts[le * n + p] (rows of (le, p)), recv_counts (running totals), token_nums;
-- per source p and row i, before[p][i] = p's earlier rows with the same expert
function mc2.layout(R)
  local n, per, TK = R.n_pes, R.per_pe, R.tokens * R.topk
  local L = { rows = {}, counts = {}, recv_counts = {}, token_nums = {}, before = {} }
  local by = {}                                        -- by[d][le][p] = {i, ...}
  for d = 0, n - 1 do
    by[d] = {}
    for le = 0, per - 1 do
      by[d][le] = {}
      for p = 0, n - 1 do by[d][le][p] = {} end
    end
  end
  for p = 0, n - 1 do
    local seen = {}
    L.before[p] = {}
    for i = 1, TK do
      local e = R.expert[p][i]
      L.before[p][i] = seen[e] or 0
      seen[e] = (seen[e] or 0) + 1
      local list = by[e // per][e % per][p]
      list[#list + 1] = i
    end
  end
  for d = 0, n - 1 do
    local rows, counts, run, nums = {}, {}, {}, {}
    for le = 0, per - 1 do
      nums[le] = 0
      for p = 0, n - 1 do
        for _, i in ipairs(by[d][le][p]) do rows[#rows + 1] = { p = p, i = i } end
        counts[le * n + p] = #by[d][le][p]
        run[le * n + p] = #rows
        nums[le] = nums[le] + #by[d][le][p]
      end
    end
    L.rows[d], L.counts[d], L.recv_counts[d], L.token_nums[d] = rows, counts, run, nums
  end
  return L
end

-- the row geometry of a wire format w (moe.wire): elements per row in UB
-- (tok + scale block + triple block), elements moved per row (tok + 32 + 12
-- bytes), the slot stride in the window, the scale's and triple's element offsets
function mc2.geometry(w, hidden)
  local es = lab.core.dtype_size(w.dtype)
  local tok = align(hidden * es, 32)
  local moved = tok + 32 + 4 * mc2.IDX
  return { esize = es, ub = (tok + 64) // es, moved = moved // es,
           slot = align(moved, mc2.WIN_ALIGN) // es, scale_at = tok // es,
           idx_at = (tok + 32) // es }
end

-- the int32 triple of a UB row at element offset at
function mc2.triple(row, at)
  return row:sub(at, 4 * mc2.IDX // lab.core.dtype_size(row.dtype)):reinterpret("int32")
end

------------------------------------------------------------------------------
-- kernel plumbing

-- CalTokenSendExpertCnt over n expert ids: Duplicate, Sub, Abs, Mins, ReduceSum
-- on the V pipe, then V_S, one GetValue, S_V. The lab has no Sub, Mins or
-- ReduceSum: they are timed as Add, Min and ReduceMax over the same elements
-- (same dtype size, same repeats). The count itself is the host's (layout).
function mc2.count_cost(k, u, n)
  if n <= 0 then return end
  k:duplicate(u.ca:sub(0, n), 0, n)
  k:pipe_barrier("V")
  k:add(u.cb:sub(0, n), u.ca:sub(0, n), u.ca:sub(0, n), n)
  k:pipe_barrier("V")
  k:abs(u.ca:sub(0, n), u.cb:sub(0, n), n)
  k:pipe_barrier("V")
  k:min(u.cb:sub(0, n), u.ca:sub(0, n), u.ca:sub(0, n), n)
  k:pipe_barrier("V")
  k:reduce_max(u.cr, u.cb:sub(0, n), n)
  k:set_flag("V_S", 0); k:wait_flag("V_S", 0)
  k:get_value(u.cr, 0)
  k:set_flag("S_V", 0); k:wait_flag("S_V", 0)
end

local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end

-- QuantProcess of the v2 and A2 kernels (dynamic quant, no smooth scales): x
-- (hidden elements) -> INT8 q; u.f, u.t fp32 rows, u.r 8 backed fp32. Cast to
-- fp32, Abs, the row max (the kernels' Max tree + WholeReduceMax, timed as one
-- ReduceMax), V_S, GetValue, inv = 127 / max (fp32), S_V, Muls; then the
-- kernels' three casts: fp32 -> int32 (CAST_RINT), int32 -> fp16, fp16 -> int8
-- (CAST_TRUNC), PipeBarrier(V) between dependent ops. Returns the scale 1 / inv.
function mc2.quantise(k, q, x, u, hidden)
  local f, t = u.f:sub(0, hidden), u.t:sub(0, hidden)
  k:cast(f, x, hidden)
  k:pipe_barrier("V")
  k:abs(t, f, hidden)
  k:pipe_barrier("V")
  k:reduce_max(u.r, t, hidden)
  k:set_flag("V_S", 0); k:wait_flag("V_S", 0)
  local inv = f32(127 / k:get_value(u.r, 0))
  k:set_flag("S_V", 0); k:wait_flag("S_V", 0)
  k:muls(f, f, inv, hidden)
  k:pipe_barrier("V")
  local i32, h16 = u.t:reinterpret("int32"):sub(0, hidden), u.f:reinterpret("fp16"):sub(0, hidden)
  k:cast(i32, f, hidden, "rint")
  k:pipe_barrier("V")
  k:cast(h16, i32, hidden)
  k:pipe_barrier("V")
  k:cast(q, h16, hidden, "trunc")
  return f32(1 / inv)
end

-- InitWinState of the v2 kernels (every core, every launch): the core's
-- 32-byte data-state block (buf, 8 int32 per core) read, the half flipped, the
-- rank, sizes and op count set on the S pipe, written back
function mc2.init_win_state(k, buf)
  local ub, at = k:ub("int32", 8, "backed"), buf:sub(k.block * 8, 8)
  k:data_copy(ub, at, 8)
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  k:set_value(ub, 0, k:get_value(ub, 0) == 0 and 1 or 0)
  for i = 1, 5 do k:set_value(ub, i, k.pe) end
  k:set_value(ub, 6, k:get_value(ub, 6) + 1)
  k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
  k:data_copy(at, ub, 8)
  k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
  return ub
end

-- the DFX word of the core's data-state block (its second int32) from ub[0]
function mc2.dfx(k, buf, ub)
  k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
  k:data_copy_pad(buf:sub(k.block * 8 + 1, 1), ub:sub(0, 1), 1)
end

-- rows rows of count elements src(r) -> UB -> dst(r), through the two UB
-- tensors ubs[0], ubs[1] in turn (ping-pong on MTE3_MTE2 events 0 and 1)
function mc2.copy_rows(k, dst, src, ubs, rows, count)
  for r = 0, rows - 1 do
    local b = r % 2
    if r >= 2 then k:wait_flag("MTE3_MTE2", b) end
    k:data_copy(ubs[b], src(r), count)
    k:set_flag("MTE2_MTE3", b); k:wait_flag("MTE2_MTE3", b)
    k:data_copy(dst(r), ubs[b], count)
    k:set_flag("MTE3_MTE2", b)
  end
  for r = math.max(0, rows - 2), rows - 1 do k:wait_flag("MTE3_MTE2", r % 2) end
end

-- the count UBs: ca, cb (fp32, n elements), cr (8 fp32, backed: GetValue reads it)
function mc2.count_ub(k, n)
  local m = align(math.max(n, 8), 64)
  return { ca = k:ub("fp32", m), cb = k:ub("fp32", m), cr = k:ub("fp32", 8, "backed") }
end

-- a status block in UB: flag, count, zeros (set with SetValue)
function mc2.status_ub(k, count)
  local ub = k:ub("int32", mc2.STATE, "backed")
  k:set_value(ub, 0, mc2.FLAG)
  k:set_value(ub, 1, count)
  for i = 2, mc2.STATE - 1 do k:set_value(ub, i, 0) end
  return ub
end

-- one HCCL BatchWrite item (32 bytes) in UB at item j: three u64 (source,
-- destination, length) and two u32 (data type, rank), five scalar stores
function mc2.batch_item(k, ub, j, value)
  local w = ub:sub(j * 8, 6):reinterpret("int64")
  for i = 0, 2 do k:set_value(w, i, value) end
  k:set_value(ub, j * 8 + 6, value)
  k:set_value(ub, j * 8 + 7, value)
end

------------------------------------------------------------------------------
-- setup

-- the state of an mc2 dispatch: routes, wire, layout, geometry, the input, the
-- window and status window (two halves each), the workspace and the outputs
function mc2.dispatch_state(m, c)
  local s = moe.state(c)
  local R, H, n = s.routes, s.hidden, c.pes
  local per, cap = R.per_pe, R.max_recv
  s.wire = moe.wire(c, s)
  s.layout, s.geo = mc2.layout(R), mc2.geometry(s.wire, H)
  s.route_table = moe.route_buffer(m, R)
  s.input = op.fill_input(m:alloc(c.dtype, R.tokens * H, "input"), c.dtype)
  s.work = m:alloc("int32", c.cores * mc2.STATE, "mc2_workspace")
  s.data_state = m:alloc("int32", c.cores * 8, "mc2_data_state"):fill("zero")
  s.x = m:alloc(s.wire.dtype, cap * H, "expand_x"):fill("zero")
  s.scales = m:alloc("fp32", cap, "dynamic_scales"):fill("zero")
  s.idx = m:alloc("int32", cap * mc2.IDX, "expand_idx"):fill("zero")
  s.counts = m:alloc("int32", n * per, "ep_recv_counts"):fill("zero")
  s.nums = m:malloc("int64", per, "expert_token_nums"):fill("zero")
  s.idx_per = cap * mc2.IDX
  s.expect = mc2.expect_dispatch(m, s)
  s.state_half = per * n * mc2.STATE
  if mc2.is_a2(c) then return mc2.a2_state(m, c, s) end
  s.win_half = n * per * R.tokens * s.geo.slot
  s.win = m:malloc(s.wire.dtype, 2 * s.win_half, "mc2_window")
  s.state = m:malloc("int32", 2 * s.state_half, "mc2_status", "backed"):fill("zero")
  return s
end

-- the state of an mc2 combine: the expert outputs in the mc2 layout (expand_x)
-- with their expand_idx, the expert scales (weight(k): moe.expert_outputs'
-- references hold), the window and status window (two halves each), the output
function mc2.combine_state(m, c)
  local s = moe.state(c)
  local R, H, T, K = s.routes, s.hidden, s.routes.tokens, s.routes.topk
  local cap = R.max_recv
  s.layout = mc2.layout(R)
  s.geo = { slot = align(H * s.esize, mc2.WIN_ALIGN) // s.esize }
  local out
  out, s.expect = moe.expert_outputs(m, R, c.dtype, cap, c.seed)
  s.x = m:alloc(c.dtype, cap * H, "expand_x"):fill("zero")
  s.idx = m:alloc("int32", cap * mc2.IDX, "expand_idx", "backed"):fill("zero")
  mc2.fill_int(s.idx, c.pes, function(d)
    local l = {}
    for _, row in ipairs(s.layout.rows[d]) do
      l[#l + 1], l[#l + 2], l[#l + 3] = row.p, (row.i - 1) // K, (row.i - 1) % K
    end
    return l
  end)
  for d = 0, c.pes - 1 do
    if m:timing_only() then break end
    for r, row in ipairs(s.layout.rows[d]) do
      s.x:on(d):sub((r - 1) * H, H):copy(out:on(d):sub(R.slot[row.p][row.i] * H, H))
    end
  end
  local w = {}
  for i = 1, T * K do w[i] = moe.weight((i - 1) % K) end
  s.scales = m:alloc("fp32", T * K, "expert_scales", "backed")
  for p = 0, c.pes - 1 do s.scales:on(p):fill(w) end
  s.output = m:alloc(c.dtype, T * H, "output"):fill("zero")
  if mc2.is_a2(c) then return mc2.a2_combine_state(m, c, s) end
  s.win_half = T * K * s.geo.slot
  s.win = m:malloc(c.dtype, 2 * s.win_half, "mc2_window")
  s.state_half = T * K * mc2.STATE
  s.state = m:malloc("int32", 2 * s.state_half, "mc2_status", "backed"):fill("zero")
  s.data_state = m:alloc("int32", c.cores * 8, "mc2_data_state"):fill("zero")
  return s
end

-- the A2 combine state (MoeDistributeCombineA2) on top of combine_state: the
-- inputs dispatch A2 leaves (expand_idx: each row's count in its expert on the
-- source PE; ep_send_counts: the running totals on the expert PE), the expert
-- ids, a region per expert PE in window in / out (two halves, backed: the flag
-- after the rows travels in them), the workspace of the per-expert counts
function mc2.a2_combine_state(m, c, s)
  local R, L, n = s.routes, s.layout, c.pes
  local TK, E = R.tokens * R.topk, R.experts
  s.a2_idx = m:alloc("int32", TK, "expand_idx_a2", "backed")
  mc2.fill_int(s.a2_idx, n, function(p)
    local l = {}
    for i = 1, TK do l[i] = L.before[p][i] end
    return l
  end)
  s.send_counts = m:alloc("int32", align(E, 8), "ep_send_counts", "backed"):fill("zero")
  mc2.fill_int(s.send_counts, n, function(d)
    local l = {}
    for j = 0, n * R.per_pe - 1 do l[j + 1] = L.recv_counts[d][j] end
    return l
  end)
  s.route_table = moe.route_buffer(m, R)
  local most = 0
  for p = 0, n - 1 do
    for d = 0, n - 1 do most = math.max(most, R.send[p][d]) end
  end
  s.row_bytes = s.hidden * s.esize
  s.region = align(most * s.row_bytes + mc2.A2C.SKIP + 64, 32)
  s.win_half = n * s.region
  s.win_in = m:malloc("int8", 2 * s.win_half, "mc2_window_in", "backed"):fill("zero")
  s.win_out = m:malloc("int8", 2 * s.win_half, "mc2_window_out", "backed"):fill("zero")
  s.items = m:alloc("int32", n * 8, "mc2_batch_write")
  s.recv_count = m:alloc("int32", align(E, 8), "mc2_expert_recv_count", "backed")
  s.win_offset = m:alloc("int32", align(E, 8), "mc2_expert_window_offset", "backed")
  return s
end

-- A2 (MoeDistributeDispatchA2) window constants: a source PE's region holds a
-- status block (STATUS_ENTRY_COUNT int32: the row count of each local expert,
-- the flag at FLAG_OFFSET), the rows from DATA_OFFSET, and a data flag SKIP_OFFSET
-- bytes after the last row; FLAG_VALUE = 0xFFFFFFFF
mc2.A2 = { DATA = 512, SKIP = 512, ENTRIES = 32, FLAG_AT = 24, FLAG = -1, MAX_PER = 24 }
-- A2 combine (MoeDistributeCombineA2): the flag SKIP_OFFSET bytes after a region's rows
mc2.A2C = { SKIP = 32, FLAG = -1 }

-- mc2.at(buf, off, count, dtype): a view of count elements of dtype at byte off of an
-- int8 window
function mc2.at(buf, off, count, dtype)
  return buf:sub(off, count * lab.core.dtype_size(dtype)):reinterpret(dtype)
end

-- mc2.region(a, r): the byte offset of PE r's region in this launch's half of the window
function mc2.region(a, r) return a.half_win + r * a.region end

-- the A2 state on top of dispatch_state: row bytes on the wire (hCommuSize), a
-- region per source PE in window in / window out (two halves each, backed: the
-- status and flags travel in them), the batch-write items
function mc2.a2_state(m, c, s)
  local R, A = s.routes, mc2.A2
  if R.per_pe > A.MAX_PER then
    error(string.format("mc2 dispatch: MoeDistributeDispatchA2 takes at most %d experts per "
      .. "PE (moeExpertNum / epWorldSize), got %d", A.MAX_PER, R.per_pe), 0)
  end
  local es = lab.core.dtype_size(s.wire.dtype)
  if (s.hidden * es) % 32 ~= 0 then
    error(string.format("mc2 dispatch: MoeDistributeDispatchA2 copies whole 32-byte blocks: "
      .. "hidden %d x %d bytes is not a multiple of 32", s.hidden, es), 0)
  end
  local most = 0
  for p = 0, c.pes - 1 do
    for d = 0, c.pes - 1 do most = math.max(most, R.send[p][d]) end
  end
  s.row_bytes = s.hidden * es + (s.wire.quant and 32 or 0)
  s.region = align(A.DATA + most * s.row_bytes + A.SKIP + 32, 32)
  s.win_half = c.pes * s.region
  s.win_in = m:malloc("int8", 2 * s.win_half, "mc2_window_in", "backed"):fill("zero")
  s.win_out = m:malloc("int8", 2 * s.win_half, "mc2_window_out", "backed"):fill("zero")
  s.items = m:alloc("int32", c.pes * 8, "mc2_batch_write")
  s.idx_per = R.tokens * R.topk                     -- expand_idx: the row's count in its expert
  s.idx = m:alloc("int32", s.idx_per, "expand_idx"):fill("zero")
  s.expect.idx = m:host("int32", c.pes * s.idx_per, "expect_idx"):fill("zero")
  for p = 0, c.pes - 1 do
    local l = {}
    for i = 1, s.idx_per do l[i] = s.layout.before[p][i] end
    s.expect.idx:sub(p * s.idx_per, s.idx_per):fill(l)
  end
  return s
end

------------------------------------------------------------------------------
-- host-side references

-- fill an int32 GM buffer per PE from Lua lists list(pe) (0-based values)
function mc2.fill_int(buf, n_pes, list)
  for p = 0, n_pes - 1 do
    local l = list(p)
    if #l > 0 then buf:on(p):sub(0, #l):fill(l) end
  end
end

-- the expected dispatch outputs: expand_x (cap rows of H in the wire dtype),
-- scales (cap fp32, quantising), idx (cap * 3 int32), counts and token_nums
function mc2.expect_dispatch(m, s)
  local R, L, w, H, cap = s.routes, s.layout, s.wire, s.hidden, s.routes.max_recv
  local n, K = R.n_pes, R.topk
  local e = { x = m:host(w.dtype, n * cap * H, "expect_x"):fill("zero"),
              scales = m:host("fp32", n * cap, "expect_scales"):fill("zero"),
              idx = m:host("int32", n * cap * mc2.IDX, "expect_idx"):fill("zero"),
              counts = m:host("int32", n * n * R.per_pe, "expect_counts"):fill("zero"),
              nums = m:host("int64", n * R.per_pe, "expect_nums"):fill("zero") }
  local tmp = w.quant and m:host("int8", w.row, "quant_row")
  for d = 0, n - 1 do
    local idx, cnt, nums = {}, {}, {}
    for r, row in ipairs(L.rows[d]) do
      local t, kk = (row.i - 1) // K, (row.i - 1) % K
      idx[#idx + 1], idx[#idx + 2], idx[#idx + 3] = row.p, t, kk
      if not m:timing_only() then
        local x = s.input:on(row.p):sub(t * H, H)
        local dst = e.x:sub((d * cap + r - 1) * H, H)
        if w.quant then
          tmp:sub(0, H):quant_int8(x, e.scales:sub(d * cap + r - 1, 1))
          dst:copy(tmp:sub(0, H))
        else dst:copy(x) end
      end
    end
    for j = 0, n * R.per_pe - 1 do cnt[j + 1] = L.recv_counts[d][j] end
    for le = 0, R.per_pe - 1 do nums[le + 1] = L.token_nums[d][le] end
    if #idx > 0 then e.idx:sub(d * cap * mc2.IDX, #idx):fill(idx) end
    e.counts:sub(d * n * R.per_pe, #cnt):fill(cnt)
    e.nums:sub(d * R.per_pe, #nums):fill(nums)
  end
  return e
end

-- check of an mc2 dispatch: expand_x, (scales), expand_idx, ep_recv_counts and
-- expert_token_nums on every PE against the references, the first that differs
function mc2.check_dispatch(_, c, s)
  local R, e, cap = s.routes, s.expect, s.routes.max_recv
  local n, per = c.pes, R.per_pe
  local parts = { { s.x, e.x, cap * s.hidden }, { s.idx, e.idx, s.idx_per },
                  { s.counts, e.counts, n * per }, { s.nums, e.nums, per } }
  if s.wire.quant then table.insert(parts, 2, { s.scales, e.scales, cap }) end
  for _, part in ipairs(parts) do
    local wrong, i, pe, x, y = moe.compare(part[1], part[2], part[3], n)
    if wrong > 0 then return wrong, i, pe, x, y end
  end
  return 0
end

return mc2
