-- HCCL AllToAll (emulated AIV orchestration), in the hcomm seed's code shape
-- with one block per peer rank b: it copies the shard for b from the input
-- into slot b of this rank's HCCL buffer (CpGM2GM), tells b (Record) and
-- waits for b's word (Wait) that b's shard for this rank is staged, reads it
-- from slot `rank` of b's HCCL buffer into output[b] (CpGM2GM), then post-syncs
-- with b (Record + Wait) so the buffers can be reused. The block of b == rank
-- copies its own shard straight to the output. With more ranks than cores a
-- block serves ranks b, b + block_dim, ... Inputs larger than the HCCL buffer
-- take one kernel launch per chunk (count / n_pes elements of every shard).
local lab = require("shmemlab")
local op = require("shmemlab.op")
local hccl = require("shmemlab.hccl")
local levels = require("shmemlab.hccl_levels")
local F = lab.frames

-- flag slots of a rank: READY + r = "rank r staged my shard";
-- DONE + r = "rank r finished reading its shard from me"
local READY = 0

local function kernel(k, a)
  local rank = k.pe
  local ub = k:ub(a.dtype, a.ub_elems)
  local flag = hccl.flag_ub(k)
  local tag, DONE = a.tag, k.n_pes
  for b = k.block, k.n_pes - 1, k.block_num do
    if b ~= rank then
      k:prof_start(F.COPY_IN)
      op.copy_gm(k, a.comm.buffer:sub(b * a.len, a.len),          -- CpGM2GM
                 a.input:sub(b * a.count + a.base, a.len), a.len, ub)
      k:pipe_barrier("ALL")
      k:prof_end(F.COPY_IN)
      k:prof_start(F.SIGNAL_WAIT)
      hccl.handshake(k, a.comm, flag, b, READY, tag)              -- Record(b, tag) + Wait(b, tag)
      k:prof_end(F.SIGNAL_WAIT)
      k:pipe_barrier("ALL")
      k:prof_start(F.REMOTE_PUT_GET)
      op.copy_gm(k, a.output:sub(b * a.count + a.base, a.len),    -- CpGM2GM
                 k:ptr(a.comm.buffer, b):sub(rank * a.len, a.len), a.len, ub)
      k:pipe_barrier("ALL")
      k:prof_end(F.REMOTE_PUT_GET)
      k:prof_start(F.SIGNAL_WAIT)
      hccl.handshake(k, a.comm, flag, b, DONE, tag)               -- Record(b, tag) + Wait(b, tag)
      k:prof_end(F.SIGNAL_WAIT)
    else
      k:prof_start(F.FINALIZE)
      op.copy_gm(k, a.output:sub(rank * a.count + a.base, a.len),
                 a.input:sub(rank * a.count + a.base, a.len), a.len, ub)
      k:pipe_barrier("ALL")
      k:prof_end(F.FINALIZE)
    end
  end
end

return levels.wrap(op.define {
  name = "hccl_alltoall",
  collective = "alltoall",
  title = hccl.title("AllToAll"),
  dtypes = op.DTYPES,
  defaults = { count = 64 * 1024 },
  unused = {
    [F.LOCAL_COMPUTE] = "no local compute in a pure transport op",
  },

  describe = function(c, s)
    return { algorithm = "hcomm AIV AllToAll: one block per peer rank, pairwise soft sync",
             chunk_elems = s.shard_chunk, ub_bytes = s.ub_bytes, cores = hccl.blocks(c) }
  end,

  payload = op.shard_payload,

  setup = function(m, c)
    local s = op.state(c, { tag = 0 })
    s.comm = hccl.comm(m, c.dtype, c.count * c.pes, 2 * c.pes)
    s.shard_chunk = s.comm.elems // c.pes            -- elements of every shard per launch
    if s.shard_chunk < 1 then
      error(string.format("HCCL buffer of %d %s holds less than one element per rank",
                          s.comm.elems, c.dtype), 0)
    end
    op.fit_ub(c, s, hccl.UB_BYTES)
    s.input = op.fill_input(m:alloc(c.dtype, c.count * c.pes, "input"), c.dtype)
    s.output = m:alloc(c.dtype, c.count * c.pes, "output")
    s.expect = op.alltoall_expect(m, c, s.input)
    return s
  end,

  run = function(m, c, s)                                   -- one launch per shard chunk
    return hccl.launch_chunks(m, c, s, "hccl_alltoall", kernel, hccl.blocks(c), s.shard_chunk)
  end,

  check = op.check_output,
})
