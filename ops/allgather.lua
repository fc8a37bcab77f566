-- allgather: every PE ends with the inputs of all PEs, PE p's at p * count.
-- SHMEM style: the (destination PE, slice) pairs are spread over the blocks,
-- so every link carries a put at once; each put is double-buffered (two UB
-- halves, so reading a chunk overlaps writing the one before) and lands in a symmetric buffer
-- of the destination and is announced by a SIGNAL_ADD there once its last
-- MTE3 is done. A PE waits until every slice of every PE has arrived.
-- When the gathered array fits the symmetric budget it is the output itself;
-- otherwise the op runs in rounds through a staging buffer and copies out.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local F = lab.frames

local function kernel(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  local items = k.n_pes * a.slices                 -- (destination, slice) pairs
  for round = 0, a.rounds - 1 do
    local base = round * a.chunk
    local len = math.min(a.chunk, a.count - base)
    local per = op.split(len, a.slices, a.esize)
    k:prof_start(F.REMOTE_PUT_GET)
    for item = k.block, items - 1, k.block_num do
      local p, j = op.item(k, item)
      local first = j * per
      local n = math.min(per, len - first)
      if n > 0 then
        op.put_pipelined(k, a.stage:sub(k.pe * a.chunk + first, n),
                         a.input:sub(base + first, n), ub, n, p)
        k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)     -- the slice has landed
      end
      k:signal_op(a.arrived, 1, lab.SIGNAL_ADD, p)
    end
    k:prof_end(F.REMOTE_PUT_GET)
    k:prof_start(F.SIGNAL_WAIT)
    k:signal_wait_until(a.arrived, lab.CMP_GE, ((a.epoch - 1) * a.rounds + round + 1) * items)
    k:prof_end(F.SIGNAL_WAIT)
    if a.staged then
      local first, n = op.share(k, len, a.esize)
      k:prof_start(F.FINALIZE)
      for src = 0, k.n_pes - 1 do
        if n > 0 then
          op.copy_gm(k, a.output:sub(src * a.count + base + first, n),
                     a.stage:sub(src * a.chunk + first, n), n, ub)
          k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
        end
      end
      k:prof_end(F.FINALIZE)
      k:barrier_all()                                -- the staging is reused
    end
  end
end

return op.define {
  name = "allgather",
  collective = "allgather",
  dtypes = op.DTYPES,
  defaults = { count = 256 * 1024, block_dim = 16 },
  unused = {
    [F.COPY_IN] = "the MTE puts read the input in place: no staging copy-in",
    [F.LOCAL_COMPUTE] = "no local compute in a pure transport op",
    [F.FINALIZE] = "the puts write the output in place (it fits the symmetric budget)",
  },

  describe = function(c, s)
    return { algorithm = s.staged and "put slices to every PE's staging, signal, copy out"
                         or "put slices to every PE's symmetric output, signal",
             chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  payload = op.shard_payload,

  setup = function(m, c)
    local s = op.state(c, { epoch = 0 })
    op.plan_rounds(c, s, op.fit(c.sym_bytes // c.pes, s.esize))
    s.staged = s.rounds > 1
    s.slices = math.max(1, c.block_dim // c.pes)
    op.fit_ub(c, s)
    s.input = op.fill_input(m:alloc(c.dtype, c.count, "input"), c.dtype)
    s.stage = m:malloc(c.dtype, s.chunk * c.pes, s.staged and "stage" or "output")
    s.output = s.staged and m:alloc(c.dtype, c.count * c.pes, "output") or s.stage
    s.arrived = m:malloc("int32", 8, "arrived")
    s.expect = op.allgather_expect(m, c, s.input)
    return s
  end,

  run = function(m, c, s)
    s.epoch = s.epoch + 1
    return op.launch(m, c, s, "allgather", kernel)
  end,

  check = op.check_output,
}
