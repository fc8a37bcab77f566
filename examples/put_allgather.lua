-- A complete operator: the smallest allgather that pushes. Block b of every PE
-- puts the PE's shard into PE b's output (and PE b + blocks', ...) and adds 1 to
-- that PE's counter; block 0 of each PE waits until every shard has arrived.
-- Run it:   lua run_op.lua examples/put_allgather.lua --pes 4
local lab = require("shmemlab")
local op = require("shmemlab.op")
local F = lab.frames

local function kernel(k, s)
  local ub = k:ub(s.dtype, s.ub_elems)
  for dst = k.block, k.n_pes - 1, k.block_num do     -- block b serves PEs b, b + blocks, ...
    k:prof_start(F.REMOTE_PUT_GET)
    k:mte_put_nbi(s.output:sub(k.pe * s.count, s.count), s.input, ub, s.ub_bytes, s.count, dst, 0)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)  -- the shard has landed
    k:prof_end(F.REMOTE_PUT_GET)
    k:signal_op(s.arrived, 1, lab.SIGNAL_ADD, dst)
  end
  if k.block == 0 then
    k:prof_start(F.SIGNAL_WAIT)
    k:signal_wait_until(s.arrived, lab.CMP_GE, s.epoch * k.n_pes)
    k:prof_end(F.SIGNAL_WAIT)
  end
end

return op.define {
  name = "put_allgather", collective = "allgather", dtypes = { "int32", "fp16" },
  baseline = "allgather", defaults = { count = 64 * 1024 },   -- ops/hccl/allgather.lua
  unused = { [F.COPY_IN] = "the puts read the input in place",
             [F.LOCAL_COMPUTE] = "an allgather computes nothing",
             [F.FINALIZE] = "the puts write the output in place" },
  describe = function(c, s)
    return { algorithm = "push every shard, count the arrivals", chunk_elems = s.ub_elems,
             ub_bytes = s.ub_bytes, cores = math.min(c.pes, c.block_dim) }
  end,
  payload = op.shard_payload,
  setup = function(m, c)
    local s = { dtype = c.dtype, count = c.count, epoch = 0 }
    s.ub_elems = op.fit(c.ub_bytes, lab.core.dtype_size(c.dtype))
    s.ub_bytes = s.ub_elems * lab.core.dtype_size(c.dtype)
    s.input = op.fill_input(m:alloc(c.dtype, c.count, "input"), c.dtype)
    s.output = m:malloc(c.dtype, c.count * c.pes, "output")
    s.arrived = m:malloc("int32", 8, "arrived", "backed")
    s.expect = op.allgather_expect(m, c, s.input)
    return s
  end,
  run = function(m, c, s)
    s.epoch = s.epoch + 1
    return { m:launch({ name = "put_allgather", kernel = kernel }, c.block_dim, s) }
  end,
  check = function(_, _, s) return s.output:compare(s.expect) end,
}
