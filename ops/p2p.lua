-- p2p: count elements of PE src's input land in PE dst's output (c.src_pe,
-- default 0; c.dst_pe, default 1); the other PEs launch and idle. Each block
-- moves its share through a symmetric staging buffer, and the two PEs hand
-- it over with signals written into the waiter's own memory:
--   put (c.mode = "put", default): src puts into dst's staging (MTE put
--     through UB), waits for it to land (MTE3_S) and signals dst; dst waits
--     and copies the staging out to its output.
--   get (c.mode = "get"): src puts into its own staging and signals dst; dst
--     waits and gets from src's staging straight into its output.
-- Inputs beyond the staging buffer run in rounds inside the one launch: dst
-- acknowledges each round but the last, and src waits for it before reusing
-- the staging. Signals flow even for a block with no share in a round, so
-- the rounds pair up whatever the shares.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local F = lab.frames

local function kernel(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  if k.pe ~= a.src and k.pe ~= a.dst then return end    -- the other PEs idle
  local ready, ack = a.sig:sub(k.block, 1), a.sig:sub(k.block_num + k.block, 1)
  local round = 0
  for base = 0, a.count - 1, a.chunk do
    round = round + 1
    local mark, last = a.magic + round, base + a.chunk >= a.count
    local first, n = op.share(k, math.min(a.chunk, a.count - base), a.esize)
    local stage, input, output = a.stage:sub(first, n), a.input:sub(base + first, n),
                                 a.output:sub(base + first, n)
    if k.pe == a.src then
      if round > 1 then
        k:prof_start(F.SIGNAL_WAIT)                     -- dst is done with the staging
        k:signal_wait_until(ack, lab.CMP_GE, mark - 1)
        k:prof_end(F.SIGNAL_WAIT)
      end
      local frame = a.get and F.COPY_IN or F.REMOTE_PUT_GET
      k:prof_start(frame)                               -- get: my staging; put: dst's
      if n > 0 then
        k:mte_put_nbi(stage, input, ub, a.ub_bytes, n, a.get and a.src or a.dst, 0)
      end
      k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
      k:signal_op(ready, mark, lab.SIGNAL_SET, a.dst)
      k:prof_end(frame)
    end
    if k.pe == a.dst then
      k:prof_start(F.SIGNAL_WAIT)
      k:signal_wait_until(ready, lab.CMP_GE, mark)
      k:prof_end(F.SIGNAL_WAIT)
      local frame = a.get and F.REMOTE_PUT_GET or F.FINALIZE
      k:prof_start(frame)                               -- get: from src; put: copy out
      if n > 0 and a.get then
        k:mte_get_nbi(output, stage, ub, a.ub_bytes, n, a.src, 0)
      elseif n > 0 then
        op.copy_gm(k, output, stage, n, ub)
      end
      k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
      if not last then k:signal_op(ack, mark, lab.SIGNAL_SET, a.src) end
      k:prof_end(frame)
    end
  end
end

return op.define {
  name = "p2p",
  collective = "p2p",
  dtypes = op.DTYPES,
  defaults = { count = 256 * 1024, block_dim = 16, src_pe = 0, dst_pe = 1, mode = "put" },
  unused = {
    [F.COPY_IN] = "put mode: the put reads the input in place (get mode stages it: copy_in)",
    [F.LOCAL_COMPUTE] = "no local compute in a pure transport op",
    [F.FINALIZE] = "get mode: the get lands in the output (put mode copies the staging out)",
  },

  describe = function(c, s)
    return { algorithm = string.format("%s from PE %d to PE %d through symmetric staging, "
               .. "signal per block and round", c.mode, s.src, s.dst),
             chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  active_pes = op.src_dst_pes,
  payload = op.elems_payload,
  tune = op.tune({ op.KNOB_BLOCK_DIM, op.KNOB_UB_BYTES,
    { name = "mode", values = { "put", "get" }, doc = "put: src writes dst's staging; get: dst "
      .. "reads src's staging (--mode)" } }),

  setup = function(m, c)
    local src, dst = op.p2p_pes(c)
    local s = op.state(c, { magic = 0, src = src, dst = dst, get = c.mode == "get" })
    if c.mode ~= "put" and c.mode ~= "get" then
      error("p2p mode must be 'put' or 'get', got '" .. tostring(c.mode) .. "'", 0)
    end
    op.plan_rounds(c, s, op.fit(c.sym_bytes, s.esize))
    op.fit_ub(c, s)
    s.input = op.fill_input(m:alloc(c.dtype, c.count, "input"), c.dtype)
    s.output = m:alloc(c.dtype, c.count, "output")
    s.stage = m:malloc(c.dtype, s.chunk, "stage")
    -- [block] ready, [block_num + block] ack
    s.sig = m:malloc("int64", 2 * c.block_dim, "signals", "backed")
    s.expect = m:host(c.dtype, c.count, "expect"):copy(s.input:on(s.src))
    return s
  end,

  run = function(m, c, s)
    local results = op.launch(m, c, s, "p2p", kernel)
    s.magic = s.magic + s.rounds          -- the next launch signals above every mark
    return results
  end,

  check = op.check_dst_output,
}
