-- Your own operator: a root broadcast in the CANN SHMEM performance guide's shape.
-- The root copies its input into the symmetric buffer chunk by chunk and
-- signals each chunk (magic + chunk_seq); the others wait for each signal and
-- get the chunk. Run it:   lua run_op.lua examples/my_broadcast.lua --pes 8
local lab = require("shmemlab")
local op = require("shmemlab.op")
local F = lab.frames

local function kernel(k, a)
  if k.block ~= 0 then return end                    -- one core per PE is enough here
  local ub = k:ub(a.dtype, a.ub_elems)
  local magic = a.epoch * a.chunks                   -- a fresh signal value per launch
  if k.pe == a.root then
    k:prof_start(F.COPY_IN)                          -- frame 0: root stages and signals
    for seq = 1, a.chunks do
      local done = (seq - 1) * a.ub_elems
      local n = math.min(a.count - done, a.ub_elems)
      k:mte_put_nbi(a.sym:sub(done, n), a.input:sub(done, n), ub, a.ub_bytes, n, a.root, 0)
      k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
      k:signal_op(a.sync, magic + seq, lab.SIGNAL_SET, a.root)
    end
    k:prof_end(F.COPY_IN)
  end
  k:prof_start(F.FINALIZE)                           -- frame 4: read, with the wait nested
  for seq = 1, a.chunks do
    local done = (seq - 1) * a.ub_elems
    local n = math.min(a.count - done, a.ub_elems)
    k:prof_start(F.SIGNAL_WAIT)
    k:signal_wait_until(k:ptr(a.sync, a.root), lab.CMP_GE, magic + seq)
    k:prof_end(F.SIGNAL_WAIT)
    k:mte_get_nbi(a.output:sub(done, n), a.sym:sub(done, n), ub, a.ub_bytes, n, a.root, 0)
    k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
  end
  k:prof_end(F.FINALIZE)
end

return op.define {
  name = "my_broadcast", collective = "broadcast", dtypes = { "int32", "fp16", "fp32" },
  baseline = "broadcast",     -- measured against ops/hccl/broadcast.lua (its name matches none)
  defaults = { count = 64 * 1024 },
  unused = { [F.REMOTE_PUT_GET] = "the gets are timed inside finalize, as in the performance guide",
             [F.LOCAL_COMPUTE] = "a broadcast computes nothing" },
  describe = function(_, s)
    return { algorithm = "root signals each chunk, the others get it", chunk_elems = s.ub_elems,
             ub_bytes = s.ub_bytes, cores = 1 }
  end,
  payload = function(c) return { elems = c.count, dtype_size = lab.core.dtype_size(c.dtype) } end,
  setup = function(m, c)
    local esize = lab.core.dtype_size(c.dtype)
    local s = { dtype = c.dtype, count = c.count, root = c.root, epoch = 0 }
    s.ub_elems = op.fit(c.ub_bytes, esize)
    s.ub_bytes, s.chunks = s.ub_elems * esize, (c.count + s.ub_elems - 1) // s.ub_elems
    s.input = op.fill_input(m:alloc(c.dtype, c.count, "input"), c.dtype)
    s.sym = m:malloc(c.dtype, c.count, "sym")
    s.sync = m:malloc("int32", 8, "sync", "backed")
    s.output = m:alloc(c.dtype, c.count, "output")
    return s
  end,
  run = function(m, c, s)
    s.epoch = s.epoch + 1
    return { m:launch({ name = "my_broadcast", kernel = kernel }, c.block_dim, s) }
  end,
  check = function(_, _, s) return s.output:compare(s.input:on(s.root)) end,
}
