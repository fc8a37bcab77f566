-- HCCL Broadcast (emulated AIV orchestration), in the hcomm seed's code shape
-- with one share of the data per block: on the root the block copies its
-- share of the input into the root's HCCL buffer (CpGM2GM), tells every rank
-- (Record1vN), copies the share to its own output and waits until every rank
-- has read it (post-sync, Wait per rank); on another rank the block waits for
-- the root's word (WaitNv1), reads the share from the root's HCCL buffer into
-- its output (CpGM2GM) and tells the root (Record). Inputs larger than the
-- HCCL buffer take one kernel launch per chunk.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local hccl = require("shmemlab.hccl")
local levels = require("shmemlab.hccl_levels")
local F = lab.frames

-- flag slots of a rank: READY + b = "block b's share is staged" (the root's);
-- DONE + r * block_num + b = "rank r's block b has read its share" (on the root)
local READY = 0

local function kernel(k, a)
  local rank, root = k.pe, a.root
  local ub = k:ub(a.dtype, a.ub_elems)
  local flag = hccl.flag_ub(k)
  local tag, DONE = a.tag, READY + k.block_num
  local first, n = op.share(k, a.len, a.esize)
  if n == 0 then return end
  if rank == root then
    k:prof_start(F.COPY_IN)
    op.copy_gm(k, a.comm.buffer:sub(first, n), a.input:sub(a.base + first, n), n, ub)
    k:pipe_barrier("ALL")
    k:prof_end(F.COPY_IN)
    hccl.record_1vn(k, a.comm, flag, READY + k.block, tag)        -- Record1vN(tag)
    k:prof_start(F.FINALIZE)
    op.copy_gm(k, a.output:sub(a.base + first, n), a.comm.buffer:sub(first, n), n, ub)
    k:pipe_barrier("ALL")
    k:prof_end(F.FINALIZE)
    k:prof_start(F.SIGNAL_WAIT)
    for r = 0, k.n_pes - 1 do                                      -- post-sync
      if r ~= root then hccl.wait(k, a.comm, flag, DONE + r * k.block_num + k.block, tag) end
    end
    k:prof_end(F.SIGNAL_WAIT)
  else
    k:prof_start(F.SIGNAL_WAIT)
    hccl.wait_nv1(k, a.comm, flag, root, READY + k.block, tag)    -- WaitNv1(tag)
    k:prof_end(F.SIGNAL_WAIT)
    k:pipe_barrier("ALL")
    k:prof_start(F.REMOTE_PUT_GET)
    op.copy_gm(k, a.output:sub(a.base + first, n),                 -- CpGM2GM
               k:ptr(a.comm.buffer, root):sub(first, n), n, ub)
    k:pipe_barrier("ALL")
    k:prof_end(F.REMOTE_PUT_GET)
    k:prof_start(F.SIGNAL_WAIT)
    hccl.record(k, a.comm, flag, root, DONE + rank * k.block_num + k.block, tag)  -- Record
    k:prof_end(F.SIGNAL_WAIT)
  end
end

return levels.wrap(op.define {
  name = "hccl_broadcast",
  collective = "broadcast",
  title = hccl.title("Broadcast"),
  dtypes = op.DTYPES,
  defaults = { count = 256 * 1024, block_dim = 16, root = 0 },
  unused = {
    [F.LOCAL_COMPUTE] = "no local compute in a pure transport op",
  },

  describe = function(c, s)
    return { algorithm = string.format("hcomm AIV Broadcast from rank %d: one share per "
               .. "block, Record1vN / WaitNv1, post-sync per rank", c.root),
             chunk_elems = s.comm.elems, ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  payload = op.elems_payload,

  setup = function(m, c)
    local s = op.state(c, { root = op.pe_option(c.root or 0, "root", c.pes), tag = 0 })
    s.comm = hccl.comm(m, c.dtype, c.count, c.block_dim * (1 + c.pes))
    op.fit_ub(c, s, hccl.UB_BYTES)
    s.input = op.fill_input(m:alloc(c.dtype, c.count, "input"), c.dtype)
    s.output = m:alloc(c.dtype, c.count, "output")
    s.expect = m:host(c.dtype, c.count, "expect"):copy(s.input:on(s.root))
    return s
  end,

  run = function(m, c, s)                                   -- one launch per chunk
    return hccl.launch_chunks(m, c, s, "hccl_broadcast", kernel, c.block_dim)
  end,

  check = op.check_output,
})
