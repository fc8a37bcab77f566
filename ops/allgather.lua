-- allgather: every PE ends with the inputs of all PEs, PE p's at p * count.
-- Pull: each PE reads every PE's shard from that PE's symmetric input
-- (remote reads stream faster than remote writes over HCCS on A2 and A3:
-- hccs_read_eff above hccs_write_eff). The (source PE, slice) pairs are spread
-- over the blocks, sources rotated by the PE so that no PE's links serve every
-- reader at once; each get is double-buffered (two UB halves). A PE first
-- announces with a SIGNAL_SET that its input is readable; a block waits for
-- its source's announcement before it reads. Nothing is written remotely: the
-- output is plain GM. An input beyond the symmetric budget goes in rounds
-- through a symmetric staging window (copied in, announced, read, barrier).
local lab = require("shmemlab")
local op = require("shmemlab.op")
local F = lab.frames

local function kernel(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  local items = k.n_pes * a.slices                 -- (source, slice) pairs
  for round = 0, a.rounds - 1 do
    local base = round * a.chunk
    local len = math.min(a.chunk, a.count - base)
    local gen = (a.epoch - 1) * a.rounds + round + 1
    local per = op.split(len, a.slices, a.esize)
    op.publish(k, a, a.input, 1, base, len, gen, ub)
    for item = k.block, items - 1, k.block_num do
      local p, j = op.item(k, item)
      local first = j * per
      local n = math.min(per, len - first)
      if n > 0 then
        k:prof_start(F.SIGNAL_WAIT)
        k:signal_wait_until(a.ready:sub(p, 1), lab.CMP_GE, gen)
        k:prof_end(F.SIGNAL_WAIT)
        k:prof_start(F.REMOTE_PUT_GET)
        op.get_pipelined(k, a.output:sub(p * a.count + base + first, n),
                         a.stage:sub(first, n), ub, n, p)
        k:prof_end(F.REMOTE_PUT_GET)
      end
    end
    if round + 1 < a.rounds then k:barrier_all() end  -- the staging is reused
  end
end

return op.define {
  name = "allgather",
  collective = "allgather",
  dtypes = op.DTYPES,
  defaults = { count = 256 * 1024, block_dim = 16 },
  unused = {
    [F.COPY_IN] = "the MTE gets read the peers' inputs in place (they fit the symmetric "
      .. "budget): no staging copy-in",
    [F.LOCAL_COMPUTE] = "no local compute in a pure transport op",
    [F.FINALIZE] = "the gets write the output in place: no copy-out",
  },

  describe = function(c, s)
    return { algorithm = s.staged and "stage, signal ready, get slices of every PE's staging (pull)"
                         or "signal ready, get slices of every PE's symmetric input (pull)",
             chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  payload = op.shard_payload,

  setup = function(m, c)
    local s = op.state(c, { epoch = 0 })
    s.slices = math.max(1, c.block_dim // c.pes)
    op.fit_ub(c, s)
    local fits = c.count * s.esize <= c.sym_bytes
    s.input = op.fill_input(fits and m:malloc(c.dtype, c.count, "input")
                            or m:alloc(c.dtype, c.count, "input"), c.dtype)
    op.plan_pull(m, c, s, 1, s.input)
    s.output = m:alloc(c.dtype, c.count * c.pes, "output")
    s.expect = op.allgather_expect(m, c, s.input)
    return s
  end,

  run = function(m, c, s)
    s.epoch = s.epoch + 1
    return op.launch(m, c, s, "allgather", kernel)
  end,

  check = op.check_output,
}
