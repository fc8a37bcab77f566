-- alltoall: PE p's input holds n_pes shards of count elements; shard j goes to
-- PE j's output at slot p. SHMEM style, one block per (peer distance d, slice):
-- on PE me the block puts its slice of shard me + d into PE (me + d)'s
-- symmetric staging slot me (MTE put through UB), waits for the put to land
-- (MTE3_S) and signals that PE (magic + round); then it waits for the signal of
-- PE me - d, which put the same slice of its shard for me, and copies it out
-- of the staging. Distance 0 is a local copy. Spreading the distances over the
-- blocks keeps every link busy at once. Inputs beyond the staging buffer run in
-- rounds inside the one launch (barrier_all before the staging is reused).
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
  local me, n_pes, round = k.pe, k.n_pes, 0
  for base = 0, a.count - 1, a.chunk do
    round = round + 1
    local len = math.min(a.chunk, a.count - base)
    for item = k.block, a.items - 1, k.block_num do
      local d, first, n = item % n_pes, slice(len, item // n_pes, a.slices, a.esize)
      local to, from = (me + d) % n_pes, (me - d) % n_pes
      local sig = a.sig:sub(item, 1)
      if n > 0 and d == 0 then
        k:prof_start(F.FINALIZE)                      -- my own shard stays here
        op.copy_gm(k, a.output:sub(me * a.count + base + first, n),
                   a.input:sub(me * a.count + base + first, n), n, ub)
        k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
        k:prof_end(F.FINALIZE)
      elseif n > 0 then
        k:prof_start(F.REMOTE_PUT_GET)                -- shard `to` -> PE to, slot me
        k:mte_put_nbi(a.stage:sub(me * a.chunk + first, n),
                      a.input:sub(to * a.count + base + first, n), ub, a.ub_bytes, n, to, 0)
        k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
        k:signal_op(sig, a.magic + round, lab.SIGNAL_SET, to)
        k:prof_end(F.REMOTE_PUT_GET)
        k:prof_start(F.SIGNAL_WAIT)                   -- PE from put my slot
        k:signal_wait_until(sig, lab.CMP_GE, a.magic + round)
        k:prof_end(F.SIGNAL_WAIT)
        k:prof_start(F.FINALIZE)
        op.copy_gm(k, a.output:sub(from * a.count + base + first, n),
                   a.stage:sub(from * a.chunk + first, n), n, ub)
        k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
        k:prof_end(F.FINALIZE)
      end
    end
    if base + a.chunk < a.count then                  -- staging is reused
      k:prof_start(F.SIGNAL_WAIT)
      k:barrier_all()
      k:prof_end(F.SIGNAL_WAIT)
    end
  end
end

return op.define {
  name = "alltoall",
  collective = "alltoall",
  dtypes = op.DTYPES,
  defaults = { count = 64 * 1024, block_dim = 16 },
  unused = {
    [F.COPY_IN] = "the MTE puts read the input in place: no staging copy-in",
    [F.LOCAL_COMPUTE] = "no local compute in a pure transport op",
  },

  describe = function(c, s)
    return { algorithm = string.format("one block per (peer distance, slice), %d slices: "
               .. "put to the peer's staging + signal, copy out on arrival", s.slices),
             chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  payload = op.shard_payload,

  setup = function(m, c)
    local s = op.state(c, { magic = 0 })
    op.plan_rounds(c, s, op.fit(c.sym_bytes // c.pes, s.esize))
    s.slices = math.max(1, c.block_dim // c.pes)   -- blocks per peer distance
    s.items = c.pes * s.slices
    op.fit_ub(c, s)
    s.input = op.fill_input(m:alloc(c.dtype, c.count * c.pes, "input"), c.dtype)
    s.output = m:alloc(c.dtype, c.count * c.pes, "output")
    s.stage = m:malloc(c.dtype, s.chunk * c.pes, "stage")
    s.sig = m:malloc("int64", s.items, "signals")   -- [item]: written by PE me - d
    s.expect = op.alltoall_expect(m, c, s.input)
    return s
  end,

  run = function(m, c, s)
    local results = op.launch(m, c, s, "alltoall", kernel)
    s.magic = s.magic + s.rounds          -- the next launch signals above every mark
    return results
  end,

  check = op.check_output,
}
