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
      hccl.record(k, a.comm, flag, b, READY + rank, tag)          -- Record(b, tag)
      hccl.wait(k, a.comm, flag, READY + b, tag)                  -- Wait(b, tag)
      k:prof_end(F.SIGNAL_WAIT)
      k:pipe_barrier("ALL")
      k:prof_start(F.REMOTE_PUT_GET)
      op.copy_gm(k, a.output:sub(b * a.count + a.base, a.len),    -- CpGM2GM
                 k:ptr(a.comm.buffer, b):sub(rank * a.len, a.len), a.len, ub)
      k:pipe_barrier("ALL")
      k:prof_end(F.REMOTE_PUT_GET)
      k:prof_start(F.SIGNAL_WAIT)
      hccl.record(k, a.comm, flag, b, DONE + rank, tag)           -- Record(b, tag)
      hccl.wait(k, a.comm, flag, DONE + b, tag)                   -- Wait(b, tag)
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

return op.define {
  name = "hccl_alltoall",
  collective = "alltoall",
  title = hccl.title("AllToAll"),
  dtypes = { "int32", "int8", "int16", "int64", "uint8", "fp16", "bf16", "fp32" },
  defaults = { count = 64 * 1024 },
  unused = {
    [F.LOCAL_COMPUTE] = "no local compute in a pure transport op",
  },

  describe = function(c, s)
    return { algorithm = "hcomm AIV AllToAll: one block per peer rank, pairwise soft sync",
             chunk_elems = s.shard_chunk, ub_bytes = s.ub_bytes,
             cores = math.min(c.pes, c.cores) }
  end,

  payload = function(c)
    return { n_pes = c.pes, shard_elems = c.count, dtype_size = lab.core.dtype_size(c.dtype) }
  end,

  setup = function(m, c)
    local esize = lab.core.dtype_size(c.dtype)
    local s = { dtype = c.dtype, count = c.count, tag = 0 }
    s.comm = hccl.comm(m, c.dtype, c.count * c.pes, 2 * c.pes)
    s.shard_chunk = s.comm.elems // c.pes            -- elements of every shard per launch
    if s.shard_chunk < 1 then
      error(string.format("HCCL buffer of %d %s holds less than one element per rank",
                          s.comm.elems, c.dtype), 0)
    end
    s.ub_elems = op.fit(math.min(c.ub_bytes, 190 * 1024), esize)
    s.ub_bytes = s.ub_elems * esize
    s.input = op.fill_input(m:alloc(c.dtype, c.count * c.pes, "input"), c.dtype)
    s.output = m:alloc(c.dtype, c.count * c.pes, "output")
    s.expect = m:alloc(c.dtype, c.count * c.pes, "expect")   -- differs per PE: GM
    for j = 0, c.pes - 1 do
      for p = 0, c.pes - 1 do
        s.expect:on(j):sub(p * c.count, c.count):copy(s.input:on(p):sub(j * c.count, c.count))
      end
    end
    return s
  end,

  run = function(m, c, s)
    local results = {}
    for base = 0, c.count - 1, s.shard_chunk do             -- one launch per chunk
      s.tag = s.tag + 1
      s.base, s.len = base, math.min(s.shard_chunk, c.count - base)
      results[#results + 1] = m:launch({ name = "hccl_alltoall", kernel = kernel },
                                       math.min(c.pes, c.cores), s)
    end
    return results
  end,

  check = function(_, _, s)
    return s.output:compare(s.expect)
  end,
}
