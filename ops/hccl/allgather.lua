-- HCCL AllGather (emulated AIV orchestration), the hcomm seed's code shape:
-- block b != rank waits for rank b's data (WaitNv1), copies it from rank b's
-- HCCL buffer into output[b] (CpGM2GM), then post-syncs with rank b
-- (Record + Wait); block == rank copies its input into its own HCCL buffer,
-- tells every rank (Record1vN) and copies its own slice out. With more ranks
-- than cores a block serves ranks b, b + block_dim, ... Inputs larger than the
-- HCCL buffer take one kernel launch per chunk.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local hccl = require("shmemlab.hccl")
local levels = require("shmemlab.hccl_levels")
local F = lab.frames

-- flag slots of a rank: 0 = "my data is staged"; 1 + r = "rank r finished reading"
local READY = 0

local function kernel(k, a)
  local rank = k.pe
  local ub = k:ub(a.dtype, a.ub_elems)
  local flag = hccl.flag_ub(k)
  local tag = a.tag
  if rank % k.block_num == k.block then            -- block == rank
    k:prof_start(F.COPY_IN)
    op.copy_gm(k, a.comm.buffer, a.input:sub(a.base, a.len), a.len, ub)
    k:pipe_barrier("ALL")
    k:prof_end(F.COPY_IN)
    hccl.record_1vn(k, a.comm, flag, READY, tag)              -- Record1vN(tag)
    k:prof_start(F.FINALIZE)
    op.copy_gm(k, a.output:sub(rank * a.count + a.base, a.len), a.comm.buffer, a.len, ub)
    k:pipe_barrier("ALL")
    k:prof_end(F.FINALIZE)
  end
  for b = k.block, k.n_pes - 1, k.block_num do     -- block b != rank
    if b ~= rank then
      k:prof_start(F.SIGNAL_WAIT)
      hccl.wait_nv1(k, a.comm, flag, b, READY, tag)           -- WaitNv1(tag)
      k:prof_end(F.SIGNAL_WAIT)
      k:pipe_barrier("ALL")
      k:prof_start(F.REMOTE_PUT_GET)
      op.copy_gm(k, a.output:sub(b * a.count + a.base, a.len),   -- CpGM2GM
                 k:ptr(a.comm.buffer, b), a.len, ub)
      k:pipe_barrier("ALL")
      k:prof_end(F.REMOTE_PUT_GET)
      hccl.record(k, a.comm, flag, b, 1 + rank, tag)          -- Record(b, tag)
    end
  end
  k:prof_start(F.SIGNAL_WAIT)           -- Wait(b, tag): with more ranks than cores a
  for b = k.block, k.n_pes - 1, k.block_num do   -- block waits once all its Records
    if b ~= rank then hccl.wait(k, a.comm, flag, 1 + b, tag) end   -- are out
  end
  k:prof_end(F.SIGNAL_WAIT)
end

return levels.wrap(op.define {
  name = "hccl_allgather",
  collective = "allgather",
  title = hccl.title("AllGather"),
  dtypes = op.DTYPES,
  unused = {
    [F.LOCAL_COMPUTE] = "no local compute in a pure transport op",
  },

  describe = function(c, s)
    return { algorithm = "hcomm AIV AllGather: one block per peer rank, soft sync by flags",
             chunk_elems = s.comm.elems, ub_bytes = s.ub_bytes, cores = hccl.blocks(c) }
  end,

  payload = op.shard_payload,

  setup = function(m, c)
    local s = op.state(c, { tag = 0 })
    s.comm = hccl.comm(m, c.dtype, c.count, 1 + c.pes)
    op.fit_ub(c, s, hccl.UB_BYTES)
    s.input = op.fill_input(m:alloc(c.dtype, c.count, "input"), c.dtype)
    s.output = m:alloc(c.dtype, c.count * c.pes, "output")
    s.expect = op.allgather_expect(m, c, s.input)
    return s
  end,

  run = function(m, c, s)                                   -- one launch per chunk
    return hccl.launch_chunks(m, c, s, "hccl_allgather", kernel, hccl.blocks(c))
  end,

  check = op.check_output,
})
