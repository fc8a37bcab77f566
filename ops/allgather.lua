-- allgather: every PE ends with the inputs of all PEs, PE p's at p * count.
-- Pull (remote reads stream faster than remote writes over HCCS on A2 and A3:
-- hccs_read_eff above hccs_write_eff); nothing is written remotely. A PE first
-- announces with a SIGNAL_SET that its shard is readable; a block waits for its
-- source's announcement before it reads. The design follows the topology:
--   one step (every SoC with one die per card, A2): each PE reads every PE's shard
--   from that PE's symmetric input. The (source PE, slice) pairs are spread over the
--   blocks, sources rotated by the PE so that no PE's links serve every reader at
--   once; each get is double-buffered (two UB halves). An input beyond the symmetric
--   budget goes in rounds through a symmetric staging window (copied in, announced,
--   read, barrier).
--   card relay (two dies per card, A3: at least three whole cards, and at least 1.25
--   MiB of outside shards per port, shmemlab.relay.applies): each outside shard
--   enters the card once. Die d's first half of blocks pulls, over d's own
--   switch port, the shards of the outside dies of its parity (d % 2), in pieces, and
--   tells the card-mate that each piece has landed; the mate's second half pulls those
--   pieces over SIO from d's (symmetric) output, with a share of the mate's and of its
--   own shard. So each port carries half the card's outside shards and the SIO
--   forward runs under the port traffic. The output is symmetric; the input too when
--   both fit the budget, else each PE first copies its input into its own output slot
--   and publishes it there. An output beyond the budget: the card ring, the same two
--   halves with the forwarded pieces through RING_SLOTS symmetric slots a port block
--   (shmemlab.relay: the port block waits until the mate has freed a slot, lands the next
--   piece there and in its output from the same UB chunks, announces it; the mate gets it
--   over SIO and frees the slot), the input symmetric, the output local. Fewer cards,
--   less data, or neither form within the budget: one step.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local relay = require("shmemlab.relay")
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
                         a.stage:sub(first, n), ub, n, p, a.buffers)
        k:prof_end(F.REMOTE_PUT_GET)
      end
    end
    if round + 1 < a.rounds then k:barrier_all() end  -- the staging is reused
  end
end

-- card relay: where PE q publishes elements [off, off + n) of its shard
local function source(a, q, off, n)
  if a.input_sym then return a.input:sub(off, n) end
  return a.output:sub(q * a.count + off, n)
end

