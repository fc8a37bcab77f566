-- alltoall: PE p's input holds n_pes shards of count elements; shard j goes to
-- PE j's output at slot p. Pull: PE me reads shard me of every PE's symmetric
-- input straight into its output slot for that PE (remote reads stream faster
-- than remote writes over HCCS: hccs_read_eff above hccs_write_eff), one block
-- per (peer distance d, slice), so every link carries a get at once; each get
-- is double-buffered (two UB halves). A PE first announces that its input is
-- ready with a SIGNAL_SET of the launch's epoch on every PE; a block waits for
-- its source's announcement before it reads. Distance 0 is a local get.
-- Nothing is written remotely: the output is plain GM. An input beyond the
-- symmetric budget goes in rounds through a symmetric staging window (copied
-- in, announced, read, barrier).
local lab = require("shmemlab")
local op = require("shmemlab.op")
local F = lab.frames

-- slice s of S of len elements: first, n (whole 32-byte blocks per slice)
local function slice(len, s, S, esize)
  local per = op.split(len, S, esize)
  local first = math.min(len, s * per)
  return first, math.min(per, len - first)
end

local function kernel(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  local me, n_pes = k.pe, k.n_pes
  for round = 0, a.rounds - 1 do
    local base = round * a.chunk
    local len = math.min(a.chunk, a.count - base)
    local gen = (a.epoch - 1) * a.rounds + round + 1
    op.publish(k, a, a.input, n_pes, base, len, gen, ub)
    for item = k.block, a.items - 1, k.block_num do
      local from = (me + item % n_pes) % n_pes         -- distance item % n_pes
      local first, n = slice(len, item // n_pes, a.slices, a.esize)
      if n > 0 then
        k:prof_start(F.SIGNAL_WAIT)
        k:signal_wait_until(a.ready:sub(from, 1), lab.CMP_GE, gen)
        k:prof_end(F.SIGNAL_WAIT)
        k:prof_start(F.REMOTE_PUT_GET)                 -- shard me of PE from -> slot from
        op.get_pipelined(k, a.output:sub(from * a.count + base + first, n),
                         a.stage:sub(me * a.stride + first, n), ub, n, from, a.buffers)
        k:prof_end(F.REMOTE_PUT_GET)
      end
    end
    if round + 1 < a.rounds then k:barrier_all() end  -- the staging is reused
  end
end

return op.define {
  name = "alltoall",
  collective = "alltoall",
  dtypes = op.DTYPES,
  defaults = { count = 64 * 1024, block_dim = 16 },
  unused = {
    [F.COPY_IN] = "the MTE gets read the peers' inputs in place (they fit the symmetric "
      .. "budget): no staging copy-in",
    [F.LOCAL_COMPUTE] = "no local compute in a pure transport op",
    [F.FINALIZE] = "the gets write the output in place: no copy-out",
  },

  describe = function(c, s)
    return { algorithm = string.format("one block per (peer distance, slice), %d slices: "
               .. "%ssignal ready, get from the peer's symmetric %s (pull)", s.slices,
               s.staged and "stage, " or "", s.staged and "staging" or "input"),
             chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  payload = op.shard_payload,
  tune = op.tune({ op.KNOB_BLOCK_DIM, op.KNOB_UB_BYTES, op.KNOB_BUFFERS }),

  setup = function(m, c)
    local s = op.state(c, { epoch = 0 })
    s.slices = math.max(1, c.block_dim // c.pes)   -- blocks per peer distance
    s.items = c.pes * s.slices
    op.fit_ub(c, s)
    local fits = c.pes * c.count * s.esize <= c.sym_bytes
    s.input = op.fill_input(fits and m:malloc(c.dtype, c.count * c.pes, "input")
                            or m:alloc(c.dtype, c.count * c.pes, "input"), c.dtype)
    op.plan_pull(m, c, s, c.pes, s.input)
    s.output = m:alloc(c.dtype, c.count * c.pes, "output")
    s.expect = op.alltoall_expect(m, c, s.input)
    return s
  end,

  run = function(m, c, s)
    s.epoch = s.epoch + 1
    return op.launch(m, c, s, "alltoall", kernel)
  end,

  check = op.check_output,
}
