-- shmemlab.hccl: the hcomm AIV orchestration helpers the HCCL-style baselines
-- are written with: each rank's HCCL buffer, and soft sync through 32-byte
-- flags written with DataCopy and polled (Record, Wait, Record1vN, WaitNv1);
-- and the setup and launch plumbing the baselines share.
local lab = require("shmemlab")

local hccl = {}

hccl.FLAG = 8                           -- one flag slot: 32 bytes = 8 int32
hccl.UB_BYTES = 190 * 1024              -- UB a baseline stages through, at most (the real UB)

-- the blocks of a baseline with one block per peer rank: n_pes, at most the cores
function hccl.blocks(c)
  return math.min(c.pes, c.cores)
end

-- the buffers of one communicator: data (the HCCL buffer, capped at what the
-- op needs) and flags (slots [notify][rank] per rank), on every rank
function hccl.comm(m, dtype, elems, slots)
  local cap = m:state().profile.hccl_buffer_bytes // lab.core.dtype_size(dtype)
  local n = math.max(1, math.min(elems, cap))
  return {
    buffer = m:malloc(dtype, n, "hccl_buffer"),
    elems = n,                          -- HCCL buffer capacity in elements
    flags = m:malloc("int32", slots * hccl.FLAG, "hccl_flags", "backed"),
  }
end

-- a block's flag UB (one slot, every int32 of it written before it is copied)
function hccl.flag_ub(k)
  local ub = k:ub("int32", hccl.FLAG, "backed")
  for i = 1, hccl.FLAG - 1 do k:set_value(ub, i, 0) end
  return ub
end

-- Record: write tag into slot of rank peer's flags (SetValue, S_MTE3, DataCopy)
function hccl.record(k, c, ub, peer, slot, tag)
  k:set_value(ub, 0, tag)
  k:set_flag("S_MTE3", 1); k:wait_flag("S_MTE3", 1)
  k:data_copy(k:ptr(c.flags, peer):sub(slot * hccl.FLAG, hccl.FLAG), ub, hccl.FLAG)
  k:set_flag("MTE3_S", 1); k:wait_flag("MTE3_S", 1)
end

-- Wait: poll slot of this rank's own flags until it holds tag
function hccl.wait(k, c, ub, slot, tag)
  return k:wait_signal_value(c.flags:sub(slot * hccl.FLAG, hccl.FLAG), ub, hccl.FLAG,
                             lab.CMP_EQ, tag)
end

-- Record1vN: write tag into this rank's own slot, for every rank to poll
function hccl.record_1vn(k, c, ub, slot, tag)
  hccl.record(k, c, ub, k.pe, slot, tag)
end

-- WaitNv1: poll rank's slot (a remote read) until it holds tag
function hccl.wait_nv1(k, c, ub, rank, slot, tag)
  return k:wait_signal_value(k:ptr(c.flags, rank):sub(slot * hccl.FLAG, hccl.FLAG), ub,
                             hccl.FLAG, lab.CMP_EQ, tag)
end

-- Record(peer, tag) into peer's slot base + rank, then Wait(peer, tag) on my slot
-- base + peer: a pairwise soft sync with peer
function hccl.handshake(k, c, ub, peer, base, tag)
  hccl.record(k, c, ub, peer, base + k.pe, tag)
  hccl.wait(k, c, ub, base + peer, tag)
end

-- post-sync of a block serving peers b = block, block + block_num, ...: Wait(b)
-- on slot base + b for each, every wait timed in its own signal_or_barrier_wait
function hccl.post_sync(k, c, ub, base, tag)
  local F = lab.frames
  for b = k.block, k.n_pes - 1, k.block_num do
    if b ~= k.pe then
      k:prof_start(F.SIGNAL_WAIT)
      hccl.wait(k, c, ub, base + b, tag)
      k:prof_end(F.SIGNAL_WAIT)
    end
  end
end

-- one launch per chunk of c.count elements (chunk: default the HCCL buffer's
-- capacity), each with a new tag and s.base, s.len: the results of one operation
function hccl.launch_chunks(m, c, s, name, kernel, block_dim, chunk)
  chunk = chunk or s.comm.elems
  local results = {}
  for base = 0, c.count - 1, chunk do
    s.tag = s.tag + 1
    s.base, s.len = base, math.min(chunk, c.count - base)
    results[#results + 1] = m:launch({ name = name, kernel = kernel }, block_dim, s)
  end
  return results
end

-- one launch per MoE send window (moe.windows) on s.blocks blocks, each with a
-- new tag and s.lo, s.hi, s.plan (the window's), s.first (the first window?)
function hccl.launch_windows(m, s, name, kernel)
  local results = {}
  for i, w in ipairs(s.windows) do
    s.tag = s.tag + 1
    s.lo, s.hi, s.plan, s.first = w.lo, w.hi, w.plan, i == 1
    results[#results + 1] = m:launch({ name = name, kernel = kernel }, s.blocks, s)
  end
  return results
end

-- the name a report gives a baseline
function hccl.title(op_name)
  return "HCCL " .. op_name .. " (emulated AIV orchestration)"
end

return hccl
