-- shmemlab.relay: the relay designs that cross a cut once (shmemlab.bound's card and
-- domain cuts; doc/hier.md): the plumbing of the card relays (ops/allgather.lua,
-- ops/reduce_scatter.lua) on a SoC with two dies per card (A3: each die has its own
-- HCCS switch port, the two dies of a card are joined by SIO, and SIO carries only
-- bytes already on the card), the server relays' kernels across the RDMA cut between
-- servers (allgather, reduce_scatter; allreduce runs both), and the choice between a
-- relay and an op's one-step design (--algo flat | hier, or the size).
--
-- A card relay splits the other cards' dies by parity: die d works with the outside
-- dies of its own parity (d % 2) over its port, its card-mate (d ~ 1) with the
-- others, and the two forward to each other over SIO what the other needs. So each
-- outside shard crosses the card's ports once, the two ports share the work, and the
-- SIO forward runs piece by piece under the port traffic. The pieces shrink toward
-- the end so that what is left to forward once the port traffic is done is small.
-- Where the forwarded data does not fit the symmetric budget the card ring carries it
-- through a few reusable slots with flow control (RING_SLOTS below).
local lab = require("shmemlab")
local op = require("shmemlab.op")
local F = lab.frames
-- sub() as a local, as op.lua has it (v:sub would look it up through the view's __index)
local sub = lab.core.view_methods.sub

local relay = {}

-- the smallest piece, and the largest as a part of a block's range
local MIN_PIECE_BYTES = 32 * 1024
local PIECES = 4

-- the least a die's port must carry (its half of the outside shards) for the relay to
-- pay for its second step (a piece lands, is announced, then crosses SIO): the
-- crossover of the two allgather designs measured in the lab on A3, 6 to 32 dies
-- (doc/metrics.md, "The lower bound and the physical peak"); below it the one-step design is
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

-- relay.mode(c, name, fits [, also]) -> "flat" | "hier" | "auto": what --algo (c.algo)
-- asks of op name; "hier" is an error when no relay fits the run (fits false), naming
-- what a relay needs (also: what the op needs besides)
function relay.mode(c, name, fits, also)
  if c.algo == "hier" and not fits then
    local runner = require("shmemlab.runner")
    error(runner.error_of("refused", string.format("%s: --algo hier needs several whole "
      .. "servers (or cards of two dies), blocks enough%s and the relay's buffers within "
      .. "--sym-bytes; this run has none", name, also and ", " .. also or "")), 0)
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
-- of the block's range (and at most cap elements: a ring slot); from the end backwards
-- each piece is 4/3 of the one after it, the last MIN_PIECE_BYTES: the mate forwards a
-- piece over SIO (224 GB/s against the port's 164 on A3: 0.73 of the time it took to
-- land) while the next one, 0.75 of it, lands
function relay.pieces(a, nsrc, b, half, cap)
  local total, esize = nsrc * a.count, a.esize
  local per = op.split(total, half, esize)
  local first, last = b * per, math.min(total, (b + 1) * per)
  local big, size = op.split(per, PIECES, esize), op.fit(MIN_PIECE_BYTES, esize)
  big = math.min(big, cap or big)
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

-- relay.piece_lists(a, nsrc, half) -> lists: relay.pieces(a, nsrc, b, half) for each
-- block b = 0 .. half - 1 (lists[b]), and in lists.most the longest list's length: the
-- same on every PE, made once for every block of every launch (read them, never write)
function relay.piece_lists(a, nsrc, half)
  local lists = { most = 0 }
  for b = 0, half - 1 do
    lists[b] = relay.pieces(a, nsrc, b, half)
    lists.most = math.max(lists.most, #lists[b])
  end
  return lists
end

-- relay.shard_run(count, first, n) -> shard, off, len: where elements [first, first + n)
-- of shards of count elements laid end to end begin: the shard (0-based), the offset in
-- it, and how many of the n lie in it
function relay.shard_run(count, first, n)
  local off = first % count
  return first // count, off, math.min(n, count - off)
end
local shard_run = relay.shard_run

-- call f(q, offset, n, at) for the parts of piece {first, n} in each shard of count
-- elements, shard i + 1 belonging to PE src[i + 1] (at: the part's first element in
-- the shards laid end to end)
function relay.parts(count, src, piece, f)
  local first, n = piece[1], piece[2]
  while n > 0 do
    local i, off, len = shard_run(count, first, n)
    f(src[i + 1], off, len, first)
    first, n = first + len, n - len
  end
end

-- card ring: a card relay whose forwarded data does not all stay in symmetric memory.
-- The relaying die lands each piece in one of RING_SLOTS symmetric slots of at most
-- RING_SLOT_BYTES per relaying block (the window), the reader (the card-mate over SIO)
-- signals the slot free once its copy has landed, and the relayer waits for that before
-- it refills the slot: the symmetric footprint is RING_SLOTS slots a block instead of
-- every outside shard. Measured in the lab (allgather, 64 dies of A3, 16 MiB a PE,
-- kernel us against the bound 3174.790): depth 2 / 4 / 8 at 1 MiB slots 3362.567 /
-- 3297.342 / 3297.342 (depth 4 is as deep as helps), 4 slots of 1 / 2 / 4 MiB 3297.342 /
-- 3251.319 / 3218.832 (each piece pays a landed wait and a signal)
relay.RING_SLOTS = 4
-- reduce_scatter's card relay splits its copy and SIO blocks' work by owner (whole
-- slices, owners dealt out to the blocks) instead of by part of every slice when a slice
-- is at most BY_OWNER_BYTES and each of those blocks gets at least three owners: each
-- item pays a landed wait and a signal, so many small parts cost more than a few whole
-- slices. Measured in the lab (16 MiB allreduce's slices, four UB buffers, kernel us by
-- part / by owner): 16 dies (7 owners on 4 blocks) 64.433 / 89.625, 32 dies (15)
-- 73.633 / 71.982; 128 dies (63, two buffers) 142.062 / 88.384. The byte limit is
-- assumed (larger slices keep the split the 16 MiB figures were measured with)
relay.BY_OWNER_BYTES = 1024 * 1024
-- the UB buffers of the card relays' transfers (unless the tune knob buffers says):
-- four, so that a transfer of a few tens of KiB still overlaps its reads and writes
-- (measured in the lab: reduce_scatter 16 dies, 1 MiB slices, 70.039 us with two, 62.913
-- with four; 128 dies 128 KiB slices 88.384 / 74.927)
relay.CARD_BUFFERS = 4
-- broadcast's card relay: the data runs in chunks of at least CARD_BCAST_CHUNK_BYTES, at
-- most CARD_BCAST_CHUNKS of them (each one piece a die off the root's card); a die's
-- blocks but one in CARD_BCAST_SIO work its port, the others SIO (the port carries the
-- exchange of pieces with as many sources as cards, SIO one run a chunk from the
-- card-mate); the root copies its input out with CARD_COPY_BLOCKS blocks (with all of
-- them the copy takes the HBM bandwidth its port and SIO reads need). Measured in the
-- lab at 16 MiB, block_dim 16 (kernel us at 16 / 32 / 64 / 128 dies): 8 chunks 73.852 /
-- 74.415 / 76.366 / 84.195, 12 chunks 68.823 / 69.784 / 73.924 / 80.522, 16 chunks
-- 66.046 / 67.233 / 73.873 / 80.144; SIO blocks (16 chunks, one in 4 = 4; measured with
-- a flag a piece rather than one count a chunk): 3 of 16 81.218 / 71.245 / 76.788 /
-- 80.294, 5 of 16 68.639 / 66.808 / 82.231 / 82.528, 8 of 16 65.358 / 73.925 / 81.939 / -;
-- chunks of at least 64 / 128 / 256 KiB at 1 MiB of data
-- (8 / 16 / 32 dies): 18.884 / 18.620 / 19.992, 14.297 / 13.858 / 14.564, 13.417 / 12.736 /
-- 13.298. Without --algo it is taken from CARD_BCAST_MIN bytes of data (the crossover
-- with the one-step design on 16 dies, measured with an earlier form of the relay)
relay.CARD_BCAST_CHUNKS = 16
relay.CARD_BCAST_CHUNK_BYTES = 256 * 1024
relay.CARD_BCAST_SIO = 4
relay.CARD_BCAST_MIN = 256 * 1024
relay.CARD_COPY_BLOCKS = 6
-- broadcast's card relay: the two constants of the hash that orders the cards a holder's
-- port blocks visit in each chunk (ops/broadcast.lua card_order). Arbitrary: any order
-- that is the same for every holder and not 1, 2, 3 ... does about as well. Measured in
-- the lab at 16 MiB, block_dim 16, 128 dies: 1, 2, 3 ... 80.144 us; these 74.405;
-- other constants 74.851 / 74.885 / 74.891 / 76.651; these but one order for all chunks
-- 74.695 (all with equal shares of a chunk for the two parities; with the root's parity's
-- larger share, ops/broadcast.lua card_share, these give 73.570)
relay.CARD_BCAST_ORDER = { 977, 12345 }
relay.RING_SLOT_BYTES = 4 * 1024 * 1024

-- relay.ring_slot_elems(count, nsrc, half, esize) -> the elements of esize bytes a ring
-- slot holds: RING_SLOT_BYTES, or the largest piece relay.pieces cuts for half blocks
-- over nsrc shards of count elements when that is less
function relay.ring_slot_elems(count, nsrc, half, esize)
  local big = op.split(op.split(nsrc * count, half, esize), PIECES, esize)
  return math.min(op.fit(relay.RING_SLOT_BYTES, esize), big)
end

-- relay.ring_gen(epoch, n, i, depth) -> the value a ring's counter (set once per piece,
-- n pieces an epoch) reaches when piece i of this epoch is done; with depth, the value
-- that frees the slot piece i reuses (that of piece i - depth, 0 when none)
function relay.ring_gen(epoch, n, i, depth)
  return math.max(0, (epoch - 1) * n + i - (depth or 0))
end

-- relay.get_tee(k, dst, dst2, src, ub, count, pe, bufs): a double-buffered get of count
-- elements of PE pe's src to dst that also writes each UB chunk to the local dst2 (a
-- second MTE3 copy out of the same UB half: the bytes cross the link once)
function relay.get_tee(k, dst, dst2, src, ub, count, pe, bufs)
  bufs = bufs or 2
  local half, esize = #ub // bufs, lab.core.dtype_size(ub.dtype)
  local bytes = half * esize
  local done, c = 0, 0
  while done < count do
    local h, n = c % bufs, math.min(half, count - done)
    if c >= bufs then k:wait_flag("MTE3_MTE2", h) end  -- that half was written out
    local part = sub(ub, h * half, n)
    k:mte_get_nbi(sub(dst, done, n), sub(src, done, n), sub(ub, h * half, half), bytes, n, pe, h)
    local copy = (n * esize) % 32 == 0 and k.data_copy or k.data_copy_pad
    copy(k, sub(dst2, done, n), part, n)
    k:set_flag("MTE3_MTE2", h)
    done, c = done + n, c + 1
  end
  for h = 0, math.min(c, bufs) - 1 do k:wait_flag("MTE3_MTE2", (c - 1 - h) % bufs) end
end

-- a chain of gets through the bufs (default 2) buffers of UB tensor ub: c chunks
-- issued so far, each a get into one buffer and its write out (MTE3_MTE2 flag h)
local function chain_new(ub, bufs)
  bufs = bufs or 2
  local half = #ub // bufs
  return { ub = ub, bufs = bufs, half = half, bytes = half * lab.core.dtype_size(ub.dtype),
           c = 0 }
end

-- issue on chain ch the gets of count elements of PE pe's src into dst, a buffer a
-- chunk, waiting for a buffer's write out before reusing it; after(), when given,
-- runs after each chunk
local function chain_get(k, ch, dst, src, count, pe, after)
  local half, bufs = ch.half, ch.bufs
  for done = 0, count - 1, half do
    local h, len = ch.c % bufs, math.min(half, count - done)
    if ch.c >= bufs then k:wait_flag("MTE3_MTE2", h) end  -- that buffer was written out
    k:mte_get_nbi(sub(dst, done, len), sub(src, done, len), sub(ch.ub, h * half, half), ch.bytes,
                  len, pe, h)
    k:set_flag("MTE3_MTE2", h)
    ch.c = ch.c + 1
    if after then after() end
  end
end

-- wait until chain ch's last writes out of the UB are done
local function chain_drain(k, ch)
  local c, bufs = ch.c, ch.bufs
  for h = 0, math.min(c, bufs) - 1 do k:wait_flag("MTE3_MTE2", (c - 1 - h) % bufs) end
end

-- relay.get_chain(k, ub, bufs, n, item): the gets of n transfers, one after the other
-- through the same bufs (default 2) UB buffers, so that a transfer's first read goes out
-- while the one before still writes (op.get_pipelined drains each transfer); item(i), i =
-- 1..n, may wait first and returns dst, src, count, pe (count 0: nothing to move)
function relay.get_chain(k, ub, bufs, n, item)
  local ch = chain_new(ub, bufs)
  for i = 1, n do
    local dst, src, count, pe = item(i)
    chain_get(k, ch, dst, src, count, pe)
  end
  chain_drain(k, ch)
end

-- relay.get_marked(k, ub, bufs, n, group, landed, ahead): the gets of n groups of
-- transfers as one chain through the same bufs (default 2) UB buffers, with a mark at
-- each group's end: group(i), i = 1..n, returns group i's transfers, a list of
-- {dst, src, count, pe} (it may wait first: group i - 1 is marked after that wait);
-- landed(i) runs once group i's writes have all landed (its MTE3_S flag). The block
-- waits for that flag only once the next group's first `ahead` gets (default bufs) are
-- issued, so the link stays busy across the mark: the chain never drains between
-- groups (one op.get_pipelined a transfer drains each)
function relay.get_marked(k, ub, bufs, n, group, landed, ahead)
  local ch = chain_new(ub, bufs)
  ahead = ahead or ch.bufs
  local open, issued = nil, 0              -- open: a group marked, its flag not yet waited
  local function settle()
    if open then k:wait_flag("MTE3_S", 0); landed(open); open = nil end
  end
  local function tick()
    issued = issued + 1
    if issued >= ahead then settle() end
  end
  for i = 1, n do
    issued = 0
    for _, t in ipairs(group(i)) do chain_get(k, ch, t[1], t[2], t[3], t[4], tick) end
    settle()
    k:set_flag("MTE3_S", 0)                               -- fires when group i lands
    open = i
  end
  settle()
  chain_drain(k, ch)
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
relay.NIC_BLOCKS = 1
-- the least UB chunks of a part a gather block takes of its peer's shard or of a piece
-- (relay.deal; the last part of an item may be shorter): fewer, longer gets than a share
-- of every item for each of the peer's blocks (64 PEs x 48 blocks, 1 MiB a PE: 54,208 ->
-- 18,048 gets, 79,296 -> 49,600 chunks, 367.370 -> 354.165 us). Measured in the lab,
-- allgather kernel us on 64 PEs at 1 MiB, 16 blocks (shares: 353.967): whole chunks dealt
-- with the largest part always on the same block, 1 / 3 / 5 / 8 chunks 367.814 / 357.684 /
-- 355.502 / 360.217; moved on (relay.deal_turn) 1 / 2 / 3 355.574 / 354.125 / 352.779; equal
-- cuts of at least 2 / 3 chunks 353.003 / 353.497, but 11590.180 / 11590.541 against the
-- shares' 11587.155 at 128 PEs and 16 MiB (3 whole: 11581.285). Dealt by shard always,
-- 64 PEs at 1 MiB took 360.726 (by shard only where a shard is under a part: allreduce's
-- slices, 64 / 128 PEs at 16 MiB 209.924 / 220.279 against 212.124 / 225.413 by piece)
relay.SHARE_CHUNKS = 3
-- a reducing server relay's NIC blocks on three servers or more with slices under
-- SERVER_PIECES pieces, when the blocks allow (one still moving for each other PE of the
-- domain): each keeps one RoCE get in flight while it adds the one before on, so two keep
-- the NIC busy through the latency of short gets. On two servers the NIC carries one
-- slice, and with whole pieces the gets are long: the block moves partials instead
-- (measured, 16 MiB: allreduce 16 PEs 167.269 us with one, 180.329 with two;
-- reduce_scatter 32 PEs 3295.153 with one, 3387.589 with two)
relay.REDUCE_NIC_BLOCKS = 2
-- the least data for an op's server relay to pay for its second step, the crossovers
-- with the one-step designs measured in the lab on A2, 16 to 64 PEs (doc/hier.md; the
-- one-step design below, the relay above): allgather, a PE's outside shards (the bytes
-- its NIC carries: 32 KiB / 48 KiB at 16 PEs, 24 / 48 at 32); reduce_scatter, a slice
-- (2 KiB / 4 KiB at 16 and 32 PEs, 1 KiB / 4 KiB at 64); allreduce, the vector (256 KiB /
-- 512 KiB at 16 and 32); broadcast, the data (8 KiB / 16 KiB at 32 PEs; 4 KiB already
-- pays at 16)
relay.SERVER_MIN = { allgather = 40 * 1024, reduce_scatter = 4 * 1024,
                     allreduce = 384 * 1024, broadcast = 12 * 1024 }