-- card relay, port half: block k.block's pieces of the outside shards of my parity
-- over my port, each announced to the mate (fwd[block] there) once it has landed;
-- one frame, its waits inside (a frame drains the pipes of the profiled PE: the
-- pieces' gets would no longer run back to back)
local function port_side(k, a, ub, half)
  local src = relay.outside(k, k.pe % 2)
  local list = relay.pieces(a, #src, k.block, half)
  k:prof_start(F.REMOTE_PUT_GET)
  for i, piece in ipairs(list) do
    relay.parts(a.count, src, piece, function(q, off, len)
      k:signal_wait_until(a.ready:sub(q, 1), lab.CMP_GE, a.epoch)
      op.get_pipelined(k, a.output:sub(q * a.count + off, len), source(a, q, off, len), ub, len, q,
                       a.bufs)
    end)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)               -- the piece has landed
    k:signal_op(a.fwd:sub(k.block, 1), (a.epoch - 1) * #list + i, lab.SIGNAL_SET, k.pe ~ 1)
  end
  k:prof_end(F.REMOTE_PUT_GET)
end

-- card relay, SIO half, first: a share of my own shard (unless it is in place already)
-- and of the mate's
local function sio_shares(k, a, ub, half)
  local mate, b = k.pe ~ 1, k.block - half
  local per = op.split(a.count, half, a.esize)
  local first = b * per
  local n = math.max(0, math.min(per, a.count - first))
  if n > 0 and a.input_sym then
    k:prof_start(F.COPY_IN)
    op.get_pipelined(k, a.output:sub(k.pe * a.count + first, n), a.input:sub(first, n), ub, n, k.pe,
                     a.bufs)
    k:prof_end(F.COPY_IN)
  end
  k:prof_start(F.SIGNAL_WAIT)
  k:signal_wait_until(a.ready:sub(mate, 1), lab.CMP_GE, a.epoch)
  k:prof_end(F.SIGNAL_WAIT)
  k:prof_start(F.REMOTE_PUT_GET)
  if n > 0 then
    op.get_pipelined(k, a.output:sub(mate * a.count + first, n), source(a, mate, first, n), ub, n,
                     mate, a.bufs)
  end
  k:prof_end(F.REMOTE_PUT_GET)
end

-- card relay, SIO half: the shares (sio_shares), then the pieces of the mate's port
-- block of the same rank, each as soon as the mate has announced it
local function sio_side(k, a, ub, half)
  local mate, b = k.pe ~ 1, k.block - half
  sio_shares(k, a, ub, half)
  local src = relay.outside(k, mate % 2)
  local list = relay.pieces(a, #src, b, half)
  for i, piece in ipairs(list) do
    k:prof_start(F.SIGNAL_WAIT)
    k:signal_wait_until(a.fwd:sub(b, 1), lab.CMP_GE, (a.epoch - 1) * #list + i)
    k:prof_end(F.SIGNAL_WAIT)
    k:prof_start(F.REMOTE_PUT_GET)
    relay.parts(a.count, src, piece, function(q, off, len)
      local at = q * a.count + off
      op.get_pipelined(k, a.output:sub(at, len), a.output:sub(at, len), ub, len, mate, a.bufs)
    end)
    k:prof_end(F.REMOTE_PUT_GET)
  end
end

-- card relay: publish my shard (copied into my output slot first when the input is
-- not symmetric), then half the blocks on the port, half on SIO
local function kernel_card(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  local own = a.output:sub(k.pe * a.count, a.count)
  op.publish(k, { staged = not a.input_sym, stage = own, chunk = a.count, count = a.count,
                  esize = a.esize, ready = a.ready, buffers = a.bufs }, a.input, 1, 0, a.count,
             a.epoch, ub)
  local half = k.block_num // 2
  if k.block < half then port_side(k, a, ub, half) else sio_side(k, a, ub, half) end
end

-- card ring: slot w of port block b (RING_SLOTS slots of a.slot_elems a block)
local function slot(a, b, w)
  return a.slots:sub((b * relay.RING_SLOTS + w) * a.slot_elems, a.slot_elems)
end

-- card ring, port half: as port_side, but each piece lands in the block's next ring slot
-- (once the mate has freed it) and in my output from the same UB chunks (relay.get_tee)
local function port_ring(k, a, ub, half)
  local src = relay.outside(k, k.pe % 2)
  local list = relay.pieces(a, #src, k.block, half, a.slot_elems)
  local fwd, free = a.fwd:sub(k.block, 1), a.free:sub(k.block, 1)
  k:prof_start(F.REMOTE_PUT_GET)                       -- one frame, as port_side's
  for i, piece in ipairs(list) do
    local into = slot(a, k.block, (i - 1) % relay.RING_SLOTS)
    k:signal_wait_until(free, lab.CMP_GE, relay.ring_gen(a.epoch, #list, i, relay.RING_SLOTS))
    relay.parts(a.count, src, piece, function(q, off, len, at)
      k:signal_wait_until(a.ready:sub(q, 1), lab.CMP_GE, a.epoch)
      relay.get_tee(k, into:sub(at - piece[1], len), a.output:sub(q * a.count + off, len),
                    a.input:sub(off, len), ub, len, q, a.bufs)
    end)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)               -- the piece has landed
    k:signal_op(fwd, relay.ring_gen(a.epoch, #list, i), lab.SIGNAL_SET, k.pe ~ 1)
  end
  k:prof_end(F.REMOTE_PUT_GET)
end

-- card ring, SIO half: the shares, then each piece of the mate's port block of the same
-- rank from the mate's ring slot once announced, the slot freed once my copy has landed
local function sio_ring(k, a, ub, half)
  local mate, b = k.pe ~ 1, k.block - half
  sio_shares(k, a, ub, half)
  local src = relay.outside(k, mate % 2)
  local list = relay.pieces(a, #src, b, half, a.slot_elems)
  for i, piece in ipairs(list) do
    local from = slot(a, b, (i - 1) % relay.RING_SLOTS)
    k:prof_start(F.SIGNAL_WAIT)
    k:signal_wait_until(a.fwd:sub(b, 1), lab.CMP_GE, relay.ring_gen(a.epoch, #list, i))
    k:prof_end(F.SIGNAL_WAIT)
    k:prof_start(F.REMOTE_PUT_GET)
    relay.parts(a.count, src, piece, function(q, off, len, at)
      op.get_pipelined(k, a.output:sub(q * a.count + off, len), from:sub(at - piece[1], len), ub,
                       len, mate, a.bufs)
    end)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)               -- my copy has landed
    k:signal_op(a.free:sub(b, 1), relay.ring_gen(a.epoch, #list, i), lab.SIGNAL_SET, mate)
    k:prof_end(F.REMOTE_PUT_GET)
  end
end

-- card ring: as kernel_card with a symmetric input, the forward through the ring
local function kernel_ring(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  op.publish(k, a, a.input, 1, 0, a.count, a.epoch, ub)
  local half = k.block_num // 2
  if k.block < half then port_ring(k, a, ub, half) else sio_ring(k, a, ub, half) end
end

-- server relay: a symmetric input and window, the output local
local function setup_server(m, c, s)
  op.fit_ub(c, s)
  relay.gather_buffers(m, c, s, c.count)
  s.input = op.fill_input(m:malloc(c.dtype, c.count, "input"), c.dtype)
  s.output = m:alloc(c.dtype, c.count * c.pes, "output")
  s.expect = op.allgather_expect(m, c, s.input)
  return s
end

-- card relay: a symmetric output, the input symmetric too when both fit the budget
local function setup_card(m, c, s)
  s.relay, s.chunk, s.rounds = true, c.count, 1
  s.bufs = c.buffers or relay.CARD_BUFFERS
  s.input_sym = (c.pes + 1) * c.count * s.esize <= c.sym_bytes
  op.fit_ub(c, s)
  s.input = op.fill_input(s.input_sym and m:malloc(c.dtype, c.count, "input")
                          or m:alloc(c.dtype, c.count, "input"), c.dtype)
  s.output = m:malloc(c.dtype, c.count * c.pes, "output")
  s.ready = m:malloc("int32", c.pes, "ready", "backed")          -- [p]: PE p's shard is readable
  s.fwd = m:malloc("int32", c.block_dim, "fwd", "backed")         -- [b]: pieces of the mate's block b
  s.expect = op.allgather_expect(m, c, s.input)
  return s
end

-- card ring: a symmetric input, the ring slots and the flow-control signals
local function setup_ring(m, c, s)
  s.relay, s.ring, s.input_sym, s.chunk, s.rounds = true, true, true, c.count, 1
  s.bufs = c.buffers or relay.CARD_BUFFERS
  s.slot_elems = relay.ring_slot_elems(c.count, c.pes // 2 - 1, c.block_dim // 2, s.esize)
  op.fit_ub(c, s)
  s.input = op.fill_input(m:malloc(c.dtype, c.count, "input"), c.dtype)
  s.output = m:alloc(c.dtype, c.count * c.pes, "output")
  s.slots = m:malloc(c.dtype, c.block_dim // 2 * relay.RING_SLOTS * s.slot_elems, "ring")
  s.ready = m:malloc("int32", c.pes, "ready", "backed")          -- [p]: PE p's shard is readable
  s.fwd = m:malloc("int32", c.block_dim, "fwd", "backed")         -- [b]: pieces in b's slots
  s.free = m:malloc("int32", c.block_dim, "free", "backed")       -- [b]: pieces the mate has read
  s.expect = op.allgather_expect(m, c, s.input)
  return s
end

-- the symmetric elements of the card relay's two forms: the whole output (and the
-- input), or the card ring's input and slots
local function card_elems(c, esize)
  local half = c.block_dim // 2
  return c.pes * c.count,
    c.count + half * relay.RING_SLOTS * relay.ring_slot_elems(c.count, c.pes // 2 - 1, half, esize)
end

-- the card relay form that fits c: "card" (the output symmetric), "ring" or nil
local function card_form(c, esize)
  local full, ring = card_elems(c, esize)
  if relay.card_fits(c, full, esize) then return "card", full end
  if relay.card_fits(c, ring, esize) then return "ring", ring end
  return nil
end

-- can a relay run c (--algo hier): the card relay (either form), or the server relay
local function relay_fits(c, esize)
  return card_form(c, esize) ~= nil
    or relay.server_fits(c, c.pes // relay.domains(c) * c.count, esize)
end

-- the design c runs: "card" (the card relay), "ring" (the card ring), "server" (the
-- server relay) or nil (one step), as --algo asks (c.algo) or, by default, where the
-- relay pays
local function design(c, esize)
  local form, elems = card_form(c, esize)
  local card = form ~= nil
  local server = relay.server_fits(c, c.pes // relay.domains(c) * c.count, esize)
  local mode = relay.mode(c, "allgather", card or server)
  if relay.take(mode, card, card and relay.applies(c, elems, esize)) then return form end
  local outside = (c.pes // relay.domains(c) - 1) * c.count * esize     -- over my NIC
  if relay.take(mode, server, relay.server_worth("allgather", outside)) then return "server" end
  return nil
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
    if s.server then
      return { algorithm = string.format("server relay: signal ready, get the outside shards of "
                 .. "my local index by the RoCE engine into a window (%d block%s), every PE of the "
                 .. "server gets them from there (pull)", s.nic, s.nic == 1 and "" or "s"),
               chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
    end
    if s.ring then
      return { algorithm = string.format("card ring: signal ready, get half the outside shards "
                 .. "over the die's port into a ring of %d symmetric slots a block and the output, "
                 .. "the card-mate gets them from the slots over SIO and frees each (pull)",
                 relay.RING_SLOTS),
               chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
    end
    if s.relay then
      return { algorithm = "card relay: " .. (s.input_sym and "" or "copy into the own output slot, ")
                 .. "signal ready, get half the outside shards over the die's port, the other "
                 .. "half from the card-mate over SIO (pull)",
               chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
    end
    return { algorithm = s.staged and "stage, signal ready, get slices of every PE's staging (pull)"
                         or "signal ready, get slices of every PE's symmetric input (pull)",
             chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  payload = op.shard_payload,

  -- shards of --count elements a PE holds (runner.memory_need): input, output,
  -- reference, and the server relay's window of the other servers' shards
  shards = function(c)
    local window = design(c, lab.core.dtype_size(c.dtype)) == "server"
    return c.pes + 2 + (window and c.pes // relay.domains(c) - 1 or 0)
  end,

  tune = op.tune({ op.KNOB_BLOCK_DIM, op.KNOB_UB_BYTES, op.KNOB_BUFFERS,
    { name = "algo", values = { "flat", "hier" },
      default = function(c) return design(c, lab.core.dtype_size(c.dtype)) and "hier" or "flat" end,
      doc = "flat: every PE reads every shard; hier: each outside shard crosses the card or "
        .. "server cut once (the card or server relay)" } }, {
    { why = "algo flat or hier; hier needs several whole servers or cards of two dies, blocks "
        .. "enough and the relay's buffers within --sym-bytes (shmemlab.relay)",
      ok = function(c)
        return c.algo == nil or c.algo == "flat"
          or (c.algo == "hier" and relay_fits(c, lab.core.dtype_size(c.dtype)))
      end } }),

  setup = function(m, c)
    local s = op.state(c, { epoch = 0 })
    local d = design(c, s.esize)
    if d == "card" then return setup_card(m, c, s) end
    if d == "ring" then return setup_ring(m, c, s) end
    if d == "server" then return setup_server(m, c, s) end
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
    return op.launch(m, c, s, "allgather",
                     s.ring and kernel_ring or s.relay and kernel_card
                       or s.server and relay.gather_server or kernel)
  end,

  check = op.check_output,
}
