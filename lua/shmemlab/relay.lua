-- shmemlab.relay: the plumbing of the card-relay designs (ops/allgather.lua,
-- ops/reduce_scatter.lua) on a SoC with two dies per card (A3: each die has its own
-- HCCS switch port, the two dies of a card are joined by SIO, and SIO carries only
-- bytes already on the card; see shmemlab.bound's card cut).
--
-- A card relay splits the other cards' dies by parity: die d works with the outside
-- dies of its own parity (d % 2) over its port, its card-mate (d ~ 1) with the
-- others, and the two forward to each other over SIO what the other needs. So each
-- outside shard crosses the card's ports once, the two ports share the work, and the
-- SIO forward runs piece by piece under the port traffic. The pieces shrink toward
-- the end so that what is left to forward once the port traffic is done is small.
local op = require("shmemlab.op")

local relay = {}

-- the smallest piece, and the largest as a part of a block's range
local MIN_PIECE_BYTES = 32 * 1024
local PIECES = 4

-- the least a die's port must carry (its half of the outside shards) for the relay to
-- pay for its second step (a piece lands, is announced, then crosses SIO): the
-- crossover of the two allgather designs measured in the lab on A3, 6 to 32 dies
-- (README, "The lower bound and the physical peak"); below it the one-step design is
-- as fast or faster
relay.MIN_PORT_BYTES = 1280 * 1024
-- the fewest cards: on two, SIO carries the mate's shard and the forwarded one (two
-- shards at 224 GB/s against one at 164 on the port) and the relay is slower
relay.MIN_CARDS = 3

-- relay.card_fits(c, sym_elems, esize) -> true when the card relay can run c: two dies
-- per card, whole cards and at least two, an even number of blocks (half over the port,
-- half over SIO), and the sym_elems elements of esize bytes it keeps symmetric within the
-- op's symmetric budget
function relay.card_fits(c, sym_elems, esize)
  return c.profile.dies_per_card == 2 and c.pes % 2 == 0 and c.pes // 2 >= 2
    and c.block_dim >= 2 and c.block_dim % 2 == 0
    and sym_elems * esize <= c.sym_bytes
end

-- relay.applies(c, sym_elems, esize) -> true when the run configuration c takes the
-- card relay by default: it fits (relay.card_fits), at least MIN_CARDS cards, and a
-- die's half of the outside shards of c.count elements at least MIN_PORT_BYTES
function relay.applies(c, sym_elems, esize)
  local cards = c.pes // 2
  return relay.card_fits(c, sym_elems, esize) and cards >= relay.MIN_CARDS
    and (cards - 1) * c.count * esize >= relay.MIN_PORT_BYTES
end

-- relay.mode(c, name, fits) -> "flat" | "hier" | "auto": what --algo (c.algo) asks of op
-- name; "hier" is an error when no relay fits the run (fits false)
function relay.mode(c, name, fits)
  if c.algo == "hier" and not fits then
    error(string.format("%s: --algo hier needs several whole servers (or cards of two dies), "
      .. "blocks enough and the relay's buffers within --sym-bytes; this run has none", name), 0)
  end
  return c.algo or "auto"
end

-- relay.take(mode, fits, worth) -> true when a relay that fits runs: asked for, or
-- chosen (mode "auto") because it is worth it
function relay.take(mode, fits, worth)
  return fits and (mode == "hier" or (mode == "auto" and worth))
end

