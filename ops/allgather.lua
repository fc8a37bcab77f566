-- allgather: every PE ends with the inputs of all PEs, PE p's at p * count.
-- SHMEM style: each block puts its share of the local input into a symmetric
-- staging slot on every PE (MTE put through UB), barrier_all, then copies the
-- staged slots out to the output. Inputs beyond the staging buffer run in
-- rounds inside the one launch.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local F = lab.frames

local function kernel(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  for base = 0, a.count - 1, a.chunk do
    local len = math.min(a.chunk, a.count - base)
    local first, n = op.share(k, len, a.esize)
    k:prof_start(F.REMOTE_PUT_GET)
    for p = 0, k.n_pes - 1 do
      if n > 0 then
        k:mte_put_nbi(a.stage:sub(k.pe * a.chunk + first, n), a.input:sub(base + first, n),
                      ub, a.ub_bytes, n, p, 0)
        k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
      end
    end
    k:prof_end(F.REMOTE_PUT_GET)
    k:prof_start(F.SIGNAL_WAIT)
    k:barrier_all()
    k:prof_end(F.SIGNAL_WAIT)
    k:prof_start(F.FINALIZE)
    for src = 0, k.n_pes - 1 do
      if n > 0 then
        op.copy_gm(k, a.output:sub(src * a.count + base + first, n),
                   a.stage:sub(src * a.chunk + first, n), n, ub)
        k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
      end
    end
    k:prof_end(F.FINALIZE)
    if base + a.chunk < a.count then k:barrier_all() end   -- staging is reused
  end
end

return op.define {
  name = "allgather",
  collective = "allgather",
  dtypes = { "int32", "int8", "int16", "int64", "uint8", "fp16", "bf16", "fp32" },
  defaults = { count = 256 * 1024, block_dim = 16 },
  unused = {
    [F.COPY_IN] = "the MTE puts read the input in place: no staging copy-in",
    [F.LOCAL_COMPUTE] = "no local compute in a pure transport op",
  },

  describe = function(c, s)
    return { algorithm = "put to symmetric staging on every PE, barrier_all, copy out",
             chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  payload = function(c)
    return { n_pes = c.pes, shard_elems = c.count, dtype_size = lab.core.dtype_size(c.dtype) }
  end,

  setup = function(m, c)
    local esize = lab.core.dtype_size(c.dtype)
    local s = { dtype = c.dtype, count = c.count, esize = esize }
    s.chunk = math.min(c.count, op.fit(c.sym_bytes // c.pes, esize))
    s.ub_elems = op.fit(c.ub_bytes, esize)
    s.ub_bytes = s.ub_elems * esize
    s.input = op.fill_input(m:alloc(c.dtype, c.count, "input"), c.dtype)
    s.output = m:alloc(c.dtype, c.count * c.pes, "output")
    s.stage = m:malloc(c.dtype, s.chunk * c.pes, "stage")
    s.expect = m:host(c.dtype, c.count * c.pes, "expect")
    for p = 0, c.pes - 1 do s.expect:sub(p * c.count, c.count):copy(s.input:on(p)) end
    return s
  end,

  run = function(m, c, s)
    return { m:launch({ name = "allgather", kernel = kernel }, c.block_dim, s) }
  end,

  check = function(_, _, s)
    return s.output:compare(s.expect)
  end,
}
