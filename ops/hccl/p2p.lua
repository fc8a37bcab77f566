-- HCCL P2P send/recv (emulated AIV orchestration), in the hcomm seed's code
-- shape with one share of the data per block: on rank src the block copies
-- its share of the input into src's HCCL buffer (CpGM2GM) and tells dst
-- (Record); on rank dst the block waits for that word (Wait), reads the share
-- from src's HCCL buffer into its output (CpGM2GM) and tells src (Record),
-- which waits for it (post-sync) before the buffer is reused. The other ranks
-- launch and idle. Inputs larger than the HCCL buffer take one kernel launch
-- per chunk. (HCCL has one send/recv mechanism: c.mode does not change it.)
local lab = require("shmemlab")
local op = require("shmemlab.op")
local hccl = require("shmemlab.hccl")
local F = lab.frames

-- flag slots of a rank: READY + b = "src's block b staged its share" (on dst);
-- DONE + b = "dst's block b has read its share" (on src)
local READY = 0

local function kernel(k, a)
  local rank, src, dst = k.pe, a.src, a.dst
  local ub = k:ub(a.dtype, a.ub_elems)
  if rank ~= src and rank ~= dst then return end       -- the other ranks idle
  local flag = hccl.flag_ub(k)
  local tag, DONE = a.tag, READY + k.block_num
  local first, n = op.share(k, a.len, a.esize)
  if n == 0 then return end
  if rank == src then
    k:prof_start(F.COPY_IN)
    op.copy_gm(k, a.comm.buffer:sub(first, n), a.input:sub(a.base + first, n), n, ub)
    k:pipe_barrier("ALL")
    k:prof_end(F.COPY_IN)
    k:prof_start(F.SIGNAL_WAIT)
    hccl.record(k, a.comm, flag, dst, READY + k.block, tag)       -- Record(dst, tag)
    k:prof_end(F.SIGNAL_WAIT)
  end
  if rank == dst then
    k:prof_start(F.SIGNAL_WAIT)
    hccl.wait(k, a.comm, flag, READY + k.block, tag)              -- Wait(src, tag)
    k:prof_end(F.SIGNAL_WAIT)
    k:pipe_barrier("ALL")
    k:prof_start(F.REMOTE_PUT_GET)
    op.copy_gm(k, a.output:sub(a.base + first, n),                 -- CpGM2GM
               k:ptr(a.comm.buffer, src):sub(first, n), n, ub)
    k:pipe_barrier("ALL")
    k:prof_end(F.REMOTE_PUT_GET)
    k:prof_start(F.SIGNAL_WAIT)
    hccl.record(k, a.comm, flag, src, DONE + k.block, tag)        -- Record(src, tag)
    k:prof_end(F.SIGNAL_WAIT)
  end
  if rank == src then
    k:prof_start(F.SIGNAL_WAIT)
    hccl.wait(k, a.comm, flag, DONE + k.block, tag)               -- Wait(dst, tag)
    k:prof_end(F.SIGNAL_WAIT)
  end
end

return op.define {
  name = "hccl_p2p",
  collective = "p2p",
  title = hccl.title("P2P"),
  dtypes = op.DTYPES,
  defaults = { count = 256 * 1024, block_dim = 16, src_pe = 0, dst_pe = 1, mode = "put" },
  unused = {
    [F.LOCAL_COMPUTE] = "no local compute in a pure transport op",
    [F.FINALIZE] = "the read from src's HCCL buffer lands in the output: no copy-out",
  },

  describe = function(c, s)
    return { algorithm = string.format("hcomm AIV send/recv from rank %d to rank %d: one "
               .. "share per block, Record / Wait both ways", s.src, s.dst),
             chunk_elems = s.comm.elems, ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  active_pes = op.src_dst_pes,
  payload = op.elems_payload,

  setup = function(m, c)
    local src, dst = op.p2p_pes(c)
    local s = op.state(c, { tag = 0, src = src, dst = dst })
    s.comm = hccl.comm(m, c.dtype, c.count, 2 * c.block_dim)
    op.fit_ub(c, s, hccl.UB_BYTES)
    s.input = op.fill_input(m:alloc(c.dtype, c.count, "input"), c.dtype)
    s.output = m:alloc(c.dtype, c.count, "output")
    s.expect = m:host(c.dtype, c.count, "expect"):copy(s.input:on(s.src))
    return s
  end,

  run = function(m, c, s)                                   -- one launch per chunk
    return hccl.launch_chunks(m, c, s, "hccl_p2p", kernel, c.block_dim)
  end,

  check = op.check_dst_output,
}
