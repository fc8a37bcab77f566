-- DeepEP-Ascend normal-mode dispatch, the shipping kernels written on CANN
-- SHMEM (sgl-project/sgl-kernel-npu, shmem_notify_dispatch.h and
-- shmem_moe_dispatch_normal.h), ported by structure: two kernels per dispatch,
-- as Buffer::intranode_dispatch launches them (the host reads the notify's
-- totals between them to size the receive buffer).
--
-- Setup runs get_dispatch_layout once (dispatch_layout.h, its own launch;
-- DeepEP's tests time it apart from dispatch, and so does this op: describe
-- prints its time): it leaves num_tokens_per_expert and send_token_idx (each
-- (token, k) row's index among this rank's rows to its expert) in GM.
--
-- 1. notify (every AIV core): reset the meta state, publish the address of
--    num_tokens_per_expert, flag barrier, read every rank's address; each
--    block reads its ranks' counts (E int32 each) into recv_data; flag
--    barrier; every block loads recv_data (n x E); the first min(n, blocks / 2)
--    blocks turn it into put_offset, each rank's per-expert windows (scalar
--    prefix over (local expert, source)); blocks blocks / 2 .. + 2 (24-26 of
--    48) the max batch and the balance matrix, the rows this rank receives,
--    the rows per local expert.
-- 2. dispatch (every AIV core): reset, publish the receive buffer's address,
--    flag barrier, read every rank's; the block's share of the tokens x topk
--    rows, one row at a time through a double-buffered UB queue: GetValue of
--    its expert, send_token_idx and put_offset, DataCopyPad of the token row
--    GM -> UB, DataCopyPad UB -> the expert rank's receive window at slot
--    put_offset[e * n + me] + send_token_idx; then a flag barrier (every
--    rank's rows have landed). dispatch_dtype "int8" (quant_mode int8, the
--    kernel's DynamicQuant): each row is quantised in UB between an input and
--    an output queue, the int8 row goes to the window (pitch align32(hidden)
--    bytes) and its fp32 scale to dynamic_scales[slot].
local lab = require("shmemlab")
local op = require("shmemlab.op")
local moe = require("shmemlab.moe")
local deepep = require("shmemlab.deepep")
local F = lab.frames

local function notify_kernel(k, a)
  local u, n, E = deepep.meta_ub(k, a), a.n, a.E
  local pp = k:ub("int32", 2 * E)                              -- the ping-pong halves
  deepep.prologue(k, a, u, 1)                                  -- tokens_per_expert's address
  k:prof_start(F.REMOTE_PUT_GET)
  deepep.all_gather_send_data(k, a, u, pp)                     -- every rank's counts
  k:prof_end(F.REMOTE_PUT_GET)
  deepep.barrier(k, a, u, "STATE")                             -- recv_data is complete
  k:prof_start(F.COPY_IN)
  local tbl = k:ub("int32", n * E, "backed")                   -- ReloadRecvData
  k:data_copy_pad(tbl, a.recv_data, n * E)
  k:pipe_barrier("ALL")
  k:prof_end(F.COPY_IN)
  k:prof_start(F.LOCAL_COMPUTE)
  local use = math.min(n, k.block_num // 2)
  if k.block < use then
    local per = deepep.split(n, use, k.block)
    deepep.build_total_recv_count(k, a, tbl, k:ub("int32", per * E, "backed"))
  end
  local w, half = deepep.notify_ub(k, a), k.block_num // 2
  if k.block == half then deepep.build_max_bs(k, a, tbl, w)
  elseif k.block == half + 1 then deepep.build_total_recv_tokens(k, a, tbl, w)
  elseif k.block == half + 2 then deepep.build_recv_token_per_exp(k, a, tbl, w) end
  k:sync_all()
  k:prof_end(F.LOCAL_COMPUTE)
end

-- one row through xQueue (TQueBind VECIN -> VECOUT, two buffers): the token
-- row GM -> UB, UB -> the expert's window
local function send_row(k, a, u, j, src, dst)
  local h, H = j % 2, a.hidden
  local row = u.q:sub(h * a.stride, H)
  if j >= 2 then k:wait_flag("MTE3_MTE2", h) end              -- AllocTensor: that half is free
  k:data_copy_pad(row, src, H)
  k:set_flag("MTE2_MTE3", h); k:wait_flag("MTE2_MTE3", h)     -- EnQue, DeQue
  k:data_copy_pad(dst, row, H)
  k:set_flag("MTE3_MTE2", h)                                   -- FreeTensor
end

-- one row quantised (DynamicQuant): xInQueue (MTE2 -> V), QuantProcess, xOutQueue
-- (V -> MTE3); the int8 row to the window, its fp32 scale to dynamic_scales
local function send_row_int8(k, a, u, j, src, dst, scale_dst)
  local h, H, P = j % 2, a.hidden, a.wire.row
  local x, o = u.x:sub(h * a.stride, H), u.o:sub(h * (P + 32), P + 32)
  if j >= 2 then k:wait_flag("V_MTE2", h) end                 -- xInQueue AllocTensor
  k:data_copy_pad(x, src, H)
  k:set_flag("MTE2_V", h); k:wait_flag("MTE2_V", h)
  if j >= 2 then k:wait_flag("MTE3_V", h) end                 -- xOutQueue AllocTensor
  local scale = deepep.quant_process(k, u, x, o, H, P, h)    -- frees x after its Cast
  k:set_flag("V_MTE3", h); k:wait_flag("V_MTE3", h)           -- EnQue, DeQue
  k:set_flag("S_MTE3", h); k:wait_flag("S_MTE3", h)           -- the scale's SetValue
  k:data_copy_pad(dst, o:sub(0, H), H)
  k:data_copy_pad(scale_dst, scale, 1)
  k:set_flag("MTE3_V", h)                                      -- xOutQueue FreeTensor
end

-- the UB of InputToDstOutput beside its tables: the queue(s) and quant work rows
local function row_ub(k, a)
  if not a.wire.quant then return { q = k:ub(a.dtype, 2 * a.stride) } end
  local F32 = moe.stride(a.hidden, 4)
  return { x = k:ub(a.dtype, 2 * a.stride), o = k:ub("int8", 2 * (a.wire.row + 32), "backed"),
           f = k:ub("fp32", F32), t = k:ub("fp32", F32), r = k:ub("fp32", 8, "backed") }
end

-- InputToDstOutput: the block's share of the rows, one at a time
local function input_to_dst_output(k, a)
  local n, E, H, K = a.n, a.E, a.hidden, a.routes.topk
  local cnt, first = deepep.split(a.routes.tokens * K, k.block_num, k.block)
  if cnt == 0 then return end
  local u = row_ub(k, a)
  local put = k:ub("int32", n * E, "backed")
  k:data_copy_pad(put, a.put_offset, n * E)
  deepep.sync(k, "MTE2_S")
  local ids, idx = k:ub("int32", cnt, "backed"), k:ub("int32", cnt, "backed")
  k:data_copy_pad(ids, a.expert_ids:sub(first, cnt), cnt)
  k:data_copy_pad(idx, a.send_token_idx:sub(first, cnt), cnt)
  deepep.sync(k, "MTE2_S")
  local per, j, W = E // n, 0, a.wire.row
  for i = 0, cnt - 1 do
    local e = k:get_value(ids, i)
    if e >= 0 and e < E then
      local slot = k:get_value(put, e * n + k.pe) + k:get_value(idx, i)
      local src, d = a.input:sub((first + i) // K * H, H), e // per
      if a.wire.quant then
        send_row_int8(k, a, u, j, src, k:ptr(a.recv, d):sub(slot * W, H),
                      k:ptr(a.scales, d):sub(slot, 1))
      else
        send_row(k, a, u, j, src, k:ptr(a.recv, d):sub(slot * W, H))
      end
      j = j + 1
    end
  end
  local free = a.wire.quant and { "V_MTE2", "MTE3_V" } or { "MTE3_MTE2" }
  for _, ev in ipairs(free) do
    for h = 0, math.min(j, 2) - 1 do k:wait_flag(ev, (j - 1 - h) % 2) end
  end
end

local function dispatch_kernel(k, a)
  local u = deepep.meta_ub(k, a)
  deepep.prologue(k, a, u, 2)                                  -- expandXOut, dynamicScalesOut
  k:prof_start(F.REMOTE_PUT_GET)
  input_to_dst_output(k, a)
  k:prof_end(F.REMOTE_PUT_GET)
  deepep.barrier(k, a, u, "STATE")                             -- every rank's rows landed
end

local D                                 -- the op, its setup and its data kernel
D = op.define {
  name = "deepep_dispatch",
  baseline = "dispatch",                -- run as a primary op: beside ops/hccl/dispatch.lua
  collective = "dispatch",
  title = "DeepEP-Ascend normal dispatch (notify + dispatch kernels on CANN SHMEM)",
  dtypes = { "bf16", "fp16" },
  unused = {},

  describe = function(_, s)
    return deepep.describe(s, string.format("notify kernel (count all-gather, per-expert "
      .. "window prefix), then the data kernel: one row per (token, k) into its expert's "
      .. "window; flag barriers, every AIV core; get_dispatch_layout at setup %.3f us, not "
      .. "timed here", s.layout_us), s.hidden)
  end,

  payload = moe.dispatch_payload,
  deepep = moe.deepep_dispatch,

  setup = function(m, c) return D.prepare(m, c, true) end,

  run = function(m, _, s)                                      -- two launches, in order
    return { m:launch({ name = "shmem_notify_dispatch", kernel = notify_kernel }, s.blocks, s),
             m:launch({ name = "shmem_moe_dispatch_normal", kernel = dispatch_kernel }, s.blocks, s) }
  end,

  check = function(m, c, s)                                    -- rows, then INT8 scales
    local wrong, at, pe, want, got = moe.check_dispatch(m, c, s)
    if wrong > 0 or not s.wire.quant then return wrong, at, pe, want, got end
    return moe.compare(s.scales, s.expect_scales, s.routes.max_recv, c.pes)
  end,
}

-- the setup of the dispatch (notify: with the notify launch) or of its data
-- kernel alone (ops/deepep/dispatch_data.lua: put_offset, the notify's one
-- output the data kernel reads, from the host layout, and the notify's UB
-- plan not judged); recv_local: the receive buffer expand_x is each rank's own
-- (the data kernel of ops/deepep/dispatch_hccl.lua writes only its own), not
-- on the symmetric heap
function D.prepare(m, c, notify, recv_local)
  local s = deepep.state(m, c)
  local R, L, n, E = s.routes, s.layout, s.n, s.E
  s.wire = deepep.wire(c, s)
  local rows = s.wire.quant and 2 * s.stride * s.esize + 2 * (s.wire.row + 32)
                                + 2 * 4 * moe.stride(s.hidden, 4) + 32
                            or 2 * s.stride * s.esize
  deepep.check_ub(c, "dispatch", 4 * n * E + rows + 2 * 4 * R.tokens * R.topk // s.blocks + 8
                  + 256, "n x experts int32 offsets, two rows (and quant rows), its tables")
  if notify then
    local ub, counts, erows, matrix = deepep.notify_ub_bytes(n, E)
    deepep.check_ub(c, "notify", ub, string.format("its block %d of %d after ReloadRecvData: "
                    .. "n x experts int32 counts %d, BuildMaxBs's five experts rows %d, the n x "
                    .. "2n int32 balance matrix %d", s.blocks // 2, s.blocks, counts, erows, matrix))
  end
  s.input = op.fill_input(m:alloc(c.dtype, R.tokens * s.hidden, "input"), c.dtype)
  s.expert_ids = moe.route_buffer(m, R)
  deepep.run_layout(m, s)                                    -- get_dispatch_layout, once
  s.recv_data = m:alloc("int32", n * E, "recv_data", "backed"):fill("zero")
  s.put_offset = notify and m:alloc("int32", n * E, "put_offset", "backed"):fill("zero")
    or deepep.table_buffer(m, n, n * E, "put_offset", false, function() return L.put_offset end)
  s.total_recv = m:alloc("int32", 8, "total_recv_tokens", "backed")
  s.max_bs = m:alloc("int32", 8, "max_bs", "backed")
  s.recv_per_expert = m:alloc("int32", 2 * (E // n), "recv_tokens_per_expert", "backed")
  s.balance = m:alloc("int32", 2 * n * n, "balance_matrix", "backed")
  s.recv = (recv_local and m.alloc or m.malloc)(m, s.wire.dtype, R.max_recv * s.wire.row, "expand_x")
  s.recv:fill("zero")
  if s.wire.quant then s.scales = m:malloc("fp32", R.max_recv, "dynamic_scales"):fill("zero") end
  s.expect, s.expect_scales = deepep.expect_rows(m, L.routes, s.input, R.max_recv, s.wire)
  return s
end

-- the data kernel (shmem_moe_dispatch_normal), for dispatch_data.lua
D.data_kernel = dispatch_kernel

return D
