-- shmemlab.bound -- the lower bound of an operator's kernel latency on a topology, and the
-- physical peak bandwidth a PE can drive. One module, one function per op; the baselines
-- share their op's bound (they do the same work).
--
-- Model (the resources of the engine, from the SoC profile only):
--   * classes of path between two PEs: local; sio (two dies of one card, dies_per_card);
--     hccs (the same supernode: a directed mesh link per pair, or with hccs_switch one
--     out-port and one in-port per PE); rdma (different supernodes: one NIC out and one in
--     per PE). supernode_dies (0 or absent: pes_per_server) says which PEs reach each other
--     without RDMA.
--   * bandwidth of a resource, one way: hccs_GBps * max(hccs_read_eff, hccs_write_eff) (a
--     designer may choose push or pull: the better direction is the bound), sio_GBps,
--     rdma_GBps; hbm_GBps for every byte read from or written to a PE's GM.
--   * alpha of a class: local_alpha_ns, sio_alpha_ns, hccs_alpha_ns, rdma_alpha_ns; a step
--     pays the slowest alpha of the classes it uses, local GM included (every op reads or
--     writes it).
-- A bound is the smaller of two design families, each a valid lower bound on its designs:
--   direct (one step: every byte goes straight to the PE that needs it):
--     max over resources of load / bandwidth, the loads of the op's direct traffic matrix,
--     plus one alpha of the slowest class the matrix uses;
--   relay (two or more dependent steps: bytes forwarded, combined or split over paths):
--     max of the cut bounds no routing escapes -- bytes a PE must receive (send) over its
--     whole ingress (egress), all bytes that must be transmitted over all ingress, and for
--     each level of groups, cards (dies_per_card > 1, more than one card in the job) and
--     domains (more than one supernode or server), the bytes that must enter (leave) a group
--     over the ports that reach outside it -- plus two alphas (the slowest class, then the
--     fastest remote one).
--     A card's outside ports are its dies' HCCS switch ports (or mesh links) and, when the
--     job spans domains, their NICs: SIO carries only bytes already on the card, so what a
--     card needs from outside crosses its ports once at least, whichever die takes it in.
--     A domain's are its PEs' NICs. For a group of m of the n PEs (s a shard or slice, N
--     the data, r the root; MoE: one row per token and group it must reach):
--       allgather       in (n - m) s (each outside shard once), out m s
--       reduce_scatter  in m s (a partial slice per member), out (n - m) s
--       alltoall        in and out m (n - m) s
--       allreduce       in and out N; and 2 (g - 1) N crossings among the g groups of a
--                       level in all, over all their ports (one-way gossip among g nodes
--                       needs 2g - 2 messages; a group's inside is free)
--       broadcast       in N when r is outside, out N when r is inside
--       dispatch        in: tokens from outside with a destination inside, x row bytes;
--                       out: tokens of the group with a destination outside (combine: the
--                       reverse)
--     On A3 (two dies a card, one 196 GB/s switch port a die) a 16-die allgather of 16 MiB
--     shards is bound by 14 shards over the card's two ports: 717.43 us, where one die's
--     SIO + port would give 649.5 and its own port alone (the direct design) 1434.
-- Both families also pay the PE's HBM traffic (bytes it must read and write) over hbm_GBps.
-- Compute (reductions) and the MTE setup are not charged: the bound stays below any design.

local M = {}

M.FIELDS = { "pes_per_server", "dies_per_card", "hccs_switch", "hccs_GBps", "hccs_read_eff",
  "hccs_write_eff", "sio_GBps", "rdma_GBps", "hbm_GBps", "local_alpha_ns", "sio_alpha_ns",
  "hccs_alpha_ns", "rdma_alpha_ns", "supernode_dies" }

local CLASSES = { "local", "sio", "hccs", "rdma" }

-- bound.domain_pes(profile) -> the PEs that reach each other without RDMA: a supernode's
-- switch fabric (supernode_dies), else a server (pes_per_server); the engine's sli_domain
function M.domain_pes(p)
  return (p.supernode_dies or 0) > 0 and p.supernode_dies or p.pes_per_server
end

-- topology(profile, n) -> t: the classes, bandwidths and alphas of n PEs on profile
local function topology(p, n)
  for _, f in ipairs(M.FIELDS) do
    if f ~= "supernode_dies" and f ~= "hccs_switch" and type(p[f]) ~= "number" then
      error(string.format("bad argument #1 to 'bound' (profile field %s must be a number)", f), 3)
    end
  end
  local t = { n = n, pps = p.pes_per_server, dpc = math.max(1, p.dies_per_card),
    sn = M.domain_pes(p),
    switch = p.hccs_switch and true or false,
    hbm = p.hbm_GBps,
    GBps = { sio = p.sio_GBps, rdma = p.rdma_GBps,
             hccs = p.hccs_GBps * math.max(p.hccs_read_eff, p.hccs_write_eff) },
    nominal = { sio = p.sio_GBps, rdma = p.rdma_GBps, hccs = p.hccs_GBps },
    alpha = { ["local"] = p.local_alpha_ns / 1e3, sio = p.sio_alpha_ns / 1e3,
              hccs = p.hccs_alpha_ns / 1e3, rdma = p.rdma_alpha_ns / 1e3 } }
  return t
end

-- the class of path from PE a to PE b
local function class(t, a, b)
  if a == b then return "local" end
  if a // t.sn ~= b // t.sn then return "rdma" end
  if t.dpc > 1 and a // t.dpc == b // t.dpc then return "sio" end
  return "hccs"
end

-- the resources a transfer a -> b of class c loads: up to two keys (kind * n + pe, or a
-- mesh link 5n + a*n + b); res_name(t, key) names one
local function resources(t, a, b, c)
  local n = t.n
  if c == "hccs" and not t.switch then return 5 * n + a * n + b end
  if c == "hccs" then return a, n + b end
  if c == "sio" then return 2 * n + a end
  return 3 * n + a, 4 * n + b
end

local KINDS = { "HCCS out-port of PE%d", "HCCS in-port of PE%d", "SIO of PE%d",
  "RDMA NIC out of PE%d", "RDMA NIC in of PE%d" }
local KIND_CLASS = { "hccs", "hccs", "sio", "rdma", "rdma" }

-- the name and bandwidth of a resource key
local function res_name(t, key)
  local n = t.n
  if key >= 5 * n then
    local a, b = (key - 5 * n) // n, (key - 5 * n) % n
    return string.format("HCCS link PE%d->PE%d", a, b), t.GBps.hccs
  end
  local kind = key // n + 1
  return string.format(KINDS[kind], key % n), t.GBps[KIND_CLASS[kind]]
end

-- ingress (or egress: the same, links being symmetric) bandwidth of PE p at rates (nominal
-- or effective): one SIO (shared by the PE's siblings), a mesh link per HCCS peer or one
-- switch port, one NIC; the count of peers per class; and the part that reaches beyond the
-- PE's card (all of it but the SIO)
local function port_GBps(t, p, rates)
  local count = { sio = 0, hccs = 0, rdma = 0 }
  for q = 0, t.n - 1 do
    local c = class(t, p, q)
    if c ~= "local" then count[c] = count[c] + 1 end
  end
  local hccs = t.switch and math.min(1, count.hccs) or count.hccs
  local off_card = hccs * rates.hccs + math.min(1, count.rdma) * rates.rdma
  return math.min(1, count.sio) * rates.sio + off_card, count, off_card
end

-- the slowest and the fastest remote alpha among the classes of a job
local function alphas(t, used)
  local hi, lo = t.alpha["local"], math.huge
  for _, c in ipairs(CLASSES) do
    if used[c] then hi = math.max(hi, t.alpha[c]) end
    if used[c] and c ~= "local" then lo = math.min(lo, t.alpha[c]) end
  end
  return hi, lo < math.huge and lo or t.alpha["local"]
end

-- the HBM term: max over PEs of hbm(p) bytes / hbm_GBps
local function hbm_term(t, hbm)
  local best = { us = 0, what = "nothing to move" }
  for p = 0, t.n - 1 do
    local bytes = hbm(p)
    local us = bytes / t.hbm / 1e3
    if us > best.us then
      best = { us = us, bytes = bytes, GBps = t.hbm, what = string.format("HBM of PE%d", p) }
    end
  end
  return best
end

-- direct family: traffic(a, b) bytes for every pair; the busiest resource, the slowest class
local function direct(t, traffic)
  local load, used = {}, {}
  for a = 0, t.n - 1 do
    for b = 0, t.n - 1 do
      local bytes = a ~= b and traffic(a, b) or 0
      if bytes > 0 then
        local c = class(t, a, b)
        used[c] = true
        local k1, k2 = resources(t, a, b, c)
        load[k1] = (load[k1] or 0) + bytes
        if k2 then load[k2] = (load[k2] or 0) + bytes end
      end
    end
  end
  local best, key = { us = 0, what = "no remote bytes" }, nil
  for k, bytes in pairs(load) do
    local _, GBps = res_name(t, k)
    local us = bytes / GBps / 1e3
    if us > best.us or (us == best.us and k < key) then
      best, key = { us = us, bytes = bytes, GBps = GBps }, k
    end
  end
  if key then best.what = res_name(t, key) end
  return best, used
end

-- the groups a relay design must feed from outside: cards (more than one die per card and
-- more than one card: whatever enters a card crosses its dies' HCCS ports or links and
-- NICs, the SIO carrying only bytes already on the card) and domains (more than one:
-- whatever enters a supernode or server crosses its NICs); each level {size =, what =,
-- unit =, GBps = function(first, size)}: the groups are the PEs first .. first + size - 1
local function levels(t)
  local list = {}
  if t.dpc > 1 and t.n > t.dpc then
    list[#list + 1] = { size = t.dpc, unit = "card",
      what = (t.switch and "HCCS switch ports" or "HCCS links")
        .. (t.n > t.sn and " and RDMA NICs" or ""),
      GBps = function(first, size)
        local bw = 0
        for p = first, first + size - 1 do bw = bw + select(3, port_GBps(t, p, t.GBps)) end
        return bw
      end }
  end
  if t.n > t.sn then
    list[#list + 1] = { size = t.sn, unit = t.sn == t.pps and "server" or "supernode",
      what = "RDMA NICs",
      GBps = function(_, size) return size * t.GBps.rdma end }
  end
  return list
end

-- relay family: the cut bounds of need = {inb(p), outb(p), total, cut_in(first, size, gs),
-- cut_out(first, size, gs), across(groups)} (the bytes that must enter or leave the group
-- of PEs first .. first + size - 1 of a level whose groups hold gs PEs; the bytes that must
-- cross between the groups of a level in all, over all their ports)
local function relay(t, need)
  local best = { us = 0, what = "no remote bytes" }
  local function try(bytes, GBps, what)
    if bytes > 0 and GBps > 0 and bytes / GBps / 1e3 > best.us then
      best = { us = bytes / GBps / 1e3, bytes = bytes, GBps = GBps, what = what }
    end
  end
  local sum, used = 0, {}
  for p = 0, t.n - 1 do
    local bw, count = port_GBps(t, p, t.GBps)
    for c, k in pairs(count) do used[c] = used[c] or k > 0 end
    sum = sum + bw
    try(need.inb and need.inb(p) or 0, bw, string.format("all ingress of PE%d", p))
    try(need.outb and need.outb(p) or 0, bw, string.format("all egress of PE%d", p))
  end
  try(need.total or 0, sum, "all ingress of all PEs")
  for _, lv in ipairs(levels(t)) do
    local all = 0
    for first = 0, t.n - 1, lv.size do
      local size, g = math.min(lv.size, t.n - first), first // lv.size
      local bw = lv.GBps(first, size)
      local name = string.format("%s %%s %s %d", lv.what, lv.unit, g)
      all = all + bw
      try(need.cut_in and need.cut_in(first, size, lv.size) or 0, bw, name:format("into"))
      try(need.cut_out and need.cut_out(first, size, lv.size) or 0, bw, name:format("out of"))
    end
    try(need.across and need.across((t.n + lv.size - 1) // lv.size) or 0, all,
      string.format("%s of all %ss", lv.what, lv.unit))
  end
  return best, used
end

-- a family's result: the larger of its bandwidth term and the HBM term, plus its alphas
local function family(name, bw, hbm, alpha_list)
  local term = bw.us >= hbm.us and bw or hbm
  local alpha_us = 0
  for _, a in ipairs(alpha_list) do alpha_us = alpha_us + a end
  return { family = name, bw_us = term.us, bytes = term.bytes or 0, GBps = term.GBps,
    bottleneck = term.what, steps = #alpha_list, alphas_us = alpha_list, alpha_us = alpha_us,
    us = term.us + alpha_us }
end

-- the printed formula of a bound, every figure of it shown
local function formula(b)
  local fmt3, parts = require("shmemlab.metrics").fmt3, {}
  for i, a in ipairs(b.alphas_us) do parts[i] = fmt3(a) end
  return string.format("bound_us = bytes / GBps / 1e3 + alphas = %d / %s / 1e3 + %s = %s (%s "
    .. "design, %d dependent step%s; bottleneck %s)", math.tointeger(b.bytes) or 0,
    b.GBps and fmt3(b.GBps) or "-", table.concat(parts, " + "), fmt3(b.us), b.family, b.steps,
    b.steps == 1 and "" or "s", b.bottleneck)
end

-- bound of an op given its direct traffic, its relay needs and its HBM bytes per PE
local function solve(t, op, traffic, need, hbm)
  local h = hbm_term(t, hbm)
  local d, dused = direct(t, traffic)
  local dhi = alphas(t, dused)
  local best = family("direct", d, h, { dhi })
  if need then
    local r, rused = relay(t, need)
    local _, lo = alphas(t, rused)
    local rel = family("relay", r, h, { dhi, lo })
    if rel.us < best.us then best = rel end
  end
  best.op, best.n_pes = op, t.n
  best.formula = formula(best)
  return best
end

local function check_args(a, fields, fname)
  if type(a) ~= "table" then
    error(string.format("bad argument #2 to '%s' (table expected, got %s)", fname, type(a)), 3)
  end
  for _, f in ipairs(fields) do
    if math.type(a[f]) ~= "integer" or a[f] < 0 or (f == "n_pes" and a[f] < 1) then
      error(string.format("bad argument #2 to '%s' (%s must be a non-negative integer, got %s)",
        fname, f, tostring(a[f])), 3)
    end
  end
end

-- the group of PEs first .. first + size - 1 holds PE p?
local function in_group(first, size, p) return p >= first and p < first + size end

------------------------------------------------------------------------------
-- one function per op: bound.<op>(profile, args) -> {us=, formula=, family=, ...}

-- allgather: args {n_pes=, shard_bytes=}: every PE needs the n-1 other shards
function M.allgather(p, a)
  check_args(a, { "n_pes", "shard_bytes" }, "allgather")
  local t, n, s = topology(p, a.n_pes), a.n_pes, a.shard_bytes
  return solve(t, "allgather", function() return s end, {
    inb = function() return (n - 1) * s end, outb = function() return s end,
    total = n * (n - 1) * s,
    cut_in = function(_, size) return (n - size) * s end,     -- each outside shard once
    cut_out = function(_, size) return size * s end,          -- each shard of the group once
  }, function() return (n + 1) * s end)        -- read my shard once, write n shards
end

-- reduce_scatter: args {n_pes=, shard_bytes=}: PE p ends with slice p reduced over all PEs
function M.reduce_scatter(p, a)
  check_args(a, { "n_pes", "shard_bytes" }, "reduce_scatter")
  local t, n, s = topology(p, a.n_pes), a.n_pes, a.shard_bytes
  return solve(t, "reduce_scatter", function() return s end, {
    inb = function() return s end, outb = function() return (n - 1) * s end,
    total = n * (n - 1) * s,
    cut_in = function(_, size) return size * s end,           -- a partial slice per member
    cut_out = function(_, size) return (n - size) * s end,    -- one per outside PE
  }, function() return (n + 1) * s end)        -- read n slices, write one
end

-- allreduce: args {n_pes=, bytes=}: 2(n-1) transmissions per element at least (relay: one-way
-- gossip among n PEs needs 2n - 2 messages, and a sum carries no more than a gossip message),
-- 2(g-1) between g groups (cards, domains: the same among groups, inside a group free), or
-- every PE reads every other's vector (direct)
function M.allreduce(p, a)
  check_args(a, { "n_pes", "bytes" }, "allreduce")
  local t, n, N = topology(p, a.n_pes), a.n_pes, a.bytes
  return solve(t, "allreduce", function() return N end, {
    inb = function() return N end, outb = function() return N end,
    total = 2 * (n - 1) * N,
    cut_in = function() return N end, cut_out = function() return N end,
    across = function(groups) return 2 * (groups - 1) * N end,
  }, function() return 2 * N end)
end

-- alltoall: args {n_pes=, shard_bytes=}: shard j of PE p goes to PE j
function M.alltoall(p, a)
  check_args(a, { "n_pes", "shard_bytes" }, "alltoall")
  local t, n, s = topology(p, a.n_pes), a.n_pes, a.shard_bytes
  return solve(t, "alltoall", function() return s end, {
    inb = function() return (n - 1) * s end, outb = function() return (n - 1) * s end,
    total = n * (n - 1) * s,
    cut_in = function(_, size) return size * (n - size) * s end,
    cut_out = function(_, size) return size * (n - size) * s end,
  }, function() return 2 * n * s end)
end

-- broadcast: args {n_pes=, bytes=, root=}
function M.broadcast(p, a)
  check_args(a, { "n_pes", "bytes", "root" }, "broadcast")
  local t, n, N, r = topology(p, a.n_pes), a.n_pes, a.bytes, a.root
  return solve(t, "broadcast", function(x) return x == r and N or 0 end, {
    inb = function(q) return q ~= r and N or 0 end,
    outb = function(q) return q == r and N or 0 end,
    total = (n - 1) * N,
    cut_in = function(first, size) return in_group(first, size, r) and 0 or N end,
    cut_out = function(first, size) return in_group(first, size, r) and N or 0 end,
  }, function(q) return q == r and N or N end)  -- the root reads N, every other PE writes N
end

-- p2p: args {n_pes=, bytes=, src=, dst=}: the pair alone takes part (the other PEs idle),
-- so the bytes cross the one path between them: the direct design only
function M.p2p(p, a)
  check_args(a, { "n_pes", "bytes", "src", "dst" }, "p2p")
  local t, N, src, dst = topology(p, a.n_pes), a.bytes, a.src, a.dst
  return solve(t, "p2p", function(x, y) return (x == src and y == dst) and N or 0 end, nil,
    function(q) return (q == src or q == dst) and N or 0 end)
end

-- the distinct (token, destination PE) pairs of a routing: pairs[p][d] = count; remote[p] =
-- tokens of p with a destination other than p
local function token_pairs(R)
  local pairs_, remote = {}, {}
  for p = 0, R.n_pes - 1 do
    local row, far = {}, 0
    for d = 0, R.n_pes - 1 do row[d] = 0 end
    for tok = 0, R.tokens - 1 do
      local seen, any = {}, false
      for k = 1, R.topk do
        local d = R.dest[p][tok * R.topk + k]
        if not seen[d] then seen[d] = true; row[d] = row[d] + 1 end
        any = any or d ~= p
      end
      if any then far = far + 1 end
    end
    pairs_[p], remote[p] = row, far
  end
  return pairs_, remote
end

-- the tokens that cross the groups of gs PEs (cards or domains): into[g] = tokens from
-- outside group g with a destination in it (one row each, whatever the count of its
-- destinations there: forwarded inside); outof[g] = tokens of g with a destination outside
local function token_cuts(R, gs)
  local into, outof = {}, {}
  for g = 0, (R.n_pes - 1) // gs do into[g], outof[g] = 0, 0 end
  for p = 0, R.n_pes - 1 do
    local home = p // gs
    for tok = 0, R.tokens - 1 do
      local groups, away = {}, false
      for k = 1, R.topk do
        local g = R.dest[p][tok * R.topk + k] // gs
        if g ~= home and not groups[g] then groups[g] = true; into[g] = into[g] + 1 end
        away = away or g ~= home
      end
      if away then outof[home] = outof[home] + 1 end
    end
  end
  return into, outof
end

-- MoE traffic: bytes rows of routes R (moe.routes), row = hidden * dtype bytes; back = combine
local function moe_bound(p, name, a, back)
  check_args(a, { "n_pes", "row_bytes" }, name)
  local R = a.routes
  if type(R) ~= "table" or R.n_pes ~= a.n_pes then
    error(string.format("bad argument #2 to '%s' (routes of %d PEs expected)", name, a.n_pes), 3)
  end
  local t, row = topology(p, a.n_pes), a.row_bytes
  local pr, remote = token_pairs(R)
  local cuts = {}                               -- token_cuts by group size, once each
  local function cut(gs)
    cuts[gs] = cuts[gs] or { token_cuts(R, gs) }
    return cuts[gs][1], cuts[gs][2]
  end
  local function tr(x, y) return (back and pr[y][x] or pr[x][y]) * row end
  local sent = {}
  for q = 0, a.n_pes - 1 do
    local s, r = 0, 0
    for x = 0, a.n_pes - 1 do
      if x ~= q then s, r = s + tr(q, x), r + tr(x, q) end
    end
    sent[q] = { out = s, inb = r }
  end
  local total = 0
  for q = 0, a.n_pes - 1 do total = total + sent[q].out end
  return solve(t, name, tr, {
    inb = function(q) return back and remote[q] * row or sent[q].inb end,
    outb = function(q) return back and sent[q].out or remote[q] * row end,
    total = total,
    cut_in = function(first, _, gs)
      local into, outof = cut(gs)
      return (back and outof or into)[first // gs] * row
    end,
    cut_out = function(first, _, gs)
      local into, outof = cut(gs)
      return (back and into or outof)[first // gs] * row
    end,
  }, function(q) return (R.tokens + R.recv[q]) * row end)   -- my tokens' rows, the routed rows
end

-- dispatch: args {n_pes=, row_bytes=, routes=}: every (token, expert PE) pair once
function M.dispatch(p, a) return moe_bound(p, "dispatch", a, false) end

-- combine: args {n_pes=, row_bytes=, routes=}: the reverse traffic of dispatch
function M.combine(p, a) return moe_bound(p, "combine", a, true) end

------------------------------------------------------------------------------

-- bound.peak_GBps(profile, n_pes, pe) -> GB/s, text: the physical peak of the paths PE pe
-- can drive one way: the nominal rates of its HCCS links (mesh) or port (switch), its SIO
-- and its RDMA NIC toward the PEs of the job; a job of one PE: its HBM
function M.peak_GBps(p, n, pe)
  local t = topology(p, n)
  local bw, count = port_GBps(t, pe or 0, t.nominal)
  if n == 1 then return t.hbm, "local HBM" end
  local hccs = t.switch and math.min(1, count.hccs) or count.hccs
  return bw, string.format("%d x SIO %g + %d x HCCS %s %g + %d x RDMA %g", math.min(1, count.sio),
    t.nominal.sio, hccs, t.switch and "port" or "link", t.nominal.hccs,
    math.min(1, count.rdma), t.nominal.rdma)
end

-- bound.path_GBps(profile, n_pes, a, b) -> GB/s, class: the nominal one-way rate of the one
-- path from PE a to PE b (a mesh link or switch port, SIO, RDMA; HBM when a == b)
function M.path_GBps(p, n, a, b)
  local t = topology(p, n)
  local c = class(t, a, b)
  return c == "local" and t.hbm or t.nominal[c], c
end

-- bound.physical_peak(collective, c, pe) -> GB/s, text: the most bandwidth PE pe can show in
-- a record of this op on configuration c: a p2p uses the one path between src and dst;
-- every other op may drive all the paths of the PE (bound.peak_GBps)
function M.physical_peak(collective, c, pe)
  if collective == "p2p" then
    local bw, cls = M.path_GBps(c.profile, c.pes, c.src_pe or 0, c.dst_pe or 1)
    return bw, "the " .. cls .. " path from src to dst"
  end
  return M.peak_GBps(c.profile, c.pes, pe)
end

-- bound.of(collective, c) -> bound table for a run configuration c (runner.config):
-- c.profile, c.pes, c.count, c.dtype and the op's own fields (root, src_pe, dst_pe, MoE)
function M.of(collective, c)
  local esize = require("shmemlab").core.dtype_size(c.dtype)
  local p, n = c.profile, c.pes
  if collective == "allgather" or collective == "reduce_scatter" or collective == "alltoall" then
    return M[collective](p, { n_pes = n, shard_bytes = c.count * esize })
  elseif collective == "allreduce" then
    return M.allreduce(p, { n_pes = n, bytes = c.count * esize })
  elseif collective == "broadcast" then
    return M.broadcast(p, { n_pes = n, bytes = c.count * esize, root = c.root or 0 })
  elseif collective == "p2p" then
    return M.p2p(p, { n_pes = n, bytes = c.count * esize, src = c.src_pe or 0,
                      dst = c.dst_pe or 1 })
  elseif collective == "dispatch" or collective == "combine" then
    local moe = require("shmemlab.moe")
    local cfg = moe.config(c)
    return M[collective](p, { n_pes = n, row_bytes = cfg.hidden * esize,
                              routes = moe.routes(cfg) })
  end
  error(string.format("bad argument #1 to 'of' (no bound for operator '%s')", tostring(collective)), 2)
end

return M
