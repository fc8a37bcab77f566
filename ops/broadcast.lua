-- broadcast: every PE ends with the root's input (root from c.root, default 0).
-- The CANN SHMEM performance guide's signal-and-copy shape (its section 3.6), one share of
-- the data per block: the root puts its input into its symmetric buffer chunk
-- by chunk (MTE put through UB), waits for each chunk to land (MTE3_S) and
-- signals it with magic + chunk_seq; every other PE waits for that signal
-- (signal_wait_until CMP_GE) and gets the chunk from the root into its output.
-- The root copies its input to its own output. Inputs beyond the symmetric
-- buffer run in rounds inside the one launch (barrier_all before it is reused).
local lab = require("shmemlab")
local op = require("shmemlab.op")
local F = lab.frames

local function kernel(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  local sync = k:ptr(a.sync, a.root):sub(k.block, 1)    -- this block's signal, on the root
  local chunk_seq = 0
  for base = 0, a.count - 1, a.chunk do
    local first, len = op.share(k, math.min(a.chunk, a.count - base), a.esize)
    if k.pe == a.root then
      k:prof_start(F.COPY_IN)                           -- input -> symmetric buffer
      for done = 0, len - 1, a.ub_elems do
        local n = math.min(len - done, a.ub_elems)
        k:mte_put_nbi(a.sym:sub(first + done, n), a.input:sub(base + first + done, n),
                      ub, a.ub_bytes, n, a.root, 0)
        k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
        chunk_seq = chunk_seq + 1
        k:signal_op(sync, a.magic + chunk_seq, lab.SIGNAL_SET, a.root)
      end
      k:prof_end(F.COPY_IN)
      if len > 0 then
        k:prof_start(F.FINALIZE)                        -- the root's own output
        op.copy_gm(k, a.output:sub(base + first, len), a.input:sub(base + first, len), len, ub)
        k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
        k:prof_end(F.FINALIZE)
      end
    else
      for done = 0, len - 1, a.ub_elems do
        local n = math.min(len - done, a.ub_elems)
        chunk_seq = chunk_seq + 1
        k:prof_start(F.SIGNAL_WAIT)
        k:signal_wait_until(sync, lab.CMP_GE, a.magic + chunk_seq)
        k:prof_end(F.SIGNAL_WAIT)
        k:prof_start(F.REMOTE_PUT_GET)
        k:mte_get_nbi(a.output:sub(base + first + done, n), a.sym:sub(first + done, n),
                      ub, a.ub_bytes, n, a.root, 0)
        k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
        k:prof_end(F.REMOTE_PUT_GET)
      end
    end
    if base + a.chunk < a.count then                    -- the symmetric buffer is reused
      k:prof_start(F.SIGNAL_WAIT)
      k:barrier_all()
      k:prof_end(F.SIGNAL_WAIT)
    end
  end
end

return op.define {
  name = "broadcast",
  collective = "broadcast",
  dtypes = op.DTYPES,
  defaults = { count = 256 * 1024, block_dim = 16, root = 0 },
  unused = {
    [F.LOCAL_COMPUTE] = "no local compute in a pure transport op",
  },

  describe = function(c, s)
    return { algorithm = string.format("root %d stages chunks + signals magic + chunk_seq, "
               .. "the others wait (CMP_GE) and get", c.root),
             chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  payload = op.elems_payload,
  tune = op.tune({ op.KNOB_BLOCK_DIM, op.KNOB_UB_BYTES }),

  setup = function(m, c)
    local s = op.state(c, { root = op.pe_option(c.root or 0, "root", c.pes), magic = 0 })
    op.plan_rounds(c, s, op.fit(c.sym_bytes, s.esize))
    op.fit_ub(c, s)
    s.seqs = s.rounds * ((s.chunk + s.ub_elems - 1) // s.ub_elems)
    s.input = op.fill_input(m:alloc(c.dtype, c.count, "input"), c.dtype)
    s.output = m:alloc(c.dtype, c.count, "output")
    s.sym = m:malloc(c.dtype, s.chunk, "sym")
    s.sync = m:malloc("int64", c.block_dim, "sync", "backed")
    s.expect = m:host(c.dtype, c.count, "expect"):copy(s.input:on(s.root))
    return s
  end,

  run = function(m, c, s)
    local results = op.launch(m, c, s, "broadcast", kernel)
    s.magic = s.magic + s.seqs          -- above every magic + chunk_seq of this launch
    return results
  end,

  check = op.check_output,
}
