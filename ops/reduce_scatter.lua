-- reduce_scatter: PE p ends with the reduction (c.reduce = "sum" | "max" |
-- "min") of slice p of every PE's input (input = n_pes * count elements per
-- PE, output = count). The design follows the topology:
--   one step (one server, or little data): the (owner, part) pieces are spread over
--   the blocks; each is put to its owner's symmetric accumulation buffer with the MTE
--   atomic unit on (set_atomic add/max/min: the reduction happens on the UB->GM copy)
--   and announced by a SIGNAL_ADD there. Once every piece has arrived the owner copies
--   the accumulator to its output and resets it to the reduction's identity (0, the
--   lowest or the highest value), the state it has whenever no operation is running.
--   Outputs beyond the symmetric budget run in rounds inside the one launch.
--   card relay (two dies per card, A3: shmemlab.relay.applies, block_dim a multiple of
--   4): each outside slice leaves the card once, reduced on the card first. A quarter
--   of die d's blocks copy d's partials of its outside owners (those of d's parity)
--   into d's symmetric card buffer as bases and announce each to the mate; a quarter
--   put d's partial of the mate's own slice into the mate's landing buffer, then add
--   (atomic put over SIO) d's partials of the mate's outside owners onto the mate's
--   bases and tell each owner its card sum is complete; half sum d's own slice in d's
--   output: d's partial, the mate's from the landing buffer, then the card sums of the
--   outside dies of d's parity pulled over d's port with atomic gets, chained through
--   the UB buffers (shmemlab.relay.get_chain). Small slices with at least three owners
--   a block: the copy and SIO quarters take whole slices, owners dealt out to the blocks
--   (by owner), instead of their part of every slice. A card buffer beyond the budget:
--   the card ring, RING_SLOTS slices in it, the slot of an owner refilled once both port
--   blocks of each of its earlier owners have read their parts (a free count per slot
--   and copy block).
--   server relay (several servers, one die per card, A2: shmemlab.relay.server_fits):
--   each outside slice leaves the server once, reduced in the server first. PE (S, i)
--   keeps in its symmetric server buffer the sums of the slices of the outside PEs of
--   local index i: one block copies its own partials there as bases (and its partial
--   of its own slice into its output), the others pull the other server PEs' partials
--   onto them with atomic gets over the in-server links (or, when the inputs do not fit
--   the symmetric budget, the other server PEs push them with atomic puts), piece by
--   piece, each piece announced to its owner; the owner's NIC blocks fetch the finished
--   server sums by RoCE engine gets into a stage and add them onto its output with an
--   MTE atomic copy, then its server's partials of its own slice are added there too.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local relay = require("shmemlab.relay")
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

-- card relay: parts b * w .. b * w + w - 1 of half parts of count elements,
-- [first, first + n) (w = 1 for a port block, 2 for a copy or SIO block)
local function part(a, half, b, w)
  local per = op.split(a.count, half, a.esize) * (w or 1)
  return b * per, math.max(0, math.min(per, a.count - b * per))
end

-- card relay: where the card sums of my outside owner i (1-based, relay.outside's order)
-- lie in the card buffer: slot i, or in the card ring slot (i - 1) % RING_SLOTS
local function card_at(a, i)
  if a.ring then return (i - 1) % relay.RING_SLOTS * a.count end
  return (i - 1) * a.count
end

-- card ring: before copy block c refills the slot of owner i (of n), wait until both
-- port blocks of each earlier owner of that slot have read their parts of it (free
-- counts their SIGNAL_ADDs, per slot and copy block)
local function wait_slot(k, a, c, quarter, i, n)
  local w, depth = (i - 1) % relay.RING_SLOTS, relay.RING_SLOTS
  local uses = w < n and (n - 1 - w) // depth + 1 or 0        -- owners of slot w an epoch
  local need = 2 * ((a.epoch - 1) * uses + (i - 1) // depth)
  k:signal_wait_until(a.free:sub(w * quarter + c, 1), lab.CMP_GE, need)
end

-- card relay: the work of copy or SIO block c (of quarter) on the n outside owners of a
-- die: {i, first, len, seq} each (owner i's slice elements [first, first + len), the
-- block's seq-th item). By part (a.by_owner false): part c of every owner's slice. By
-- owner (small slices, where an item's fixed cost outweighs its bytes): whole slices of
-- the owners c + 1, c + 1 + quarter, ...
local function items(a, c, quarter, n)
  local list = {}
  if a.by_owner then
    for i = c + 1, n, quarter do list[#list + 1] = { i, 0, a.count, #list + 1 } end
    return list
  end
  local first, len = part(a, 2 * quarter, c, 2)
  for i = 1, n do list[#list + 1] = { i, first, len, i } end
  return list
end

-- card relay: the port parts whose ready signal an item of block c completes (by owner:
-- the one signal of the card, index 0, every port block waits on)
local function ready_parts(a, c)
  if a.by_owner then return 0, 0 end
  return 2 * c, 2 * c + 1
end

-- card relay, copy quarter (block c): my partials of my items of my outside owners'
-- slices, one after the other, copied into my card buffer as the bases the mate adds
-- onto, each announced to the mate; it waits for nothing, so it runs ahead
local function copy_side(k, a, ub, c, quarter)
  local mine = relay.outside(k, k.pe % 2)
  local list = items(a, c, quarter, #mine)
  k:prof_start(F.COPY_IN)
  for _, it in ipairs(list) do
    local i, first, n = it[1], it[2], it[3]
    if a.ring then wait_slot(k, a, c, quarter, i, #mine) end
    if n > 0 then
      op.put_pipelined(k, a.card:sub(card_at(a, i) + first, n),
                       a.input:sub(mine[i] * a.count + first, n), ub, n, k.pe, a.bufs)
      k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
    end
    k:signal_op(a.base:sub(c, 1), (a.epoch - 1) * #list + it[4], lab.SIGNAL_SET, k.pe ~ 1)
  end
  k:prof_end(F.COPY_IN)
end

-- card relay, SIO quarter (block c): first my partial of part c of the mate's own slice
-- into its landing buffer; then for each of my items of the mate's outside owners in
-- turn, once the mate's base is in place, my partial added onto it over SIO (atomic) and
-- announced to the owner (its port parts of the item)
local function sio_side(k, a, ub, c, quarter)
  local mate, half = k.pe ~ 1, 2 * quarter
  local first, n = part(a, half, c, 2)
  local theirs = relay.outside(k, mate % 2)
  local list = items(a, c, quarter, #theirs)
  k:prof_start(F.REMOTE_PUT_GET)
  if n > 0 then                                          -- mine of the mate's slice
    op.put_pipelined(k, a.landing:sub(first, n), a.input:sub(mate * a.count + first, n), ub, n, mate,
                     a.bufs)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
  end
  k:signal_op(a.arrived, 1, lab.SIGNAL_ADD, mate)
  k:set_atomic(a.atomic, a.dtype)
  for _, it in ipairs(list) do
    local i, at, len = it[1], it[2], it[3]
    k:signal_wait_until(a.base:sub(c, 1), lab.CMP_GE, (a.epoch - 1) * #list + it[4])
    if len > 0 then
      op.put_pipelined(k, a.card:sub(card_at(a, i) + at, len),
                       a.input:sub(theirs[i] * a.count + at, len), ub, len, mate, a.bufs)
      k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
    end
    local j0, j1 = ready_parts(a, c)
    for j = j0, j1 do
      k:signal_op(a.ready:sub(k.pe // 2 * half + j, 1), a.epoch, lab.SIGNAL_SET, theirs[i])
    end
  end
  k:set_atomic_none()
  k:prof_end(F.REMOTE_PUT_GET)
end

-- card relay, port half (block b): part b of my slice in my output: my partial, the
-- mate's (once all of its parts have landed) added, then the card sums from the outside
-- dies of my parity over my port, the card before mine first (it combines my slice
-- first), each added on the way in (atomic gets: the reduction happens on the UB -> GM
-- copy)
local function port_side(k, a, ub, half)
  local b = k.block
  local first, n = part(a, half, b)
  local out = n > 0 and a.output:sub(first, n) or nil
  k:prof_start(F.COPY_IN)
  if n > 0 then
    op.copy_gm(k, out, a.input:sub(k.pe * a.count + first, n), n, ub)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
  end
  k:prof_end(F.COPY_IN)
  k:prof_start(F.SIGNAL_WAIT)
  k:signal_wait_until(a.arrived, lab.CMP_GE, a.epoch * (half // 2))
  k:prof_end(F.SIGNAL_WAIT)
  k:prof_start(F.REMOTE_PUT_GET)
  k:set_atomic(a.atomic, a.dtype)
  local cards = k.n_pes // 2
  if not a.ring then                  -- the mate's partial, then the card sums, chained
    relay.get_chain(k, ub, a.bufs, cards, function(i)
      if i == 1 then return out, n > 0 and a.landing:sub(first, n), n, k.pe end
      local card = (k.pe // 2 - i + 1) % cards
      k:signal_wait_until(a.ready:sub(card * half + (a.by_owner and 0 or b), 1), lab.CMP_GE,
                          a.epoch)
      return out, n > 0 and a.card:sub(card_at(a, i - 1) + first, n), n, card * 2 + k.pe % 2
    end)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
    k:set_atomic_none()
    k:prof_end(F.REMOTE_PUT_GET)
    return
  end
  if n > 0 then op.get_pipelined(k, out, a.landing:sub(first, n), ub, n, k.pe, a.bufs) end
  for i = 1, cards - 1 do
    local card = (k.pe // 2 - i) % cards
    local src = card * 2 + k.pe % 2
    k:signal_wait_until(a.ready:sub(card * half + b, 1), lab.CMP_GE, a.epoch)
    if n > 0 then op.get_pipelined(k, out, a.card:sub(card_at(a, i) + first, n), ub, n, src, a.bufs) end
    if a.ring then                           -- my part of the slot is read: free it
      k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
      local w = (i - 1) % relay.RING_SLOTS
      k:signal_op(a.free:sub(w * (half // 2) + b // 2, 1), 1, lab.SIGNAL_ADD, src)
    end
  end
  k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
  k:set_atomic_none()
  k:prof_end(F.REMOTE_PUT_GET)
end

-- card relay: half the blocks sum my slice, a quarter copy the bases, a quarter add
-- onto the mate's over SIO
local function kernel_card(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  local half = k.block_num // 2
  local quarter = half // 2
  if k.block < half then
    port_side(k, a, ub, half)
  elseif k.block < half + quarter then
    copy_side(k, a, ub, k.block - half, quarter)
  else
    sio_side(k, a, ub, k.block - half - quarter, quarter)
  end
end

-- server relay: the input symmetric when it fits the budget beside the server buffer
-- (the others pull from it), else the output (the others push onto it)
local function setup_server(m, c, s)
  local _, g = relay.domains(c)
  local push = (c.pes + g - 1) * c.count * s.esize > c.sym_bytes
  relay.reduce_buffers(m, c, s, c.count, push)
  s.input = op.fill_reduce_input((push and m.alloc or m.malloc)(m, c.dtype, c.count * c.pes,
                                                                   "input"))
  s.output = (push and m.malloc or m.alloc)(m, c.dtype, c.count, "output")
  s.expect = op.reduce_scatter_expect(m, c, s.input, s.atomic)
  return s
end

-- card relay: the landing buffer of the mate's partial and the card buffer ((cards - 1)
-- slices: the card's sums of my outside owners' slices) symmetric
local function setup_card(m, c, s, slots)
  s.relay, s.chunk, s.rounds = true, c.count, 1
  local cards = c.pes // 2
  s.by_owner = not slots and c.count * s.esize <= relay.BY_OWNER_BYTES   -- 3 owners a block
    and cards - 1 >= 3 * (c.block_dim // 4)
  s.bufs = c.buffers or relay.CARD_BUFFERS
  s.input = op.fill_reduce_input(m:alloc(c.dtype, c.count * c.pes, "input"))
  s.output = m:alloc(c.dtype, c.count, "output")
  s.landing = m:malloc(c.dtype, c.count, "landing")
  s.card = m:malloc(c.dtype, (slots or c.pes // 2 - 1) * c.count, "card")
  s.arrived = m:malloc("int32", 8, "arrived", "backed")          -- the mate's parts of my slice
  s.base = m:malloc("int32", c.block_dim, "base", "backed")       -- [c]: the mate's bases of part c
  s.ready = m:malloc("int32", c.pes // 2 * c.block_dim, "ready", "backed") -- [card, b]: its sum
  s.expect = op.reduce_scatter_expect(m, c, s.input, s.atomic)
  return s
end

-- card ring: as setup_card with RING_SLOTS slices in the card buffer and the free
-- counters of their slots
local function setup_ring(m, c, s)
  setup_card(m, c, s, relay.RING_SLOTS)
  s.ring = true
  s.free = m:malloc("int32", relay.RING_SLOTS * (c.block_dim // 4), "free", "backed") -- [w, c]
  return s
end

-- the symmetric elements of the card relay's two forms: the landing buffer and the card
-- buffer of every outside owner, or of RING_SLOTS slices (the card ring)
local function card_elems(c)
  return c.pes // 2 * c.count, (1 + relay.RING_SLOTS) * c.count
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
    [F.FINALIZE] = "card and server relays: the sums land in the output itself: no copy-out",
  },

  describe = function(c, s)
    local alg = string.format("%s: atomic-%s puts to the owners' symmetric accumulators, "
                              .. "signal, copy out and reset", c.reduce, s.atomic)
    if s.ring then
      alg = string.format("%s: card ring: my partials of the outside slices as bases in a ring "
        .. "of %d card slots, the mate's added over SIO (atomic-%s puts), each owner gets its "
        .. "card sums over its port with atomic gets and frees the slot", c.reduce,
        relay.RING_SLOTS, s.atomic)
    elseif s.relay then
      alg = string.format("%s: card relay: my partials of the outside slices as bases in a card "
        .. "buffer, the mate's added over SIO (atomic-%s puts), each owner gets its card sums "
        .. "over its port with atomic gets%s", c.reduce, s.atomic,
        s.by_owner and " (whole slices by owner)" or "")
    elseif s.server then
      alg = string.format("%s: server relay: my partials of my local index's outside slices as "
        .. "bases in a server buffer, the server's added with atomic-%s %s, each owner gets "
        .. "its server sums by the RoCE engine into a stage (%d NIC block%s) and adds them on",
        c.reduce, s.atomic, s.push and "puts from their side" or "gets", s.nic,
        s.nic == 1 and "" or "s")
    end
    return { algorithm = alg, chunk_elems = s.chunk, ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  payload = op.shard_payload,
  tune = op.tune({ op.KNOB_BLOCK_DIM, op.KNOB_UB_BYTES, op.KNOB_BUFFERS }),

  setup = function(m, c)
    local s = op.state(c, { epoch = 0 })
    s.atomic = op.atomic("reduce_scatter", c.reduce)
    op.fit_ub(c, s)
    local full, ring = card_elems(c)
    local whole = c.block_dim % 4 == 0 and relay.card_fits(c, full, s.esize)
    local card = whole or (c.block_dim % 4 == 0 and relay.card_fits(c, ring, s.esize))
    local server = relay.server_fits(c, (c.pes // relay.domains(c) + 1) * c.count, s.esize)
    local mode = relay.mode(c, "reduce_scatter", card or server)
    if relay.take(mode, card, card and relay.applies(c, whole and full or ring, s.esize)) then
      return (whole and setup_card or setup_ring)(m, c, s)
    end
    if relay.take(mode, server, relay.server_worth("reduce_scatter", c.count * s.esize)) then
      return setup_server(m, c, s)
    end
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
    return op.launch(m, c, s, "reduce_scatter",
                     s.relay and kernel_card or s.server and relay.reduce_server or kernel)
  end,

  check = op.check_output,
}