-- broadcast's server relay is the scatter relay (ops/broadcast.lua; it replaced a chain
-- of servers, which it beat at every size measured on 2 to 8 servers: doc/hier.md). Its
-- chunks: the most that one of SCATTER_CHUNKS allows, {chunks at most, bytes a chunk at
-- least}: 16 of 128 KiB up to 4 MiB, 20 of 256 KiB from 5 MiB (16 MiB, {1, 2, 4}: 16 / 20
-- chunks 16 PEs 104.994 / 102.848 us, 32 PEs 110.723 / 108.224, 64 PEs 118.408 /
-- 117.478, 128 PEs 124.618 / 119.757, 18 and 24 chunks 121.783 and 121.525; at 4 MiB 20
-- chunks lose: 16 PEs 35.038 against 38.027, 32 PEs 38.665 against 41.287). The blocks
-- of a holder that fetch, {on the root's server, scatter, gather} elsewhere: the first
-- of SCATTER_FETCH that leaves one reader for each other PE of the server. Two scatter
-- blocks and several gather blocks take alternate chunks, so that one's RoCE latency and
-- quiet run under another's bytes; a gather that goes through groups of servers
-- (SCATTER_GROUP) waits on two RoCE latencies a chunk, and a fourth gather block covers
-- them (16 MiB, 16 chunks: 128 PEs {1, 2, 3} 135.304, {1, 2, 4} 124.618, {1, 2, 5}
-- 124.618, {1, 1, 4} 126.220 us; 64 PEs {1, 2, 3} 118.402, {1, 2, 4} 118.408)
relay.SCATTER_CHUNKS = { { 16, 128 * 1024 }, { 20, 256 * 1024 } }
relay.SCATTER_FETCH = { { 1, 2, 4 }, { 1, 2, 3 }, { 1, 2, 2 }, { 1, 1, 1 } }
-- the UB buffers of the scatter relay's chains of gets (the root's server's fetch and
-- every reader): a chunk's short last get (and the root's share after it) no longer
-- waits for the long write before it (16 MiB, fetch / readers: 2 / 2 buffers 16 PEs
-- 118.391, 32 PEs 123.893, 64 PEs 131.070 us; 4 / 2 113.495, 122.523, 131.070; 4 / 4
-- 112.123, 121.711, 126.420; 4 / 8 112.056, 121.500, 126.209; 8 / 8 112.056, 121.500;
-- 3 / 2 at 32 PEs 126.340)
relay.SCATTER_BUFS = 8

