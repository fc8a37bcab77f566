-- HCCL ReduceScatter (emulated AIV orchestration), the hcomm seed's steps with
-- one block per peer rank, accumulating straight into the output as hcomm's
-- AIV ReduceScatter does. Block b != r copies slice b of the input into slot b
-- of the HCCL buffer (for rank b to read) and tells rank b (Record); it waits
-- until rank b has staged slot r for it and the output is seeded (Wait), then
-- copies rank b's slot r into the output with the atomic unit on
-- (SetAtomicAdd/Max/Min: CpGM2GM reduces on the UB->GM copy) and post-syncs
-- with rank b (Record + Wait). Block r seeds the output with its own slice.
-- With more ranks than cores a block serves ranks b, b + block_dim, ...
-- Inputs larger than the HCCL buffer (n_pes slots) take one kernel launch per
-- chunk.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local hccl = require("shmemlab.hccl")
local levels = require("shmemlab.hccl_levels")
local F = lab.frames

-- flag slots of a rank: 0 = "my output is seeded", 1 + q = "rank q staged my
-- slot", 1 + n + q = "rank q finished reading"
local SEEDED, STAGED = 0, 1

local function kernel(k, a)
  local rank, n = k.pe, k.n_pes
  local ub = k:ub(a.dtype, a.ub_elems)
  local flag = hccl.flag_ub(k)
  local tag, buf, len = a.tag, a.comm.buffer, a.len
  local out = a.output:sub(a.base, len)
  -- each loop's Records come before the next loop's Waits, so that a block
  -- serving several ranks never waits for a flag it has still to write itself
  for b = k.block, n - 1, k.block_num do           -- stage the input, seed the output
    k:prof_start(F.COPY_IN)
    local src = a.input:sub(b * a.count + a.base, len)
    op.copy_gm(k, b == rank and out or buf:sub(b * a.slot, len), src, len, ub)
    k:pipe_barrier("ALL")
    k:prof_end(F.COPY_IN)
    if b == rank then
      hccl.record_1vn(k, a.comm, flag, SEEDED, tag)             -- my output seeded
    else
      hccl.record(k, a.comm, flag, b, STAGED + rank, tag)       -- Record(b, tag)
    end
  end
  for b = k.block, n - 1, k.block_num do           -- reduce rank b's slot for me
    if b ~= rank then
      k:prof_start(F.SIGNAL_WAIT)
      hccl.wait(k, a.comm, flag, STAGED + b, tag)               -- Wait(b, tag)
      hccl.wait(k, a.comm, flag, SEEDED, tag)
      k:prof_end(F.SIGNAL_WAIT)
      k:prof_start(F.REMOTE_PUT_GET)
      k:set_atomic(a.atomic, a.dtype)                           -- SetAtomicAdd<T>()
      op.copy_gm(k, out, k:ptr(buf, b):sub(rank * a.slot, len), len, ub)
      k:set_atomic_none()
      k:pipe_barrier("ALL")
      k:prof_end(F.REMOTE_PUT_GET)
      hccl.record(k, a.comm, flag, b, STAGED + n + rank, tag)   -- Record(b, tag)
    end
  end
  hccl.post_sync(k, a.comm, flag, STAGED + n, tag)           -- Wait(b, tag) per peer
end

return levels.wrap(op.define {
  name = "hccl_reduce_scatter",
  collective = "reduce_scatter",
  title = hccl.title("ReduceScatter"),
  dtypes = op.DTYPES,
  defaults = { reduce = "sum" },
  unused = {
    [F.LOCAL_COMPUTE] = "the reduction is done by the atomic unit on CpGM2GM's UB->GM "
                        .. "copies (SetAtomicAdd/Max/Min): no vector compute",
    [F.FINALIZE] = "the atomic copies accumulate straight into the output (as hcomm's "
                   .. "AIV ReduceScatter does): no copy-out",
  },

  describe = function(c, s)
    return { algorithm = "hcomm AIV ReduceScatter (" .. c.reduce .. "): one block per peer "
                         .. "rank, atomic CpGM2GM into the output, soft sync by flags",
             chunk_elems = s.slot, ub_bytes = s.ub_bytes, cores = hccl.blocks(c) }
  end,

  payload = op.shard_payload,

  setup = function(m, c)
    local s = op.state(c, { tag = 0 })
    s.atomic = op.atomic("hccl_reduce_scatter", c.reduce or "sum")
    -- one slot per rank in the HCCL buffer
    s.slot = math.min(c.count, op.fit(c.profile.hccl_buffer_bytes // c.pes, s.esize))
    s.comm = hccl.comm(m, c.dtype, s.slot * c.pes, 1 + 2 * c.pes)
    op.fit_ub(c, s, hccl.UB_BYTES)
    s.input = op.fill_reduce_input(m:alloc(c.dtype, c.count * c.pes, "input"))
    s.output = m:alloc(c.dtype, c.count, "output")
    s.expect = op.reduce_scatter_expect(m, c, s.input, s.atomic)
    return s
  end,

  run = function(m, c, s)                                   -- one launch per chunk of slots
    return hccl.launch_chunks(m, c, s, "hccl_reduce_scatter", kernel, hccl.blocks(c), s.slot)
  end,

  check = op.check_output,
})
