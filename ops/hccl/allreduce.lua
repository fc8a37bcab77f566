-- HCCL AllReduce (emulated AIV orchestration), the hcomm seed's steps with one
-- block per peer rank. Rank r owns slice r of the chunk. Block b != r copies
-- slice b of the input into the HCCL buffer (for rank b to read) and tells
-- rank b (Record); it waits until rank b has staged slice r for it and the
-- own slice is seeded (Wait), then copies rank b's slice r into its own
-- buffer with the atomic unit on (SetAtomicAdd/Max/Min: CpGM2GM reduces on
-- the UB->GM copy). Block r seeds the buffer with its own slice. After a
-- SyncAll block r announces the reduced slice (Record1vN) and copies it out;
-- block b waits for rank b's (WaitNv1), copies it into output[b] and
-- post-syncs with rank b (Record + Wait). With more ranks than cores a block
-- serves ranks b, b + block_dim, ... Inputs larger than the HCCL buffer take
-- one kernel launch per chunk.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local hccl = require("shmemlab.hccl")
local levels = require("shmemlab.hccl_levels")
local F = lab.frames

-- flag slots of a rank: 0 = "my slice is seeded", 1 = "my slice is reduced",
-- 2 + q = "rank q staged my slice", 2 + n + q = "rank q finished reading"
local SEEDED, REDUCED, STAGED = 0, 1, 2

local function kernel(k, a)
  local rank, n = k.pe, k.n_pes
  local ub = k:ub(a.dtype, a.ub_elems)
  local flag = hccl.flag_ub(k)
  local tag, buf, slice = a.tag, a.comm.buffer, op.split(a.len, n, a.esize)
  local function part(q)                           -- slice q of the chunk: first, size
    return q * slice, math.max(0, math.min(slice, a.len - q * slice))
  end
  local mine, size = part(rank)
  -- each loop's Records come before the next loop's Waits, so that a block
  -- serving several ranks never waits for a flag it has still to write itself
  for b = k.block, n - 1, k.block_num do           -- stage the input
    local first, cnt = part(b)
    k:prof_start(F.COPY_IN)
    op.copy_gm(k, buf:sub(first, cnt), a.input:sub(a.base + first, cnt), cnt, ub)
    k:pipe_barrier("ALL")
    k:prof_end(F.COPY_IN)
    if b == rank then
      hccl.record_1vn(k, a.comm, flag, SEEDED, tag)             -- my slice seeded
    else
      hccl.record(k, a.comm, flag, b, STAGED + rank, tag)       -- Record(b, tag)
    end
  end
  for b = k.block, n - 1, k.block_num do           -- reduce rank b's part of my slice
    if b ~= rank then
      k:prof_start(F.SIGNAL_WAIT)
      hccl.wait(k, a.comm, flag, STAGED + b, tag)               -- Wait(b, tag)
      hccl.wait(k, a.comm, flag, SEEDED, tag)
      k:prof_end(F.SIGNAL_WAIT)
      k:prof_start(F.REMOTE_PUT_GET)
      k:set_atomic(a.atomic, a.dtype)                           -- SetAtomicAdd<T>()
      op.copy_gm(k, buf:sub(mine, size), k:ptr(buf, b):sub(mine, size), size, ub)
      k:set_atomic_none()
      k:pipe_barrier("ALL")
      k:prof_end(F.REMOTE_PUT_GET)
    end
  end
  k:prof_start(F.SIGNAL_WAIT)
  k:sync_all()                                     -- every contribution has landed
  k:prof_end(F.SIGNAL_WAIT)
  for b = k.block, n - 1, k.block_num do           -- gather the reduced slices
    if b == rank then
      hccl.record_1vn(k, a.comm, flag, REDUCED, tag)            -- Record1vN(tag)
      k:prof_start(F.FINALIZE)
      op.copy_gm(k, a.output:sub(a.base + mine, size), buf:sub(mine, size), size, ub)
      k:pipe_barrier("ALL")
      k:prof_end(F.FINALIZE)
    end
  end
  for b = k.block, n - 1, k.block_num do
    if b ~= rank then
      local first, cnt = part(b)
      k:prof_start(F.SIGNAL_WAIT)
      hccl.wait_nv1(k, a.comm, flag, b, REDUCED, tag)           -- WaitNv1(tag)
      k:prof_end(F.SIGNAL_WAIT)
      k:pipe_barrier("ALL")
      k:prof_start(F.REMOTE_PUT_GET)
      op.copy_gm(k, a.output:sub(a.base + first, cnt), k:ptr(buf, b):sub(first, cnt), cnt, ub)
      k:pipe_barrier("ALL")
      k:prof_end(F.REMOTE_PUT_GET)
      hccl.record(k, a.comm, flag, b, STAGED + n + rank, tag)   -- Record(b, tag)
    end
  end
  hccl.post_sync(k, a.comm, flag, STAGED + n, tag)           -- Wait(b, tag) per peer
end

return levels.wrap(op.define {
  name = "hccl_allreduce",
  collective = "allreduce",
  title = hccl.title("AllReduce"),
  dtypes = op.DTYPES,
  defaults = { reduce = "sum" },
  unused = {
    [F.LOCAL_COMPUTE] = "the reduction is done by the atomic unit on CpGM2GM's UB->GM "
                        .. "copies (SetAtomicAdd/Max/Min): no vector compute",
  },

  describe = function(c, s)
    return { algorithm = "hcomm AIV AllReduce (" .. c.reduce .. "): one block per peer "
                         .. "rank, atomic CpGM2GM into the HCCL buffer, soft sync by flags",
             chunk_elems = s.comm.elems, ub_bytes = s.ub_bytes, cores = hccl.blocks(c) }
  end,

  payload = op.elems_payload,

  setup = function(m, c)
    local s = op.state(c, { tag = 0 })
    s.atomic = op.atomic("hccl_allreduce", c.reduce or "sum")
    s.comm = hccl.comm(m, c.dtype, c.count, 2 + 2 * c.pes)
    op.fit_ub(c, s, hccl.UB_BYTES)
    s.input = op.fill_reduce_input(m:alloc(c.dtype, c.count, "input"))
    s.output = m:alloc(c.dtype, c.count, "output")
    s.expect = op.allreduce_expect(m, c, s.input, s.atomic)
    return s
  end,

  run = function(m, c, s)                                   -- one launch per chunk
    return hccl.launch_chunks(m, c, s, "hccl_allreduce", kernel, hccl.blocks(c))
  end,

  check = op.check_output,
})