-- relay.scatter_chunks(bytes) -> the scatter relay's chunks for bytes of data
function relay.scatter_chunks(bytes)
  local n = 1
  for _, r in ipairs(relay.SCATTER_CHUNKS) do n = math.max(n, math.min(r[1], bytes // r[2])) end
  return n
end

-- the most servers off the root's that gather sub-piece by sub-piece: more gather in
-- groups of the largest divisor of their count up to it (5 of 15 at 128 PEs), a group's
-- sub-pieces in one RoCE get from one of its servers, so a PE's gets a chunk fall from
-- 15 to 1 + 4 + 2 (16 MiB, 128 PEs, 16 chunks, {1, 2, 3} blocks: one by one 140.477 us,
-- groups of 5 135.304, of 3 138.017; with {1, 2, 4} blocks and 20 chunks 132.444, 119.747
-- and 129.470; 72 PEs, groups of 4, 115.847 against 117.567 in one)
relay.SCATTER_GROUP = 7
-- relay.scatter_group(others) -> the servers of a group of the scatter relay (a divisor
-- of the others)
function relay.scatter_group(others)
  if others <= relay.SCATTER_GROUP then return math.max(1, others) end
  for m = relay.SCATTER_GROUP, 2, -1 do
    if others % m == 0 then return m end
  end
  return others
end

-- relay.scatter_blocks(block_dim, dom) -> the scatter relay's fetch blocks for servers of
-- dom PEs ({on the root's server, scatter, gather}), or nil when block_dim is too few
function relay.scatter_blocks(block_dim, dom)
  for _, sf in ipairs(relay.SCATTER_FETCH) do
    if block_dim >= sf[2] + sf[3] + dom - 1 then return sf end
  end
end
-- the pieces a slice of a reducing server relay is summed and announced in (at most
-- SERVER_PIECES, each at least SERVER_PIECE_BYTES): the NIC starts on a slice's first
-- piece while its server still adds up the others; a smaller piece would cost its
-- alpha and its wait without the double-buffered get's overlap
relay.SERVER_PIECES = 8
relay.SERVER_PIECE_BYTES = 256 * 1024

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

-- relay.server_worth(name, bytes) -> true when op name's server relay pays for its
-- second step (a piece lands, is announced, then crosses the in-domain links): bytes (the
-- op's measure of SERVER_MIN) at least SERVER_MIN[name]
function relay.server_worth(name, bytes)
  return bytes >= relay.SERVER_MIN[name]
end

-- the outside PEs of local index i, rotated by PE pe's domain so that the domains start
-- apart: the sources a relayer of domain pe // m pulls, in its window's order
function relay.outside_of(pe, i, m, n)
  local list, g, mine = {}, n // m, pe // m
  for k = 1, g - 1 do list[#list + 1] = ((mine + k) % g) * m + i end
  return list
end

-- server relay: the outside PE of local index j whose shard is shard x (0-based) of the
-- window of PE q (relay.outside_of(q, j, m, n)[x + 1], without the list)
local function outside_at(q, j, x, m, n)
  return ((q // m + x + 1) % (n // m)) * m + j
end

-- server relay, NIC side: block b's pieces of the outside shards of my local index,
-- pulled over my NIC into my window by the RoCE engine (one descriptor a part, no UB
-- round trip on the core: the engine's queue keeps the next part's latency under the
-- current one's bytes), each announced to every PE of my domain (me too) once it has
-- landed (roce_quiet)
local function gather_nic(k, a, ub, b)
  local i, count = k.pe % a.dom, a.count
  local list = a.piece_lists[b]
  local first_pe = k.pe - i
  k:prof_start(F.REMOTE_PUT_GET)
  for idx = 1, #list do
    local first, n = list[idx][1], list[idx][2]
    while n > 0 do                                                  -- its run in each shard
      local x, off, len = shard_run(count, first, n)
      local q = outside_at(k.pe, i, x, a.dom, k.n_pes)
      k:signal_wait_until(sub(a.ready, q, 1), lab.CMP_GE, a.epoch)
      k:roce_get_nbi(sub(a.win, first, len), sub(a.input, off, len), ub, len, q, 0)
      first, n = first + len, n - len
    end
    k:roce_quiet(k.pe, ub, 0)                                       -- the piece has landed
    for d = 0, a.dom - 1 do
      k:signal_op(sub(a.fwd, i * a.nic + b, 1), (a.epoch - 1) * #list + idx, lab.SIGNAL_SET,
                  first_pe + (i + d) % a.dom)
    end
  end
  k:prof_end(F.REMOTE_PUT_GET)
end

-- relay.deal(len, unit, tn, share) -> part size, parts: how a server relay's tn blocks on
-- a peer cut an item of len elements (the peer's shard, a piece, or a piece's run in one
-- shard) for UB chunks of unit elements: parts of whole chunks, at least share chunks
-- each but for the last (one part when the item is less), at most tn parts
function relay.deal(len, unit, tn, share)
  if len <= 0 then return 0, 0 end
  local chunks = (len + unit - 1) // unit
  local parts = math.max(1, math.min(tn, chunks // share))
  local per = (chunks + parts - 1) // parts * unit
  return per, (len + per - 1) // per
end

-- relay.deal_turn(t, tn, turn, len, unit, share) -> per, parts, x0, turn: block t's parts
-- (of tn blocks) of an item of len elements (relay.deal) when the item's first part goes
-- to block turn: parts x0, x0 + tn, ... below parts, part x at x * per (per elements, the
-- last part what is left); and the turn of the next item. The parts go round robin over
-- the blocks from one item to the next, and a round of tn parts moves the next item's
-- first (largest) part on by one block, so that no block takes every largest part: a
-- block alone on a link leaves gaps (each chunk's latency), two share it. An empty item
-- has no parts and keeps the turn
function relay.deal_turn(t, tn, turn, len, unit, share)
  if len <= 0 then return 0, 0, 0, turn end
  local per, parts = relay.deal(len, unit, tn, share)
  return per, parts, (t - turn) % tn, (turn + parts + (parts % tn == 0 and 1 or 0)) % tn
end

-- server relay: the gets of elements [first, first + n) of PE q's window (the outside
-- shards of q's local index j laid end to end) into my output, one a shard they span
local function window_gets(k, a, ub, q, j, first, n)
  local count = a.count
  while n > 0 do
    local x, off, len = shard_run(count, first, n)
    local o = outside_at(q, j, x, a.dom, k.n_pes)
    op.get_pipelined(k, sub(a.output, o * count + off, len), sub(a.win, first, len), ub, len, q)
    first, n = first + len, n - len
  end
end

-- server relay: block st.t's parts (of st.tn on PE st.q) of the run [first, first + len)
-- of piece idx of q's NIC block b, dealt from st.turn; the piece's announcement waited
-- for before the first part any run of it gives the block (st.waited)
local function gather_run(k, a, ub, st, b, idx, first, len)
  local per, parts, x0
  per, parts, x0, st.turn = relay.deal_turn(st.t, st.tn, st.turn, len, st.unit, relay.SHARE_CHUNKS)
  for x = x0, parts - 1, st.tn do
    if not st.waited then
      k:prof_start(F.SIGNAL_WAIT)
      k:signal_wait_until(sub(a.fwd, st.j * a.nic + b, 1), lab.CMP_GE,
                          (a.epoch - 1) * #a.piece_lists[b] + idx)
      k:prof_end(F.SIGNAL_WAIT)
      st.waited = true
    end
    k:prof_start(F.REMOTE_PUT_GET)
    window_gets(k, a, ub, st.q, st.j, first + x * per, math.min(per, len - x * per))
    k:prof_end(F.REMOTE_PUT_GET)
  end
end

-- server relay: block st.t's parts of piece idx of PE st.q's NIC block b from q's window,
-- once announced (waited for only when the block has a part of it); st.by_shard: the
-- piece's run in each shard dealt as an item of its own
local function gather_piece(k, a, ub, st, b, idx)
  local piece, count = a.piece_lists[b][idx], a.count
  local first, n = piece[1], piece[2]
  st.waited = false
  if not st.by_shard then return gather_run(k, a, ub, st, b, idx, first, n) end
  while n > 0 do
    local _, _, len = shard_run(count, first, n)
    gather_run(k, a, ub, st, b, idx, first, len)
    first, n = first + len, n - len
  end
end

-- server relay: from PE q of my domain (local index j; q may be me), block t of tn on q:
-- my parts of q's shard, then of each piece q's NIC blocks announce, in the order they
-- land, dealt by relay.deal_turn in whole UB chunks of at least SHARE_CHUNKS; a shard
-- shorter than that is dealt by shard (a part never spans shards: one get each)
local function gather_from(k, a, ub, q, t, tn)
  local unit = op.fit(#ub // 2 * a.esize, a.esize)              -- op.get_pipelined's chunk
  local st = { q = q, j = q % a.dom, t = t, tn = tn, unit = unit, turn = 0, waited = false,
               by_shard = a.count < relay.SHARE_CHUNKS * unit }
  k:prof_start(F.SIGNAL_WAIT)
  k:signal_wait_until(sub(a.ready, q, 1), lab.CMP_GE, a.epoch)
  k:prof_end(F.SIGNAL_WAIT)
  k:prof_start(F.REMOTE_PUT_GET)
  local per, parts, x0
  per, parts, x0, st.turn = relay.deal_turn(t, tn, 0, a.count, unit, relay.SHARE_CHUNKS)
  for x = x0, parts - 1, tn do
    local lo = x * per
    local n = math.min(per, a.count - lo)
    op.get_pipelined(k, sub(a.output, q * a.count + lo, n), sub(a.input, lo, n), ub, n, q)
  end
  k:prof_end(F.REMOTE_PUT_GET)
  local lists = a.piece_lists
  for idx = 1, lists.most do
    for b = 0, a.nic - 1 do
      if lists[b][idx] then gather_piece(k, a, ub, st, b, idx) end
    end
  end
end

-- relay.gather_server(k, a): the kernel of an allgather server relay (a: the state
-- relay.gather_buffers set up, with input, output, epoch, ub_elems): announce my shard,
-- then NIC blocks, one block on my own shard and window, the rest spread over the other
-- PEs of my domain
function relay.gather_server(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  k:prof_start(F.SIGNAL_WAIT)
  for p = k.block, k.n_pes - 1, k.block_num do
    k:signal_op(sub(a.ready, k.pe, 1), a.epoch, lab.SIGNAL_SET, p)
  end
  k:prof_end(F.SIGNAL_WAIT)
  if k.block < a.nic then return gather_nic(k, a, ub, k.block) end
  if k.block == a.nic then return gather_from(k, a, ub, k.pe, 0, 1) end
  local r, peers = k.block - a.nic - 1, a.dom - 1
  local kk = r % peers + 1
  local tn = (k.block_num - a.nic - 1 - (kk - 1) + peers - 1) // peers
  local i = k.pe % a.dom
  gather_from(k, a, ub, k.pe - i + (i + kk) % a.dom, r // peers, tn)
end

-- server relay: the pieces of a slice (a.pieces of them, whole 32-byte blocks):
-- {first, n} of piece x (0-based)
local function spiece(a, x)
  local per = op.split(a.count, a.pieces, a.esize)
  local first = math.min(a.count, x * per)
  return first, math.min(per, a.count - first)
end

-- server relay: signal v (op) on sig at me, or (push: the others push onto my buffers)
-- at every PE of my server
local function announce(k, a, sig, v, how)
  if not a.push then return k:signal_op(sig, v, how, k.pe) end
  local first_pe = k.pe - k.pe % a.dom
  for d = 0, a.dom - 1 do k:signal_op(sig, v, how, first_pe + d) end
end

-- server relay, own block: my partials of my outside owners' slices into my server
-- buffer as bases, piece by piece, each announced to me (base) and counted at the
-- owner (sums)
local function reduce_own(k, a, ub)
  local i = k.pe % a.dom
  local owners = relay.outside_of(k.pe, i, a.dom, k.n_pes)
  k:prof_start(F.COPY_IN)
  for o, owner in ipairs(owners) do
    for x = 0, a.pieces - 1 do
      local first, n = spiece(a, x)
      if n > 0 then
        op.put_pipelined(k, sub(a.sbuf, (o - 1) * a.count + first, n),
                         sub(a.input, owner * a.count + first, n), ub, n, k.pe)
        k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
      end
      announce(k, a, sub(a.base, ((i * #owners) + o - 1) * a.pieces + x, 1), a.epoch, lab.SIGNAL_SET)
      k:signal_op(sub(a.sums, k.pe // a.dom * a.pieces + x, 1), 1, lab.SIGNAL_ADD, owner)
    end
  end
  k:prof_end(F.COPY_IN)
end

-- server relay, mover block: share t of tn of the pieces of PE dst's sums, dst = me when
-- pulling from q (its partials, once q is ready) or q when pushing to it (a.push: mine):
-- the partials of dst's outside owners' slices added onto dst's bases (atomic gets or
-- puts), each piece counted at its owner, then those of dst's own slice onto dst's output
local function reduce_move(k, a, ub, q, t, tn)
  local dst = a.push and q or k.pe
  local move = a.push and op.put_pipelined or op.get_pipelined
  local j = dst % a.dom
  local owners = relay.outside_of(dst, j, a.dom, k.n_pes)
  if not a.push then
    k:prof_start(F.SIGNAL_WAIT)
    k:signal_wait_until(sub(a.ready, q % a.dom, 1), lab.CMP_GE, a.epoch)
    k:prof_end(F.SIGNAL_WAIT)
  end
  k:prof_start(F.REMOTE_PUT_GET)
  k:set_atomic(a.atomic, a.dtype)
  for o, owner in ipairs(owners) do
    for x = t, a.pieces - 1, tn do
      local first, n = spiece(a, x)
      k:signal_wait_until(sub(a.base, (j * #owners + o - 1) * a.pieces + x, 1), lab.CMP_GE, a.epoch)
      if n > 0 then
        move(k, sub(a.sbuf, (o - 1) * a.count + first, n), sub(a.input, owner * a.count + first, n),
             ub, n, q)
        k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
      end
      k:signal_op(sub(a.sums, dst // a.dom * a.pieces + x, 1), 1, lab.SIGNAL_ADD, owner)
    end
  end
  k:signal_wait_until(sub(a.outb, j, 1), lab.CMP_GE, a.epoch * a.nic)
  for x = t, a.pieces - 1, tn do
    local first, n = spiece(a, x)
    if n > 0 then move(k, sub(a.output, first, n), sub(a.input, dst * a.count + first, n), ub, n, q) end
  end
  k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
  k:set_atomic_none()
  k:prof_end(F.REMOTE_PUT_GET)
end

-- server relay: add the n elements staged at at onto my output at first (atomic copy)
local function stage_add(k, a, ub, at, first, n)
  op.copy_gm(k, sub(a.output, first, n), sub(a.stage, at, n), n, ub)
  k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)      -- the UB is free again
end

-- server relay, NIC block b: my partial of my slice's pieces b, b + nic, ... into my
-- output as their bases (counted in outb), then, once every NIC block's bases are in,
-- items b, b + nic, ... of the (other server, piece) server sums from the PE of my local
-- index there: each fetched by the RoCE engine into my stage once the server's partials
-- are in, and added onto my output (MTE atomic copy) while the next one is fetched
local function reduce_nic(k, a, ub, b)
  local i, g = k.pe % a.dom, k.n_pes // a.dom
  local mine = k.pe // a.dom
  k:prof_start(F.COPY_IN)
  for x = b, a.pieces - 1, a.nic do
    local first, n = spiece(a, x)
    if n > 0 then
      local move = a.push and op.put_pipelined or op.get_pipelined     -- the symmetric side
      move(k, sub(a.output, first, n), sub(a.input, k.pe * a.count + first, n), ub, n, k.pe)
    end
  end
  k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
  announce(k, a, sub(a.outb, i, 1), 1, lab.SIGNAL_ADD)
  k:prof_end(F.COPY_IN)
  k:prof_start(F.REMOTE_PUT_GET)
  k:set_atomic(a.atomic, a.dtype)
  local prev_at, prev_first, prev_n = 0, 0, 0    -- the staged piece still to add on (n > 0)
  k:signal_wait_until(sub(a.outb, i, 1), lab.CMP_GE, a.epoch * a.nic)   -- every base is in
  for item = b, (g - 1) * a.pieces - 1, a.nic do -- (server, piece) items in turn
    local d, x = item // a.pieces + 1, item % a.pieces
    local srv = (mine - d) % g                   -- the server that has mine earliest first
    local relayer = srv * a.dom + i
    local o = (mine - srv) % g                   -- my place in the relayer's list
    assert(outside_at(relayer, i, o - 1, a.dom, k.n_pes) == k.pe)
    local first, n = spiece(a, x)
    k:signal_wait_until(sub(a.sums, srv * a.pieces + x, 1), lab.CMP_GE, a.epoch * a.dom)
    if n > 0 then                                -- RoCE engine into the stage, no core
      k:roce_get_nbi(sub(a.stage, (d - 1) * a.count + first, n),
                     sub(a.sbuf, (o - 1) * a.count + first, n), ub, n, relayer, 0)
    end
    if prev_n > 0 then stage_add(k, a, ub, prev_at, prev_first, prev_n) end  -- under this get
    k:roce_quiet(relayer, ub, 0)
    prev_at, prev_first, prev_n = (d - 1) * a.count + first, first, n
  end
  if prev_n > 0 then stage_add(k, a, ub, prev_at, prev_first, prev_n) end
  k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
  k:set_atomic_none()
  k:prof_end(F.REMOTE_PUT_GET)
end

-- relay.reduce_server(k, a): the kernel of a reduce_scatter server relay (a: the state
-- relay.reduce_buffers set up, with input, output, atomic, epoch, ub_elems): announce my
-- input to my server, then NIC blocks, one block on my own
-- partials, the rest spread over the other PEs of my server
function relay.reduce_server(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  local first_pe = k.pe - k.pe % a.dom
  k:prof_start(F.SIGNAL_WAIT)
  for d = k.block, a.dom - 1, k.block_num do
    k:signal_op(sub(a.ready, k.pe % a.dom, 1), a.epoch, lab.SIGNAL_SET, first_pe + d)
  end
  k:prof_end(F.SIGNAL_WAIT)
  if k.block < a.nic then return reduce_nic(k, a, ub, k.block) end
  if k.block == a.nic then return reduce_own(k, a, ub) end
  local r, peers = k.block - a.nic - 1, a.dom - 1
  local kk = r % peers + 1
  local tn = (k.block_num - a.nic - 1 - (kk - 1) + peers - 1) // peers
  local q = first_pe + (k.pe % a.dom + kk) % a.dom
  reduce_move(k, a, ub, q, r // peers, tn)
end

-- relay.gather_buffers(m, c, s, count) -> s: the server relay's fields and buffers of an
-- allgather of count elements a PE on c: the symmetric window (the outside shards of my
-- local index), flags and the pieces of each NIC block (relay.piece_lists); the op
-- allocates input (symmetric) and output
function relay.gather_buffers(m, c, s, count)
  local dom, g = relay.domains(c)
  s.server, s.dom, s.nic, s.chunk, s.rounds = true, dom, relay.NIC_BLOCKS, count, 1
  s.win = m:malloc(c.dtype, (g - 1) * count, "window")
  s.ready = m:malloc("int32", c.pes, "ready", "backed")           -- [p]: PE p's shard is readable
  s.fwd = m:malloc("int32", dom * s.nic, "fwd", "backed")          -- [i, b]: pieces of PE i's NIC block b
  s.piece_lists = relay.piece_lists({ count = count, esize = s.esize }, g - 1, s.nic)
  return s
end

-- relay.reduce_buffers(m, c, s, count, push) -> s: the server relay's fields and buffers
-- of a reduce_scatter of count-element slices on c: the symmetric server buffer (the
-- server's sums of the slices of my outside owners) and flags; the op allocates input
-- and output, the input symmetric (the others pull from it) or, push, the output (the
-- others push onto it)
function relay.reduce_buffers(m, c, s, count, push)
  local dom, g = relay.domains(c)
  s.server, s.dom, s.chunk, s.rounds = true, dom, count, 1
  s.pieces = math.max(1, math.min(relay.SERVER_PIECES, count * s.esize // relay.SERVER_PIECE_BYTES))
  s.nic = relay.NIC_BLOCKS
  if g > 2 and s.pieces < relay.SERVER_PIECES then
    s.nic = math.max(s.nic, math.min(relay.REDUCE_NIC_BLOCKS, c.block_dim - dom))
  end
  s.push = push
  s.sbuf = m:malloc(c.dtype, (g - 1) * count, "server")
  s.stage = m:alloc(c.dtype, (g - 1) * count, "stage")           -- the other servers' sums
  s.ready = m:malloc("int32", dom, "ready", "backed")            -- [j]: server PE j's input
  s.base = m:malloc("int32", dom * (g - 1) * s.pieces, "base", "backed") -- [j, o, x]: PE j's base
  s.sums = m:malloc("int32", g * s.pieces, "sums", "backed")      -- [S, x]: partials in at S
  s.outb = m:malloc("int32", dom, "outb", "backed")     -- [j]: PE j's NIC blocks' output bases
  return s
end

return relay
