-- broadcast: every PE ends with the root's input (root from c.root, default 0).
-- The CANN SHMEM performance guide's signal-and-copy shape (its section 3.6), one share of
-- the data per block: the root puts its input into its symmetric buffer chunk
-- by chunk (MTE put through UB), waits for each chunk to land (MTE3_S) and
-- signals it with magic + chunk_seq; every other PE waits for that signal
-- (signal_wait_until CMP_GE) and gets the chunk from the root into its output.
-- The root copies its input to its own output. Inputs beyond the symmetric
-- buffer run in rounds inside the one launch (barrier_all before it is reused).
-- On several servers (one die per card, A2: shmemlab.relay.server_fits) it runs the
-- scatter relay below, on A3 the card relay. Their output is symmetric (pieces are read
-- from it), their input too (the root's is read).
local lab = require("shmemlab")
local op = require("shmemlab.op")
local relay = require("shmemlab.relay")
local F = lab.frames

-- scatter relay: the rank of local index j among the PEs of the root's server but the
-- root's local index ir
local function hrank(j, ir) return j < ir and j or j - 1 end

-- the root copies its input into its own output, a share a block
local function root_copy(k, a, ub)
  local first, n = op.share(k, a.count, a.esize)
  k:prof_start(F.COPY_IN)
  if n > 0 then op.get_pipelined(k, a.output:sub(first, n), a.input:sub(first, n), ub, n, k.pe) end
  k:prof_end(F.COPY_IN)
end

-- the blocks after the nf fetch blocks read the other PEs' pieces, dealt out in turn:
-- reader(k, a, ub, pe, rank among that PE's readers, readers of that PE)
local function deal_readers(k, a, ub, nf, others, reader)
  local r = k.block - nf
  local tn = (k.block_num - nf - (r % #others) + #others - 1) // #others
  return reader(k, a, ub, others[r % #others + 1], r // #others, tn)
end

-- scatter relay (A2, several servers): chunk x of the data in one piece a local index j
-- (the root's too), each piece in one sub-piece a server off the root's (rank s: the
-- servers after the root's in turn). The root's server gets each piece from the root over
-- its links (the root holds its own). PE j of another server first gets its own
-- sub-piece of each piece j by the RoCE engine from PE j of the root's server (the
-- scatter), then the other sub-pieces from PE j of the servers that own them (the
-- allgather), so each server's NICs carry N / dom and every PE takes in N once; every PE
-- gets the other local indices' pieces from them over its links, a sub-piece at a time
-- as they are announced. The scatter of chunk x + 1 runs under the gather of chunk x.

-- scatter relay: wait until signal sig reaches the epoch (times per, a count of adds)
local function sawait(k, a, sig, per)
  k:prof_start(F.SIGNAL_WAIT)
  k:signal_wait_until(sig, lab.CMP_GE, a.epoch * (per or 1))
  k:prof_end(F.SIGNAL_WAIT)
end

-- scatter relay: server S's rank after the root's (0 .. g - 2 off the root's server)
local function srank(a, S) return (S - a.root // a.dom - 1) % (a.sub + 1) end

-- scatter relay: sub-piece s (nil: the whole piece) of piece j of chunk x: first, n
local function scpiece(a, x, j, s)
  local c0 = math.min(a.count, x * a.chunk)
  local clen = math.min(a.chunk, a.count - c0)
  local pper = op.split(clen, a.dom, a.esize)
  local first = c0 + math.min(clen, j * pper)
  local n = math.min(pper, c0 + clen - first)
  if not s then return first, n end
  local per = op.split(n, a.sub, a.esize)
  local lo = math.min(n, s * per)
  return first + lo, math.min(per, n - lo)
end

-- scatter relay: announce got[x, j, w] (w 0: my own sub-piece, 1: the rest) to the
-- other PEs of my server
local function sannounce(k, a, x, w)
  local j, first_pe = k.pe % a.dom, k.pe - k.pe % a.dom
  for d = 1, a.dom - 1 do
    k:signal_op(a.got:sub((x * a.dom + j) * 2 + w, 1), a.epoch, lab.SIGNAL_SET,
                first_pe + (j + d) % a.dom)
  end
end

-- scatter relay: the root's server splits the root's own piece of chunk x among its
-- other PEs (the root's links carry each byte once): share h of it, first, n
local function rshare(a, x, h)
  local first, n = scpiece(a, x, a.root % a.dom)
  local per = op.split(n, a.dom - 1, a.esize)
  local lo = math.min(n, h * per)
  return first + lo, math.min(per, n - lo)
end

-- scatter relay: share f of nf of {first, n}: first, n
local function sshare(a, first, n, f, nf)
  local per = op.split(n, nf, a.esize)
  local lo = math.min(n, f * per)
  return first + lo, math.min(per, n - lo)
end

-- scatter relay, a holder of the root's server (not the root), fetch block f of nf:
-- share f of my piece and of my share of the root's piece of every chunk from the root
-- over my link, one chain of gets for all the chunks (relay.get_marked), each chunk
-- counted (SIGNAL_ADD) on my server and on PE j and the root's local index of every
-- other server once it has landed
local function sroot_fetch(k, a, ub, f, nf)
  local j, g = k.pe % a.dom, k.n_pes // a.dom
  local function chunk(i)
    local x = i - 1
    local cf, cn = scpiece(a, x, j)
    local first, n = sshare(a, cf, cn, f, nf)
    local pf, pn = rshare(a, x, hrank(j, a.root % a.dom))
    local rfirst, rn = sshare(a, pf, pn, f, nf)
    return { { a.output:sub(first, n), a.input:sub(first, n), n, a.root },
             { a.output:sub(rfirst, rn), a.input:sub(rfirst, rn), rn, a.root } }
  end
  local function landed(i)
    local x = i - 1
    for d = 1, a.dom - 1 do
      k:signal_op(a.got:sub((x * a.dom + j) * 2 + 1, 1), 1, lab.SIGNAL_ADD,
                  k.pe - j + (j + d) % a.dom)
    end
    for S = 0, g - 1 do
      if S ~= k.pe // a.dom then
        k:signal_op(a.src:sub(x, 1), 1, lab.SIGNAL_ADD, S * a.dom + j)
        k:signal_op(a.src:sub(x, 1), 1, lab.SIGNAL_ADD, S * a.dom + a.root % a.dom)
      end
    end
  end
  k:prof_start(F.REMOTE_PUT_GET)
  k:signal_wait_until(a.ready, lab.CMP_GE, a.epoch)
  relay.get_marked(k, ub, relay.SCATTER_BUFS, a.chunks, chunk, landed)
  k:prof_end(F.REMOTE_PUT_GET)
end

-- scatter relay, PE j of a server off the root's, its scatter block: my own sub-piece of
-- each piece j from PE j of the root's server once its fetch has landed it (the root's
-- input when j is the root's local index, once every fetch of the root's server has
-- landed the chunk: paced with the other local indices, not ahead of them in bursts),
-- announced to PE j of the other such servers and to my server
local function sown(k, a, ub, o, no)
  local j, g, R = k.pe % a.dom, k.n_pes // a.dom, a.root // a.dom
  local sr, from = srank(a, k.pe // a.dom), R * a.dom + j
  local buf = from == a.root and a.input or a.output
  for x = o, a.chunks - 1, no do
    sawait(k, a, a.src:sub(x, 1), a.rfetch * (from == a.root and a.dom - 1 or 1))
    k:prof_start(F.REMOTE_PUT_GET)
    local first, n = scpiece(a, x, j, sr)
    if n > 0 then
      k:roce_get_nbi(a.output:sub(first, n), buf:sub(first, n), ub, n, from, 0)
      k:roce_quiet(from, ub, 0)
    end
    local base = sr - sr % a.m
    if a.ng > 1 then k:signal_op(a.have:sub(x * a.sub + sr, 1), a.epoch, lab.SIGNAL_SET, k.pe) end
    for i = 1, a.m - 1 do
      local S = (R + 1 + base + (sr - base + i) % a.m) % g
      k:signal_op(a.have:sub(x * a.sub + sr, 1), a.epoch, lab.SIGNAL_SET, S * a.dom + j)
    end
    sannounce(k, a, x, 0)
    k:prof_end(F.REMOTE_PUT_GET)
  end
end

-- scatter relay: the servers off the root's in groups of a.m ranks, whose sub-pieces
-- lie side by side; a server of rank r gets group G's sub-pieces (G not its own) in one
-- get from the member of G at index gpos(a, r, G) % a.m
local function gpos(a, r, G) return r < G * a.m and r or r - a.m end

-- scatter relay, gather block: a RoCE get of first, n from PE j of the server of rank r,
-- once sig has reached the epoch
local function sfrom(k, a, ub, x, r, sig, s, ns)
  local j, g = k.pe % a.dom, k.n_pes // a.dom
  sawait(k, a, sig)
  local first = scpiece(a, x, j, s)
  local lf, ln = scpiece(a, x, j, s + ns - 1)
  local n = lf + ln - first
  k:prof_start(F.REMOTE_PUT_GET)
  if n > 0 then
    k:roce_get_nbi(a.output:sub(first, n), a.output:sub(first, n), ub, n,
                   (a.root // a.dom + 1 + r) % g * a.dom + j, 0)
  end
  k:prof_end(F.REMOTE_PUT_GET)
end

-- scatter relay, PE j of a server off the root's, gather block f of nf: for chunks f, f +
-- nf, ... the other sub-pieces of my group from PE j of its servers as they announce
-- them, then (when there are several groups) each other group's sub-pieces in one get
-- from the member that serves me, once it holds them all (grp[x, G]); announced to my
-- server once all have landed
local function sgather(k, a, ub, f, nf)
  local j, g = k.pe % a.dom, k.n_pes // a.dom
  local sr = srank(a, k.pe // a.dom)
  local G0, m = sr // a.m, a.m
  for x = f, a.chunks - 1, nf do
    for i = 1, m - 1 do
      local s = G0 * m + (sr + i) % m
      sfrom(k, a, ub, x, s, a.have:sub(x * a.sub + s, 1), s, 1)
    end
    if a.ng > 1 then sawait(k, a, a.have:sub(x * a.sub + sr, 1)) end     -- my own landed
    k:prof_start(F.REMOTE_PUT_GET)
    if m > 1 then k:roce_quiet(k.pe, ub, 0) end
    for r = 0, g - 2 do                        -- the ranks I serve my group's sub-pieces to
      if r // m ~= G0 and gpos(a, r, G0) % m == sr % m then
        k:signal_op(a.grp:sub(x * a.ng + G0, 1), a.epoch, lab.SIGNAL_SET,
                    (a.root // a.dom + 1 + r) % g * a.dom + j)
      end
    end
    k:prof_end(F.REMOTE_PUT_GET)
    for i = 1, a.ng - 1 do
      local G = (G0 + i) % a.ng
      sfrom(k, a, ub, x, G * m + gpos(a, sr, G) % m, a.grp:sub(x * a.ng + G, 1), G * m, m)
    end
    k:prof_start(F.REMOTE_PUT_GET)
    if a.ng > 1 then k:roce_quiet(k.pe, ub, 0) end
    sannounce(k, a, x, 1)
    k:prof_end(F.REMOTE_PUT_GET)
  end
end

-- scatter relay, reader: part w of PE q's piece of chunk x as a reader reads it, first,
-- n, and the got flag to wait for first (nil: none). On the root's server, q's piece (w
-- 0) and q's share of the root's piece (1), both announced by q's fetch; elsewhere q's
-- own sub-piece (w 0), then the rest of the piece before it (1) and after it (2)
local function spart(a, q, x, w, on_root, sr)
  local j = q % a.dom
  local flag = a.got:sub((x * a.dom + j) * 2 + (on_root and 1 or math.min(w, 1)), 1)
  local pfirst, pn = scpiece(a, x, j)
  if on_root then
    if w == 0 then return pfirst, pn, flag end
    return rshare(a, x, hrank(j, a.root % a.dom))
  end
  local first, n = scpiece(a, x, j, sr)
  if w == 0 then return first, n, flag end
  if w == 1 then return pfirst, first - pfirst, flag end
  return first + n, pfirst + pn - first - n
end

-- scatter relay, reader block: share t of tn of PE q's piece of every chunk (q of my
-- server, not the root), a part as q announces it (spart), all in one chain of gets
-- (relay.get_chain: no drain between the parts)
local function sreader(k, a, ub, q, t, tn)
  local on_root = k.pe // a.dom == a.root // a.dom
  local sr, per = srank(a, k.pe // a.dom), on_root and 2 or 3
  k:prof_start(F.REMOTE_PUT_GET)
  relay.get_chain(k, ub, relay.SCATTER_BUFS, a.chunks * per, function(i)
    local x, w = (i - 1) // per, (i - 1) % per
    local first, n, flag = spart(a, q, x, w, on_root, sr)
    if flag then                               -- the wait in a frame of its own
      k:prof_end(F.REMOTE_PUT_GET)
      sawait(k, a, flag, on_root and a.rfetch)
      k:prof_start(F.REMOTE_PUT_GET)
    end
    first, n = sshare(a, first, n, t, tn)
    return a.output:sub(first, n), a.output:sub(first, n), n, q
  end)
  k:prof_end(F.REMOTE_PUT_GET)
end

-- scatter relay: the root announces its input to its server and copies it out; a
-- holder's first blocks fetch, the others read the other PEs of its server
local function kernel_scatter(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  local j, first_pe, S = k.pe % a.dom, k.pe - k.pe % a.dom, k.pe // a.dom
  local on_root = S == a.root // a.dom
  if k.pe == a.root then
    for p = first_pe + k.block, first_pe + a.dom - 1, k.block_num do
      if p ~= k.pe then k:signal_op(a.ready, a.epoch, lab.SIGNAL_SET, p) end
    end
    return root_copy(k, a, ub)
  end
  local nf = on_root and a.rfetch or a.own + a.gather
  if on_root then
    if k.block < nf then return sroot_fetch(k, a, ub, k.block, nf) end
  elseif k.block < a.own then
    return sown(k, a, ub, k.block, a.own)
  elseif k.block < nf then
    return sgather(k, a, ub, k.block - a.own, a.gather)
  end
  local others = {}
  for d = 1, a.dom - 1 do
    local q = first_pe + (j + d) % a.dom
    if q ~= a.root then others[#others + 1] = q end
  end
  deal_readers(k, a, ub, nf, others, sreader)
end

-- scatter relay: the input and output symmetric, the flags
local function setup_scatter(m, c, s)
  local dom, g = relay.domains(c)
  s.scatter, s.dom, s.sub, s.rounds = true, dom, g - 1, 1
  s.m = relay.scatter_group(g - 1)
  s.ng = (g - 1) // s.m
  local sf = relay.scatter_blocks(c.block_dim, dom)
  s.rfetch, s.own, s.gather = sf[1], sf[2], sf[3]
  s.chunks = relay.scatter_chunks(c.count * s.esize)
  s.chunk = op.split(c.count, s.chunks, s.esize)
  op.fit_ub(c, s)
  s.input = op.fill_input(m:malloc(c.dtype, c.count, "input"), c.dtype)
  s.output = m:malloc(c.dtype, c.count, "output")
  s.ready = m:malloc("int32", 8, "ready", "backed")                 -- the root's input
  s.got = m:malloc("int32", s.chunks * dom * 2, "got", "backed")     -- [x, j, w]: j's own / rest
  s.have = m:malloc("int32", s.chunks * s.sub, "have", "backed")     -- [x, s]: sub-piece s landed
  s.src = m:malloc("int32", s.chunks, "src", "backed")               -- [x]: the root's server has x
  s.grp = m:malloc("int32", s.chunks * s.ng, "grp", "backed")         -- [x, G]: group G's sub-pieces
  s.expect = m:host(c.dtype, c.count, "expect"):copy(s.input:on(s.root))
  s.epoch = 0
  return s
end

-- card relay (A3): the holders are the dies off the root's card; piece h of chunk x
-- (cpiece) belongs to holder h, the pieces of one parity side by side. The source of a
-- holder's pieces is the die of its parity on the root's card: the root itself (its
-- input), or the root's card-mate, which first gets runs of those pieces from the root
-- over SIO (src[x]). A holder's first block gets its own piece of each chunk from its
-- source over its port, in chunk order (so the root card's ports send one chunk at a
-- time), and announces it (have[x] counts) to the holders of its parity and, for the
-- root's parity, to the root's card-mate; its other port blocks get the pieces of the
-- other holders of its parity once a chunk's are all announced; each port block counts
-- a chunk done on the card-mate (full[x]), whose SIO blocks then get that parity's run of
-- the chunk in one piece each. Every block chains its gets over the chunks through the
-- UB buffers (relay.get_marked). So the data leaves the root's card once (half a
-- port), and each piece enters each other card once.

-- card relay: the holder rank of die q off the root's card: parity first (the pieces of
-- one parity lie side by side in a chunk), then its card among the cards after the root's
local function crank(a, q)
  local cards = a.n // 2
  return q % 2 * (cards - 1) + (q // 2 - a.R - 1) % cards
end

-- card relay: where rank r's piece starts in a chunk of clen elements: the ranks of
-- parity 0 first, each a piece of parity 0's share (a.share0 of the chunk), then those of
-- parity 1, each a piece of the rest
local function cpos(a, clen, r)
  local P = a.holders // 2
  local e = op.split(math.floor(clen * a.share0), P, a.esize)
  local o = op.split(math.max(0, clen - e * P), P, a.esize)
  return math.min(clen, r <= P and r * e or P * e + (r - P) * o)
end

-- card relay: ranks [lo, hi) of chunk x (a run of pieces): first, n
local function crun(a, x, lo, hi)
  local c0 = a.cbase[x + 1]
  local clen = a.cbase[x + 2] - c0
  local first = cpos(a, clen, lo)
  return c0 + first, cpos(a, clen, hi) - first
end

-- card relay: piece h of chunk x: first, n
local function cpiece(a, x, h) return crun(a, x, h, h + 1) end

-- card relay: the offsets 0..n - 1 in the order a holder visits them in chunk x: 0 first,
-- the others sorted by a hash of (offset, x). The same order for every holder, so that at
-- the same place in their lists the holders read from as many different cards as there
-- are; scrambled (not 1, 2, 3 ...) so that a holder running one get behind another does
-- not read the same card as it at the next get too (with 1, 2, 3 ... it would, and their
-- blocks pile up in convoys on a few cards), and redrawn each chunk
local function card_order(n, x)
  local order, key = {}, {}
  for i = 0, n - 1 do
    local h = ((i + x * relay.CARD_BCAST_ORDER[1]) * 2654435761 + relay.CARD_BCAST_ORDER[2])
        % 4294967296
    h = ((h ~ (h >> 15)) * 2246822519) % 4294967296
    order[i + 1], key[i] = i, i == 0 and -1 or h ~ (h >> 13)
  end
  table.sort(order, function(u, v) return key[u] < key[v] end)
  return order
end

-- card relay: the holders of parity p but die skip, in chunk x's order (card_order) of
-- the cards off the root's card counted from me's
local function parity_holders(a, me, p, skip, x)
  local list, cards = {}, a.n // 2
  local at = (me // 2 - a.R - 1) % cards              -- me's card among the others
  for _, i in ipairs(card_order(cards - 1, x or 0)) do
    local q = ((a.R + 1 + (at + i) % (cards - 1)) % cards) * 2 + p
    if q ~= skip then list[#list + 1] = q end
  end
  return list
end

-- card relay: the items of list that block b of nb takes in chunk x: the items of every
-- chunk in turn, dealt out to the blocks in that order
local function deal(list, x, b, nb)
  local mine = {}
  for i = 0, #list - 1 do
    if (x * #list + i) % nb == b then mine[#mine + 1] = list[i + 1] end
  end
  return mine
end

-- card relay: a block's gets, chunk by chunk, in one chain through the UB buffers
-- (relay.get_marked): group(x) waits for what chunk x needs and returns its
-- transfers {dst, src, count, pe}; mark(x), when given, runs once they have landed (the
-- next chunk's first get already issued: ahead 1)
local function stream(k, a, ub, group, mark)
  k:prof_start(F.REMOTE_PUT_GET)
  relay.get_marked(k, ub, a.bufs, a.chunks, function(i) return group(i - 1) end,
                   function(i) if mark then mark(i - 1) end end, 1)
  k:prof_end(F.REMOTE_PUT_GET)
end

-- card relay: wait inside a stream, in its REMOTE_PUT_GET frame (a frame of its own
-- would drain the profiled die's pipes mid-chain at every wait)
local function swait(k, sig, v)
  k:signal_wait_until(sig, lab.CMP_GE, v)
end

-- card relay: the transfers of the pieces (x, j), j in list, from die from(j)'s buffer
-- buf, once (when need) need pieces of chunk x have been announced (have[x] counts them)
local function gets(k, a, x, list, from, buf, need)
  local out = {}
  if need and #list > 0 then swait(k, a.have:sub(x, 1), a.epoch * need) end
  for _, j in ipairs(list) do
    local first, n = cpiece(a, x, crank(a, j))
    out[#out + 1] = { a.output:sub(first, n), buf:sub(first, n), n, from(j) }
  end
  return out
end

-- card relay, a holder's first block: my own piece of each chunk, in chunk order, from my
-- source (the root card's die of my parity), announced to the other holders of my parity,
-- for the root's parity to the root's card-mate, and counted on my card-mate (full[x])
local function card_own(k, a, ub)
  local me = k.pe
  local readers = parity_holders(a, me, me % 2, me)
  if me % 2 == a.root % 2 then readers[#readers + 1] = a.root ~ 1 end
  local src = a.R * 2 + me % 2
  local buf = src == a.root and a.input or a.output
  stream(k, a, ub, function(x)
    if src ~= a.root then swait(k, a.src:sub(x, 1), a.epoch) end
    return gets(k, a, x, { me }, function() return src end, buf)
  end, function(x)
    for _, d in ipairs(readers) do k:signal_op(a.have:sub(x, 1), 1, lab.SIGNAL_ADD, d) end
    k:signal_op(a.full:sub(x, 1), 1, lab.SIGNAL_ADD, me ~ 1)
  end)
end

-- card relay, a holder's other port blocks (b of nb): the pieces of the other holders of
-- my parity, chunk by chunk, each chunk's counted on my card-mate (full[x])
local function card_port(k, a, ub, b, nb)
  local me = k.pe
  local need = a.n // 2 - 2                            -- the others of my parity
  stream(k, a, ub, function(x)
    return gets(k, a, x, deal(parity_holders(a, me, me % 2, me, x), x, b, nb),
                function(j) return j end, a.output, need)
  end, function(x)
    k:signal_op(a.full:sub(x, 1), 1, lab.SIGNAL_ADD, me ~ 1)
  end)
end

-- card relay, a holder's SIO blocks (b of nb): my share of the other parity's pieces of
-- each chunk (side by side) from my card-mate, once all its port blocks have them
local function card_sio(k, a, ub, b, nb)
  local mate, p, half = k.pe ~ 1, (k.pe ~ 1) % 2, k.block_num - nb
  local cards = a.n // 2
  stream(k, a, ub, function(x)
    swait(k, a.full:sub(x, 1), a.epoch * half)
    local first, n = crun(a, x, p * (cards - 1), (p + 1) * (cards - 1))
    local per = op.split(n, nb, a.esize)
    local lo = math.min(n, b * per)
    local len = math.min(per, n - lo)
    return len > 0 and { { a.output:sub(first + lo, len), a.output:sub(first + lo, len), len,
                           mate } } or {}
  end)
end

-- card relay, the root's card-mate: its port blocks get the pieces of the root's parity
-- from their holders; its SIO blocks get runs of its own parity's pieces from the root,
-- each announced to its holder (src[x])
local function card_mate(k, a, ub, half)
  local root, me = a.root, k.pe
  if k.block < half then
    local list = parity_holders(a, me, root % 2, -1)
    return stream(k, a, ub, function(x)
      return gets(k, a, x, deal(list, x, k.block, half), function(j) return j end, a.output,
                  #list)
    end)
  end
  local b, nb, P = k.block - half, k.block_num - half, a.n // 2 - 1
  local lo, hi = b * P // nb, (b + 1) * P // nb          -- my run of ranks of my parity
  local run = {}
  for _, j in ipairs(parity_holders(a, me, me % 2, -1)) do
    local r = crank(a, j) - me % 2 * P
    if r >= lo and r < hi then run[#run + 1] = j end
  end
  stream(k, a, ub, function(x)
    local first, n = crun(a, x, me % 2 * P + lo, me % 2 * P + hi)
    return n > 0 and { { a.output:sub(first, n), a.input:sub(first, n), n, root } } or {}
  end, function(x)
    for _, j in ipairs(run) do k:signal_op(a.src:sub(x, 1), a.epoch, lab.SIGNAL_SET, j) end
  end)
end

-- card relay, the root: its first CARD_COPY_BLOCKS blocks copy its input into its output
-- (more would take the HBM bandwidth its port and SIO reads need)
local function card_root_copy(k, a, ub)
  local nb = math.min(k.block_num, relay.CARD_COPY_BLOCKS)
  if k.block >= nb then return end
  local per = op.split(a.count, nb, a.esize)
  local first = math.min(a.count, k.block * per)
  local n = math.min(per, a.count - first)
  k:prof_start(F.COPY_IN)
  op.get_pipelined(k, a.output:sub(first, n), a.input:sub(first, n), ub, n, k.pe)
  k:prof_end(F.COPY_IN)
end

-- card relay: the root copies its input out, its card-mate relays, the holders fetch
local function kernel_card(k, a)
  local ub = k:ub(a.dtype, a.ub_elems)
  local half = k.block_num - a.sio_blocks
  if k.pe == a.root then
    return card_root_copy(k, a, ub)
  end
  if k.pe // 2 == a.R then
    card_mate(k, a, ub, half)
  elseif k.block == 0 then
    card_own(k, a, ub)
  elseif k.block < half then
    card_port(k, a, ub, k.block - 1, half - 1)
  else
    card_sio(k, a, ub, k.block - half, k.block_num - half)
  end
end

-- card relay: the first element of each of n chunks, and count last
local function card_chunks(count, esize, n)
  local per, base = op.split(count, n, esize), {}
  for x = 0, n do base[x + 1] = math.min(count, x * per) end
  return base
end

-- card relay: parity 0's share of a chunk. The other parity's pieces cross SIO to the
-- root's card-mate before its holders can take them, so its exchange starts a chunk's
-- run over SIO later (its run of a chunk: s_o / C of the data at sio_GBps), and the
-- root's parity's SIO runs wait on it. The root's parity takes the larger share, by just
-- that lag in port time (the port's read rate: hccs_GBps x hccs_read_eff):
-- s_r - s_o = s_o r with r = port / (C sio), so s_r = (1 + r) / (2 + r)
local function card_share(p, chunks, root_parity)
  local r = p.hccs_GBps * p.hccs_read_eff / (chunks * p.sio_GBps)
  local s_root = (1 + r) / (2 + r)
  return root_parity == 0 and s_root or 1 - s_root
end

-- card relay: the input and output symmetric, the flags
local function setup_card(m, c, s)
  s.card, s.rounds, s.n, s.R = true, 1, c.pes, s.root // 2
  s.holders = c.pes - 2
  s.chunks = math.max(1, math.min(relay.CARD_BCAST_CHUNKS,
                                  c.count * s.esize // relay.CARD_BCAST_CHUNK_BYTES))
  s.cbase = card_chunks(c.count, s.esize, s.chunks)
  s.chunk = s.cbase[2]
  s.bufs = c.buffers or relay.CARD_BUFFERS
  s.sio_blocks = math.max(1, c.block_dim // relay.CARD_BCAST_SIO)
  s.share0 = card_share(c.profile, s.chunks, s.root % 2)
  op.fit_ub(c, s)
  s.input = op.fill_input(m:malloc(c.dtype, c.count, "input"), c.dtype)
  s.output = m:malloc(c.dtype, c.count, "output")
  s.have = m:malloc("int32", s.chunks, "have", "backed")           -- [x]: pieces announced
  s.src = m:malloc("int32", s.chunks, "src", "backed")             -- [x]: my source has mine
  s.full = m:malloc("int32", s.chunks, "full", "backed")           -- [x]: mate's blocks done
  s.expect = m:host(c.dtype, c.count, "expect"):copy(s.input:on(s.root))
  s.epoch = 0
  return s
end

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
    [F.FINALIZE] = "server and card relays: the gets land in the (symmetric) output itself: no "
      .. "copy-out",
    [F.SIGNAL_WAIT] = "card relay: its waits sit inside the frame of its chained gets (a frame "
      .. "of their own would drain the profiled die's pipes mid-chain)",
  },

  describe = function(c, s)
    local what = s.card and "card relay: root %d's chunks in one piece a die off its card, each "
        .. "from the root's card over the holder's port in chunk order (the root's card-mate "
        .. "first gets its parity's over SIO), spread over the ports by parity, then over SIO "
        .. "a parity's run a chunk"
      or s.scatter and "scatter relay: root %d's chunks in one piece a local index, each piece "
        .. "over the root's links into its server and in one sub-piece a server by RoCE engine "
        .. "gets (the scatter), then the other sub-pieces from their servers (the allgather), "
        .. "spread over the links in each"
      or "root %d stages chunks + signals magic + chunk_seq, the others wait (CMP_GE) and get"
    return { algorithm = string.format(what, c.root), chunk_elems = s.chunk,
             ub_bytes = s.ub_bytes, cores = c.block_dim }
  end,

  payload = op.elems_payload,
  tune = op.tune({ op.KNOB_BLOCK_DIM, op.KNOB_UB_BYTES }),

  setup = function(m, c)
    local s = op.state(c, { root = op.pe_option(c.root or 0, "root", c.pes), magic = 0 })
    local fits = relay.server_fits(c, 2 * c.count, s.esize)
      and relay.scatter_blocks(c.block_dim, relay.domains(c)) ~= nil
    local card = relay.card_fits(c, 2 * c.count, s.esize) and c.pes // 2 >= 3
      and c.block_dim >= 4
    local mode = relay.mode(c, "broadcast", fits or card)
    if relay.take(mode, card, c.count * s.esize >= relay.CARD_BCAST_MIN) then
      return setup_card(m, c, s)
    end
    if relay.take(mode, fits, relay.server_worth("broadcast", c.count * s.esize)) then
      return setup_scatter(m, c, s)
    end
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
    if s.scatter or s.card then
      s.epoch = s.epoch + 1
      return op.launch(m, c, s, "broadcast", s.card and kernel_card or kernel_scatter)
    end
    local results = op.launch(m, c, s, "broadcast", kernel)
    s.magic = s.magic + s.seqs          -- above every magic + chunk_seq of this launch
    return results
  end,

  check = op.check_output,
}