-- the outside dies of parity par, rotated by k's card so that the cards start apart
function relay.outside(k, par)
  local list, cards, mine = {}, k.n_pes // 2, k.pe // 2
  for i = 1, cards - 1 do list[#list + 1] = ((mine + i) % cards) * 2 + par end
  return list
end

-- the pieces of block b of half over nsrc shards of a.count elements (a.esize bytes)
-- laid end to end (shard i at (i - 1) * count): {first, n} each, at most 1/PIECES
-- of the block's range; from the end backwards each piece is 4/3 of the one after
-- it, the last MIN_PIECE_BYTES: the mate forwards a piece over SIO (224 GB/s against
-- the port's 164 on A3: 0.73 of the time it took to land) while the next one, 0.75
-- of it, lands
function relay.pieces(a, nsrc, b, half)
  local total, esize = nsrc * a.count, a.esize
  local per = op.split(total, half, esize)
  local first, last = b * per, math.min(total, (b + 1) * per)
  local big, size = op.split(per, PIECES, esize), op.fit(MIN_PIECE_BYTES, esize)
  local sizes, left = {}, last - first
  while left > 0 do
    local n = math.min(left, size, big)
    sizes[#sizes + 1], left = n, left - n
    size = op.fit(size * 4 // 3 * esize, esize)
  end
  local list = {}
  for i = #sizes, 1, -1 do
    list[#list + 1] = { first, sizes[i] }
    first = first + sizes[i]
  end
  return list
end

-- call f(q, offset, n, at) for the parts of piece {first, n} in each shard of count
-- elements, shard i + 1 belonging to PE src[i + 1] (at: the part's first element in
-- the shards laid end to end)
function relay.parts(count, src, piece, f)
  local first, n = piece[1], piece[2]
  while n > 0 do
    local i, off = first // count, first % count
    local len = math.min(n, count - off)
    f(src[i + 1], off, len, first)
    first, n = first + len, n - len
  end
end

------------------------------------------------------------------------------
-- server relay (several servers or supernodes, one die per card: A2 servers joined by
-- RoCE): the same idea one level up. The domain (shmemlab.bound.domain_pes: the PEs
-- that reach each other without RDMA) plays the card, a PE's local index in its domain
-- the parity: PE (S, i) pulls over its NIC the shards of the outside PEs of local index
-- i, (S', i) for every other domain S', into its symmetric window, and each of its
-- domain's PEs (itself included) pulls them from there over the in-domain links. So each
-- outside shard crosses the NICs into a domain once, and the in-domain forward runs
-- piece by piece under the NIC traffic.

-- the blocks of a PE that pull over its NIC; one more copies the PE's own shard and
-- window into its output, the others pull from the domain's other PEs
relay.NIC_BLOCKS = 2
-- the least a PE's NIC must carry (its outside shards) for the server relay to pay for
-- its second step: the crossover of the two allgather designs measured in the lab on A2,
-- 16 to 64 PEs (doc/hier.md): 32 KiB one-step faster, 48 KiB relay faster
relay.SERVER_MIN_BYTES = 40 * 1024
-- the same for reduce_scatter's server relay, per slice: its crossover measured in the
-- lab on A2, 16 to 64 PEs (doc/hier.md): 32 KiB slices one-step faster at 32 and 64
-- PEs, 64 KiB relay faster at 16, 32 and 64
relay.SERVER_MIN_SLICE_BYTES = 64 * 1024
-- the pieces a slice of a reducing server relay is summed and announced in: the NIC
-- starts on a slice's first piece while its server still adds up the others
relay.SERVER_PIECES = 8

-- relay.domains(c) -> PEs per domain, domains (0 domains when the job does not split
-- into more than one whole domain)
function relay.domains(c)
  local m = require("shmemlab.bound").domain_pes(c.profile)
  if m < 2 or c.pes <= m or c.pes % m ~= 0 then return m, 0 end
  return m, c.pes // m
end

-- relay.server_fits(c, sym_elems, esize) -> true when the server relay can run c: one
-- die per card, whole domains (at least two), blocks enough for the NIC, the own copy
-- and one per other PE of the domain, and the sym_elems elements of esize bytes it keeps
-- symmetric within the op's symmetric budget
function relay.server_fits(c, sym_elems, esize)
  local m, g = relay.domains(c)
  return g >= 2 and c.profile.dies_per_card == 1
    and c.block_dim >= relay.NIC_BLOCKS + m
    and sym_elems * esize <= c.sym_bytes
end

-- relay.server_worth(c, esize, reducing) -> true when the server relay pays for its
-- second step (a piece lands, is announced, then crosses the in-domain links): a PE's
-- outside shards of c.count elements at least SERVER_MIN_BYTES, or for a reducing relay
-- (more pieces and signals) a slice at least SERVER_MIN_SLICE_BYTES
function relay.server_worth(c, esize, reducing)
  local _, g = relay.domains(c)
  if reducing then return c.count * esize >= relay.SERVER_MIN_SLICE_BYTES end
  return (g - 1) * c.count * esize >= relay.SERVER_MIN_BYTES
end

-- the outside PEs of local index i, rotated by PE pe's domain so that the domains start
-- apart: the sources a relayer of domain pe // m pulls, in its window's order
function relay.outside_of(pe, i, m, n)
  local list, g, mine = {}, n // m, pe // m
  for k = 1, g - 1 do list[#list + 1] = ((mine + k) % g) * m + i end
  return list
end

return relay
