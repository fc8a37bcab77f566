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

-- slice q of the chunk: its first element and size
local function part(a, q, slice)
  return q * slice, math.max(0, math.min(slice, a.len - q * slice))
end

-- stage the input: slice b into the HCCL buffer for rank b (Record), or the own
-- slice seeded; each loop's Records come before the next loop's Waits, so that a
-- block serving several ranks never waits for a flag it has still to write itself
local function stage(k, a, flag, ub, slice)
  for b = k.block, k.n_pes - 1, k.block_num do
    local first, cnt = part(a, b, slice)
    k:prof_start(F.COPY_IN)
    op.copy_gm(k, a.comm.buffer:sub(first, cnt), a.input:sub(a.base + first, cnt), cnt, ub)
    k:pipe_barrier("ALL")
    k:prof_end(F.COPY_IN)
    if b == k.pe then
      hccl.record_1vn(k, a.comm, flag, SEEDED, a.tag)           -- my slice seeded
    else
      hccl.record(k, a.comm, flag, b, STAGED + k.pe, a.tag)     -- Record(b, tag)
    end
  end
end

-- reduce rank b's part of my slice into my buffer, for each rank b the block serves
local function reduce(k, a, flag, ub, mine, size)
  local buf = a.comm.buffer
  for b = k.block, k.n_pes - 1, k.block_num do
    if b ~= k.pe then
      k:prof_start(F.SIGNAL_WAIT)
      hccl.wait(k, a.comm, flag, STAGED + b, a.tag)             -- Wait(b, tag)
      hccl.wait(k, a.comm, flag, SEEDED, a.tag)
      k:prof_end(F.SIGNAL_WAIT)
      k:prof_start(F.REMOTE_PUT_GET)
      k:set_atomic(a.atomic, a.dtype)                           -- SetAtomicAdd<T>()
      op.copy_gm(k, buf:sub(mine, size), k:ptr(buf, b):sub(mine, size), size, ub)
      k:set_atomic_none()
      k:pipe_barrier("ALL")
      k:prof_end(F.REMOTE_PUT_GET)
    end
  end
end

-- gather the reduced slices: my own out of my buffer (Record1vN), rank b's out of
-- its buffer once it announced it (WaitNv1), then Record(b) that it was read
local function gather(k, a, flag, ub, slice)
  local buf, rank, n = a.comm.buffer, k.pe, k.n_pes
  for b = k.block, n - 1, k.block_num do
    if b == rank then
      local mine, size = part(a, rank, slice)
      hccl.record_1vn(k, a.comm, flag, REDUCED, a.tag)          -- Record1vN(tag)
      k:prof_start(F.FINALIZE)
      op.copy_gm(k, a.output:sub(a.base + mine, size), buf:sub(mine, size), size, ub)
      k:pipe_barrier("ALL")
      k:prof_end(F.FINALIZE)
    end
  end
  for b = k.block, n - 1, k.block_num do
    if b ~= rank then
      local first, cnt = part(a, b, slice)
      k:prof_start(F.SIGNAL_WAIT)
      hccl.wait_nv1(k, a.comm, flag, b, REDUCED, a.tag)         -- WaitNv1(tag)
      k:prof_end(F.SIGNAL_WAIT)
      k:pipe_barrier("ALL")
      k:prof_start(F.REMOTE_PUT_GET)
      op.copy_gm(k, a.output:sub(a.base + first, cnt), k:ptr(buf, b):sub(first, cnt), cnt, ub)
      k:pipe_barrier("ALL")
      k:prof_end(F.REMOTE_PUT_GET)
      hccl.record(k, a.comm, flag, b, STAGED + n + rank, a.tag) -- Record(b, tag)
    end
  end
end

local function kernel(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  local flag = hccl.flag_ub(k)
  local slice = op.split(a.len, k.n_pes, a.esize)
  local mine, size = part(a, k.pe, slice)
  stage(k, a, flag, ub, slice)
  reduce(k, a, flag, ub, mine, size)
  k:prof_start(F.SIGNAL_WAIT)
  k:sync_all()                                     -- every contribution has landed
  k:prof_end(F.SIGNAL_WAIT)
  gather(k, a, flag, ub, slice)
  hccl.post_sync(k, a.comm, flag, STAGED + k.n_pes, a.tag)     -- Wait(b, tag) per peer
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
