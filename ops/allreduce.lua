-- allreduce: every PE ends with the reduction (c.reduce = "sum" | "max" | "min")
-- of the inputs of all PEs. SHMEM style, reduce-scatter then allgather over
-- symmetric buffers: PE p owns slice p of the data. Each (owner, part) piece of
-- the input is put to its owner's symmetric accumulation buffer with the MTE
-- atomic unit on (set_atomic add/max/min: the reduction happens on the
-- UB->GM copy) and announced by a SIGNAL_ADD there; once all PEs contributed a
-- part the owner puts it to every PE's output and signals it. The accumulation
-- buffer holds the reduction's identity (0, the lowest or the highest value)
-- whenever no operation is running: the owner resets each part once its last
-- reader (a put of its own) is done. Inputs beyond the symmetric budget run in
-- rounds inside the one launch, through a staging buffer and a copy-out.
-- On several servers (one die per card, A2: shmemlab.relay.server_fits, the count a
-- multiple of the PEs in whole 32-byte slices) the hierarchical design: two launches,
-- reduce_scatter's server relay over slices of count / n_pes elements into a symmetric
-- slice, then allgather's server relay of the slices into the output. So each slice
-- leaves a server once reduced, and enters each other server once.
-- On two dies per card (A3) the same two steps with the card relays: ops/reduce_scatter's
-- into ops/allgather's symmetric input, then ops/allgather's (both ops' own setups and
-- runs on count / n_pes elements), when both take their card relay.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local relay = require("shmemlab.relay")
local F = lab.frames

-- signal slots (32 bytes apart): contrib[j], pushed[j] per part, arrived
local function slot(a, name, j) return a.sig:sub(8 * (a.slot[name] + (j or 0)), 1) end

-- piece (owner p, part j) of a round of len elements: offset in the round, size
local function piece(a, len, p, j)
  local slice = op.split(len, a.n_pes, a.esize)
  local per = op.split(slice, a.parts, a.esize)
  local off = p * slice + j * per
  local n = math.min(per, slice - j * per, len - off)
  return off, math.max(0, n), j * per
end

