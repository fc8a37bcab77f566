-- reduce_scatter: PE p ends with the reduction (c.reduce = "sum" | "max" |
-- "min") of slice p of every PE's input (input = n_pes * count elements per
-- PE, output = count). SHMEM style: the (owner, part) pieces are spread over
-- the blocks; each is put to its owner's symmetric accumulation buffer with
-- the MTE atomic unit on (set_atomic add/max/min: the reduction happens on
-- the UB->GM copy) and announced by a SIGNAL_ADD there. Once every piece has
-- arrived the owner copies the accumulator to its output and resets it to
-- the reduction's identity (0, the lowest or the highest value), the state
-- it has whenever no operation is running. Outputs beyond the symmetric
-- budget run in rounds inside the one launch.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local F = lab.frames

local function kernel(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  local items = k.n_pes * a.parts                   -- (owner, part) pairs
  for round = 0, a.rounds - 1 do
    local base = round * a.chunk
    local len = math.min(a.chunk, a.count - base)
    local per = op.split(len, a.parts, a.esize)
    op.atomic_scatter(k, a, ub, function(p, j)                -- part j of p's slice
      return j * per, p * a.count + base + j * per, math.min(per, len - j * per)
    end, function() return a.arrived end)
    k:prof_start(F.SIGNAL_WAIT)
    k:signal_wait_until(a.arrived, lab.CMP_GE, ((a.epoch - 1) * a.rounds + round + 1) * items)
    k:prof_end(F.SIGNAL_WAIT)
    local first, n = op.share(k, len, a.esize)
    k:prof_start(F.FINALIZE)
    if n > 0 then
      op.copy_gm(k, a.output:sub(base + first, n), a.acc:sub(first, n), n, ub)
      k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
      op.copy_gm(k, a.acc:sub(first, n), a.identity:sub(first, n), n, ub)   -- reset
    end
    k:prof_end(F.FINALIZE)
    if round + 1 < a.rounds then
      k:prof_start(F.SIGNAL_WAIT)
      k:barrier_all()                               -- the accumulator is reused
      k:prof_end(F.SIGNAL_WAIT)
    end
  end
end

return op.define {
  name = "reduce_scatter",
  collective = "reduce_scatter",
  dtypes = op.DTYPES,
  defaults = { count = 256 * 1024, block_dim = 16, reduce = "sum" },
  unused = {
    [F.COPY_IN] = "the MTE puts read the input in place: no staging copy-in",
    [F.LOCAL_COMPUTE] = "the reduction is done by the MTE atomic unit on the UB->GM "
                        .. "copies (set_atomic): no vector compute",
  },

  describe = function(c, s)
    return { algorithm = string.format("%s: atomic-%s puts to the owners' symmetric "
                                       .. "accumulators, signal, copy out and reset",
                                       c.reduce, s.atomic),
             chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  payload = op.shard_payload,
  tune = op.tune({ op.KNOB_BLOCK_DIM, op.KNOB_UB_BYTES, op.KNOB_BUFFERS }),

  setup = function(m, c)
    local s = op.state(c, { epoch = 0 })
    s.atomic = op.atomic("reduce_scatter", c.reduce)
    op.plan_rounds(c, s, op.fit(c.sym_bytes, s.esize))
    s.parts = math.max(1, c.block_dim // c.pes)
    op.fit_ub(c, s)
    s.input = op.fill_reduce_input(m:alloc(c.dtype, c.count * c.pes, "input"))
    s.output = m:alloc(c.dtype, c.count, "output")
    local ident = op.identity(c.dtype, c.reduce)
    s.acc = m:malloc(c.dtype, s.chunk, "accumulator"):fill("const", ident)
    s.identity = m:alloc(c.dtype, s.chunk, "identity"):fill("const", ident)
    s.arrived = m:malloc("int32", 8, "arrived", "backed")
    s.expect = op.reduce_scatter_expect(m, c, s.input, s.atomic)
    return s
  end,

  run = function(m, c, s)
    s.epoch = s.epoch + 1
    return op.launch(m, c, s, "reduce_scatter", kernel)
  end,

  check = op.check_output,
}