local function kernel(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  local me, n_pes = k.pe, k.n_pes
  local items = n_pes * a.parts                     -- (owner or destination, part)
  for round = 0, a.rounds - 1 do
    local base = round * a.chunk
    local len = math.min(a.chunk, a.count - base)
    local gen = (a.epoch - 1) * a.rounds + round + 1
    op.atomic_scatter(k, a, ub, function(p, j)      -- reduce-scatter: atomic puts
      local off, n, at = piece(a, len, p, j)
      return at, base + off, n
    end, function(j) return slot(a, "contrib", j) end)
    for item = k.block, items - 1, k.block_num do   -- allgather: owner puts
      local q, j = op.item(k, item)
      local off, n, at = piece(a, len, me, j)
      k:prof_start(F.SIGNAL_WAIT)
      k:signal_wait_until(slot(a, "contrib", j), lab.CMP_GE, gen * n_pes)
      k:prof_end(F.SIGNAL_WAIT)
      k:prof_start(F.REMOTE_PUT_GET)
      if n > 0 then
        op.put_pipelined(k, a.dest:sub((a.staged and 0 or base) + off, n), a.acc:sub(at, n), ub,
                         n, q, a.buffers)
        k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
      end
      k:signal_op(slot(a, "arrived"), 1, lab.SIGNAL_ADD, q)
      k:signal_op(slot(a, "pushed", j), 1, lab.SIGNAL_ADD, me)
      k:prof_end(F.REMOTE_PUT_GET)
    end
    for item = k.block, items - 1, k.block_num do   -- reset what was read
      local q, j = op.item(k, item)
      local _, n, at = piece(a, len, me, j)
      if q == me and n > 0 then
        k:prof_start(F.SIGNAL_WAIT)
        k:signal_wait_until(slot(a, "pushed", j), lab.CMP_GE, gen * n_pes)
        k:prof_end(F.SIGNAL_WAIT)
        k:prof_start(F.FINALIZE)
        op.copy_gm(k, a.acc:sub(at, n), a.identity:sub(at, n), n, ub)
        k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
        k:prof_end(F.FINALIZE)
      end
    end
    k:prof_start(F.SIGNAL_WAIT)
    k:signal_wait_until(slot(a, "arrived"), lab.CMP_GE, gen * items)
    k:prof_end(F.SIGNAL_WAIT)
    if a.staged then
      local first, n = op.share(k, len, a.esize)
      k:prof_start(F.FINALIZE)
      if n > 0 then op.copy_gm(k, a.output:sub(base + first, n), a.stage:sub(first, n), n, ub) end
      k:prof_end(F.FINALIZE)
      k:prof_start(F.SIGNAL_WAIT)
      k:barrier_all()                               -- staging and accumulator reused
      k:prof_end(F.SIGNAL_WAIT)
    end
  end
end

-- server relay: the slice each PE owns, when the count splits into whole 32-byte slices
local function server_slice(c, esize)
  local slice = c.count // c.pes
  if c.count % c.pes ~= 0 or (slice * esize) % 32 ~= 0 then return nil end
  return slice
end

-- server relay: the reduce_scatter's state (the input symmetric when it fits, the slice
-- symmetric) and the allgather's (the slices in, the output out)
local function setup_server(m, c, s, slice)
  local _, g = relay.domains(c)
  local push = (c.count + 2 * g * slice) * s.esize > c.sym_bytes
  op.fit_ub(c, s)
  local r = { dtype = c.dtype, count = slice, esize = s.esize, atomic = s.atomic, epoch = 0,
              ub_elems = s.ub_elems }
  relay.reduce_buffers(m, c, r, slice, push)
  r.input = op.fill_reduce_input((push and m.alloc or m.malloc)(m, c.dtype, c.count, "input"))
  r.output = m:malloc(c.dtype, slice, "slice")
  local a = { dtype = c.dtype, count = slice, esize = s.esize, epoch = 0, ub_elems = s.ub_elems }
  relay.gather_buffers(m, c, a, slice)
  a.input, a.output = r.output, m:alloc(c.dtype, c.count, "output")
  s.server, s.rs, s.ag, s.chunk, s.rounds = true, r, a, c.count, 1
  s.input, s.output = r.input, a.output
  s.expect = op.allreduce_expect(m, c, s.input, s.atomic)
  return s
end

-- card relays: reduce_scatter's and allgather's states on slices of the count, the
-- reduce_scatter's output the allgather's (symmetric) input; nil when either op would
-- not take its card relay
local function setup_card(m, c, s, slice)
  local runner = require("shmemlab.runner")
  local sub = setmetatable({ count = slice }, { __index = c })
  local rs_sym, ag_sym = c.pes // 2 * slice, c.pes * slice    -- the two ops' relay buffers
  if not (relay.card_fits(sub, rs_sym, s.esize) and c.block_dim % 4 == 0
          and relay.card_fits(sub, ag_sym, s.esize)) then return nil end
  if c.algo ~= "hier" and not (relay.applies(sub, rs_sym, s.esize)
                               and relay.applies(sub, ag_sym, s.esize)) then return nil end
  local rs_op, ag_op = runner.load_op("reduce_scatter"), runner.load_op("allgather")
  local r, a = rs_op.setup(m, sub), ag_op.setup(m, sub)
  assert(r.relay and a.relay, "allreduce: the card relays' choice differs from their ops'")
  r.output = a.input
  s.card, s.sub, s.rs, s.ag, s.rs_op, s.ag_op = true, sub, r, a, rs_op, ag_op
  s.chunk, s.rounds, s.ub_bytes = c.count, 1, a.ub_bytes
  s.input, s.output = r.input, a.output
  s.expect = op.allreduce_expect(m, c, s.input, s.atomic)
  return s
end

-- card relays: the two ops' launches, one after the other
local function run_card(m, _, s)
  local list = {}
  for _, r in ipairs(s.rs_op.run(m, s.sub, s.rs)) do list[#list + 1] = r end
  for _, r in ipairs(s.ag_op.run(m, s.sub, s.ag)) do list[#list + 1] = r end
  return list
end

-- server relay: the two launches of one operation
local function run_server(m, c, s)
  s.rs.epoch, s.ag.epoch = s.rs.epoch + 1, s.ag.epoch + 1
  return { m:launch({ name = "allreduce_reduce_scatter", kernel = relay.reduce_server }, c.block_dim,
                    s.rs),
           m:launch({ name = "allreduce_allgather", kernel = relay.gather_server }, c.block_dim,
                    s.ag) }
end

return op.define {
  name = "allreduce",
  collective = "allreduce",
  dtypes = op.DTYPES,
  defaults = { count = 256 * 1024, block_dim = 16, reduce = "sum" },
  unused = {
    [F.COPY_IN] = "the MTE puts read the input in place: no staging copy-in",
    [F.LOCAL_COMPUTE] = "the reduction is done by the MTE atomic unit on the UB->GM "
                        .. "copies (set_atomic): no vector compute",
    [F.FINALIZE] = "server relays: the sums land in the slice and the gets in the output "
                   .. "itself: no copy-out or reset",
  },

  describe = function(c, s)
    local what = s.card and "%s: card relays: reduce_scatter's (partials summed on the card, "
        .. "atomic-%s gets over the port) into a symmetric slice, then allgather's (half the "
        .. "outside slices over each die's port, the rest over SIO)"
      or s.server and "%s: server relays: reduce_scatter's (atomic-%s gets, the server sums by "
        .. "the RoCE engine) into a symmetric slice, then allgather's (slices by the RoCE engine "
        .. "into a window, spread in the server)"
      or "%s: atomic-%s puts to the owners' symmetric accumulators, signal, owners put to every "
        .. "PE" .. (s.staged and ", copy out" or "")
    return { algorithm = string.format(what, c.reduce, s.atomic), chunk_elems = s.chunk,
             ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  payload = op.elems_payload,
  tune = op.tune({ op.KNOB_BLOCK_DIM, op.KNOB_UB_BYTES, op.KNOB_BUFFERS }),

  setup = function(m, c)
    local s = op.state(c, { n_pes = c.pes, epoch = 0 })
    s.atomic = op.atomic("allreduce", c.reduce)
    local own = server_slice(c, s.esize)
    local fits = own ~= nil and relay.server_fits(c, c.count + 2 * own, s.esize)
    local card = own ~= nil and c.profile.dies_per_card == 2 and c.block_dim % 4 == 0
                 and relay.card_fits(c, c.count, s.esize)
    local mode = relay.mode(c, "allreduce", fits or card,
                            "a count of whole 32-byte slices, one a PE (A3: block_dim of 4s)")
    if relay.take(mode, fits, relay.server_worth("allreduce", c.count * s.esize)) then
      return setup_server(m, c, s, own)
    end
    if relay.take(mode, card, true) and setup_card(m, c, s, own) then return s end
    local slice = math.min(op.split(c.count, c.pes, s.esize),
                           op.fit(c.sym_bytes // (c.pes + 1), s.esize))
    op.plan_rounds(c, s, slice * c.pes)
    s.staged = s.rounds > 1
    s.parts = math.max(1, c.block_dim // c.pes)
    s.slot = { contrib = 0, pushed = s.parts, arrived = 2 * s.parts }
    op.fit_ub(c, s)
    s.input = op.fill_reduce_input(m:alloc(c.dtype, c.count, "input"))
    local ident = op.identity(c.dtype, c.reduce)
    s.acc = m:malloc(c.dtype, slice, "accumulator"):fill("const", ident)
    s.identity = m:alloc(c.dtype, slice, "identity"):fill("const", ident)
    s.sig = m:malloc("int32", 8 * (2 * s.parts + 1), "signals", "backed")
    if s.staged then
      s.stage = m:malloc(c.dtype, s.chunk, "stage")
      s.output = m:alloc(c.dtype, c.count, "output")
      s.dest = s.stage
    else
      s.output = m:malloc(c.dtype, c.count, "output")
      s.dest = s.output
    end
    s.expect = op.allreduce_expect(m, c, s.input, s.atomic)
    return s
  end,

  run = function(m, c, s)
    if s.server then return run_server(m, c, s) end
    if s.card then return run_card(m, c, s) end
    s.epoch = s.epoch + 1
    return op.launch(m, c, s, "allreduce", kernel)
  end,

  check = op.check_output,
}
