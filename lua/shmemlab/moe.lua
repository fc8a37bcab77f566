-- shmemlab.moe: the MoE routing that the dispatch/combine operators and their
-- HCCL-style baselines share, plus the plumbing that keeps those operator files
-- to a page of orchestration: a seeded routing, the layout each PE needs, the
-- token tiles and slot chunks a block works on, row copies GM <-> UB, and the
-- host-side references (built in C with view:copy).
--
-- Configuration (run options; the defaults are in moe.DEFAULTS):
--   local_tokens  tokens per PE (or shape[1], or count // hidden: a size sweep sweeps tokens)
--   hidden        elements per token (or shape[2])
--   topk          distinct experts per token      experts 2 * n_pes by default; expert e
--                                                         lives on PE e // (experts / n_pes)
--   routing       "uniform" | "lognormal" | "zipf" | "file"
--   seed          seed of the generator (a splitmix64 written in Lua: same seed, same tables)
--   sigma         lognormal: spread of the log expert popularity (1.0)
--   zipf_s        zipf: exponent of the popularity 1 / rank^s (1.2), ranks a seeded permutation
--   routes_file   routing "file": the file's tables (format below); it fixes local_tokens,
--                 topk and the PE count
-- uniform/lognormal/zipf give every expert a popularity weight (all 1; exp(sigma * N(0,1));
-- 1 / rank^s) and each token draws its topk experts without replacement in proportion to
-- them; k = 0 is the first draw.
--
-- Layout. PE p's rows are its (token, k) pairs, row index i = token * topk + k (0-based).
-- p's send order groups them by destination PE, (token, k) ascending in a group:
-- send_off[p][d] is where group d starts, send[p][d] its length. On PE d the rows of
-- every source land by source PE, then token, then k: source p's rows start at slot
-- recv_off[d][p], recv[d] rows in all, max_recv the capacity every PE allocates (the
-- receive buffer is symmetric). The j-th row of p's group d is slot recv_off[d][p] + j.
--
-- Routes file: '#' starts a comment, blank lines are ignored. An optional line
-- "experts <n>" gives the expert count (default 2 * PEs); "pe <p>" starts PE p's section;
-- inside it each line is "<token> <expert> <expert> ..." (topk experts, k = 0 first).
-- Every PE 0..n-1 has a section, every section lists the tokens 0..T-1 once each, with
-- the same topk and distinct experts. moe.write_routes(path, R) writes one.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local hccl = require("shmemlab.hccl")

local moe = {}

moe.DEFAULTS = { local_tokens = 256, hidden = 1024, topk = 2, routing = "uniform", seed = 1,
                 sigma = 1.0, zipf_s = 1.2 }
moe.ROUTINGS = { uniform = true, lognormal = true, zipf = true, file = true }
moe.SIG = 8                        -- int32 per signal: one 32-byte block each

------------------------------------------------------------------------------
-- the generator

-- moe.rng(seed): a splitmix64 stream; :u64(), :uniform() in [0, 1), :normal()
function moe.rng(seed)
  local x = math.tointeger(seed)
  if x == nil then error("moe: seed must be an integer, got " .. tostring(seed), 0) end
  local g = {}
  function g.u64()
    x = x + 0x9E3779B97F4A7C15
    local z = x
    z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ~ (z >> 27)) * 0x94D049BB133111EB
    return z ~ (z >> 31)
  end
  function g.uniform()                                 -- u64's steps inlined (hot)
    x = x + 0x9E3779B97F4A7C15
    local z = x
    z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ~ (z >> 27)) * 0x94D049BB133111EB
    return ((z ~ (z >> 31)) >> 11) * 0x1p-53
  end
  function g.normal()                                  -- Box-Muller
    local u1, u2 = 1 - g.uniform(), g.uniform()
    return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)
  end
  return g
end

------------------------------------------------------------------------------
-- configuration

local function int_opt(v, what, min)
  local n = math.tointeger(v)
  if n == nil or n < min then
    error(string.format("moe: %s must be an integer >= %d, got %s", what, min, tostring(v)), 0)
  end
  return n
end

-- read_routes' token line: records PE pe's token and its experts in r (bad raises)
local function route_line(r, seen, pe, words, bad)
  if pe == nil then bad("a token line before the first 'pe <n>' line") end
  local nums = {}
  for i, w in ipairs(words) do
    nums[i] = math.tointeger(tonumber(w))
    if nums[i] == nil or nums[i] < 0 then bad("'" .. w .. "' is not a number >= 0") end
  end
  local t, k = nums[1], #nums - 1
  if k < 1 then bad("token " .. t .. " has no expert") end
  r.topk = r.topk or k
  if k ~= r.topk then bad(string.format("token %d has %d experts, topk is %d", t, k, r.topk)) end
  if seen[pe][t] then bad("token " .. t .. " of PE " .. pe .. " is listed twice") end
  seen[pe][t] = true
  local used = {}
  for j = 2, #nums do
    if used[nums[j]] then bad("token " .. t .. " picks expert " .. nums[j] .. " twice") end
    used[nums[j]] = true
    r.choice[pe][t * k + j - 1] = nums[j]
  end
end

-- read_routes' last check: every PE has a section with the same tokens 0..n-1; sets r.tokens
local function routes_whole(r, seen, path)
  if r.pes == 0 then error("moe: " .. path .. ": no 'pe <n>' section", 0) end
  local tokens
  for p = 0, r.pes - 1 do
    if not r.choice[p] then error(string.format("moe: %s: PE %d has no section", path, p), 0) end
    local n = 0
    for _ in pairs(seen[p]) do n = n + 1 end
    tokens = tokens or n
    if n ~= tokens or n == 0 then
      error(string.format("moe: %s: PE %d lists %d tokens, PE 0 lists %d", path, p, n, tokens), 0)
    end
    for t = 0, tokens - 1 do
      if not seen[p][t] then
        error(string.format("moe: %s: PE %d has no line for token %d", path, p, t), 0)
      end
    end
  end
  r.tokens = tokens
end

-- moe.read_routes(path) -> {pes =, tokens =, topk =, experts = nil|n, choice = {[pe] = {...}}}
function moe.read_routes(path)
  local f, err = io.open(path, "r")
  if not f then error("moe: cannot read routes file: " .. tostring(err), 0) end
  local r = { choice = {}, topk = nil, pes = 0 }
  local pe, seen, ln = nil, {}, 0
  local function bad(msg) f:close(); error(string.format("moe: %s:%d: %s", path, ln, msg), 0) end
  for line in f:lines() do
    ln = ln + 1
    local words = {}
    for w in line:gsub("#.*$", ""):gmatch("%S+") do words[#words + 1] = w end
    if words[1] == "experts" then
      r.experts = math.tointeger(tonumber(words[2]))
      if #words ~= 2 or not r.experts or r.experts < 1 then bad("'experts <n>' expected") end
    elseif words[1] == "pe" then
      pe = math.tointeger(tonumber(words[2]))
      if #words ~= 2 or not pe or pe < 0 then bad("'pe <n>' expected") end
      if r.choice[pe] then bad("PE " .. pe .. " has two sections") end
      r.choice[pe], seen[pe] = {}, {}
      r.pes = math.max(r.pes, pe + 1)
    elseif #words > 0 then
      route_line(r, seen, pe, words, bad)
    end
  end
  f:close()
  routes_whole(r, seen, path)
  return r
end

-- moe.config's routes file: read, checked against c's fields; sets cfg.file and
-- cfg.routes_file, returns the file's tokens and topk
local function routes_config(c, cfg, n)
  if type(c.routes_file) ~= "string" then
    error("moe: routing 'file' needs routes_file (a path)", 0)
  end
  local f = moe.read_routes(c.routes_file)
  for what, want in pairs({ local_tokens = f.tokens, topk = f.topk }) do
    if c[what] ~= nil and c[what] ~= want then
      error(string.format("moe: %s = %s, but %s has %s", what, tostring(c[what]),
                          c.routes_file, tostring(want)), 0)
    end
  end
  if f.pes ~= n then
    error(string.format("moe: %s describes %d PEs, the machine has %d", c.routes_file,
                        f.pes, n), 0)
  end
  if c.experts ~= nil and f.experts ~= nil and c.experts ~= f.experts then
    error(string.format("moe: experts = %s, but %s has %d", tostring(c.experts),
                        c.routes_file, f.experts), 0)
  end
  cfg.file, cfg.routes_file = f, c.routes_file
  return f.tokens, f.topk
end

-- moe.config's last check of a routes file: every expert it picks exists
local function routes_experts(cfg, n)
  for p = 0, n - 1 do
    for i, e in pairs(cfg.file.choice[p]) do
      if e >= cfg.experts then
        error(string.format("moe: %s: PE %d token %d picks expert %d of %d", cfg.routes_file,
                            p, (i - 1) // cfg.topk, e, cfg.experts), 0)
      end
    end
  end
end

-- moe.config(c) -> cfg: the MoE fields of the run configuration c resolved
-- (defaults, shape, routes file) and checked; they are written back into c
-- (local_tokens, hidden, topk, experts, shape = {tokens, hidden}, count) so that
-- the runner's record and config line show them. Idempotent.
function moe.config(c)
  local D, shape = moe.DEFAULTS, c.shape or {}
  local n = int_opt(c.pes, "pes", 1)
  local cfg = { n_pes = n, routing = c.routing or D.routing, seed = c.seed or D.seed,
                sigma = c.sigma or D.sigma, zipf_s = c.zipf_s or D.zipf_s }
  if not moe.ROUTINGS[cfg.routing] then
    error(string.format("moe: unknown routing '%s' (uniform, lognormal, zipf, file)",
                        tostring(cfg.routing)), 0)
  end
  int_opt(cfg.seed, "seed", math.mininteger)
  cfg.hidden = int_opt(c.hidden or shape[2] or D.hidden, "hidden", 1)
  local tokens = c.local_tokens or shape[1]
                 or (c.count and math.max(1, c.count // cfg.hidden)) or D.local_tokens
  local topk = c.topk or D.topk
  if cfg.routing == "file" then tokens, topk = routes_config(c, cfg, n) end
  cfg.tokens = int_opt(tokens, "local_tokens", 1)
  cfg.topk = int_opt(topk, "topk", 1)
  cfg.experts = int_opt(c.experts or (cfg.file and cfg.file.experts) or 2 * n, "experts", 1)
  if cfg.experts % n ~= 0 then
    error(string.format("moe: experts (%d) must be a multiple of the PE count (%d)",
                        cfg.experts, n), 0)
  end
  if cfg.topk > cfg.experts then
    error(string.format("moe: topk (%d) exceeds the number of experts (%d)", cfg.topk,
                        cfg.experts), 0)
  end
  if cfg.file then routes_experts(cfg, n) end
  cfg.per_pe = cfg.experts // n
  c.local_tokens, c.hidden, c.topk, c.experts = cfg.tokens, cfg.hidden, cfg.topk, cfg.experts
  c.routing, c.seed = cfg.routing, cfg.seed
  c.shape, c.count = { cfg.tokens, cfg.hidden }, cfg.tokens * cfg.hidden
  return cfg
end

------------------------------------------------------------------------------
-- routing and layout

-- the popularity weight of every expert (index e + 1)
local function popularity(cfg, rng)
  local w, E = {}, cfg.experts
  if cfg.routing == "lognormal" then
    for e = 1, E do w[e] = math.exp(cfg.sigma * rng.normal()) end
  elseif cfg.routing == "zipf" then
    local rank = {}
    for e = 1, E do rank[e] = e end
    for e = E, 2, -1 do                                  -- Fisher-Yates
      local j = 1 + math.floor(rng.uniform() * e)
      rank[e], rank[j] = rank[j], rank[e]
    end
    for e = 1, E do w[e] = 1 / rank[e] ^ cfg.zipf_s end
  else
    for e = 1, E do w[e] = 1 end
  end
  return w
end

-- append topk distinct experts (0-based) drawn in proportion to w, without replacement
local function draw(rng, w, topk, out)
  local taken = {}
  for _ = 1, topk do
    local total, last = 0, nil
    for e = 1, #w do if not taken[e] then total = total + w[e]; last = e end end
    local u, pick = rng.uniform() * total, last
    for e = 1, #w do
      if not taken[e] then
        u = u - w[e]
        if u < 0 then pick = e; break end
      end
    end
    taken[pick] = true
    out[#out + 1] = pick - 1
  end
end

local function stats(list, first, last)
  local mn, mx, sum = math.huge, -math.huge, 0
  for i = first, last do
    mn, mx, sum = math.min(mn, list[i]), math.max(mx, list[i]), sum + list[i]
  end
  local mean = sum / (last - first + 1)
  return { min = mn, max = mx, mean = mean, sum = sum, imbalance = mean > 0 and mx / mean or 0 }
end

-- R's dest: every PE's rows' destinations (dest[p][i], row i's expert's PE),
-- made when first read (a timing-only DeepEP run never reads them)
local function dest_rows(R)
  local dest, per, rows = {}, R.per_pe, R.tokens * R.topk
  for p = 0, R.n_pes - 1 do
    local d, ex = {}, R.expert[p]
    for i = 1, rows do d[i] = ex[i] // per end
    dest[p] = d
  end
  rawset(R, "dest", dest)
  return dest
end

-- R's order, pos and slot of every PE (the rows grouped by destination, each
-- group in row order: a counting sort from send_off), made when first read
-- (the DeepEP ports number their rows themselves and never read them), and
-- its dest (dest_rows)
local GROUPED = { order = true, pos = true, slot = true }
local function group_rows(R, key)
  if key == "dest" then return dest_rows(R) end
  if not GROUPED[key] then return nil end
  local order, pos, slot = {}, {}, {}
  for p = 0, R.n_pes - 1 do
    local dest, off, o, ps, sl, next_at = R.dest[p], R.send_off[p], {}, {}, {}, {}
    for d = 0, R.n_pes - 1 do next_at[d] = off[d] end
    for i = 1, #dest do
      local d = dest[i]
      local at = next_at[d]
      o[at + 1], ps[i], next_at[d] = i, at, at + 1
      sl[i] = R.recv_off[d][p] + (at - off[d])
    end
    order[p], pos[p], slot[p] = o, ps, sl
  end
  rawset(R, "order", order); rawset(R, "pos", pos); rawset(R, "slot", slot)
  return rawget(R, key)
end

-- the layout of a routing: choice[pe][i + 1] = expert of row i
local function layout(cfg, choice)
  local n, T, K = cfg.n_pes, cfg.tokens, cfg.topk
  local R = { n_pes = n, tokens = T, topk = K, experts = cfg.experts, per_pe = cfg.per_pe,
              hidden = cfg.hidden, routing = cfg.routing, seed = cfg.seed, cfg = cfg,
              expert = choice, send = {}, send_off = {}, recv = {}, recv_off = {},
              expert_rows = {} }
  for e = 0, cfg.experts - 1 do R.expert_rows[e] = 0 end
  for d = 0, n - 1 do R.recv[d], R.recv_off[d] = 0, {} end
  for p = 0, n - 1 do                   -- the PE's rows per expert and per destination
    local rows, send = lab.core.route_count(choice[p], T * K, cfg.experts, cfg.per_pe)
    local off, at = {}, 0
    for e = 0, cfg.experts - 1 do R.expert_rows[e] = R.expert_rows[e] + rows[e] end
    for d = 0, n - 1 do off[d] = at; at = at + send[d] end
    R.send[p], R.send_off[p] = send, off
  end
  for d = 0, n - 1 do
    for p = 0, n - 1 do
      R.recv_off[d][p] = R.recv[d]
      R.recv[d] = R.recv[d] + R.send[p][d]
    end
  end
  R.pe_stats = stats(R.recv, 0, n - 1)
  R.expert_stats = stats(R.expert_rows, 0, cfg.experts - 1)
  R.max_recv = math.max(1, R.pe_stats.max)
  return setmetatable(R, { __index = group_rows })
end

-- moe.routes(cfg) -> R: the routing tables and layout of a resolved config
-- (moe.config); deterministic in cfg.seed (or the routes file)
function moe.routes(cfg)
  local choice = {}
  if cfg.routing == "file" then
    choice = cfg.file.choice
  elseif cfg.routing == "uniform" then   -- draw's picks with every weight 1, by the core
    choice = lab.core.route_uniform(cfg.seed, cfg.n_pes, cfg.tokens, cfg.experts, cfg.topk)
  else
    local rng = moe.rng(cfg.seed)
    local w = popularity(cfg, rng)
    for p = 0, cfg.n_pes - 1 do
      local list = {}
      for _ = 1, cfg.tokens do draw(rng, w, cfg.topk, list) end
      choice[p] = list
    end
  end
  return layout(cfg, choice)
end

-- moe.route_buffer(m, R): the route tables as an int32 GM buffer (tokens x topk
-- expert ids on every PE), filled from Lua tables
function moe.route_buffer(m, R)
  local buf = m:alloc("int32", R.tokens * R.topk, "routes", "backed")
  for p = 0, R.n_pes - 1 do buf:on(p):fill(R.expert[p]) end
  return buf
end

-- moe.write_routes(path, R): R's tables in the routes file format
function moe.write_routes(path, R)
  local f = assert(io.open(path, "w"))
  f:write(string.format("# shmemlab MoE routes: %d PEs, %d tokens per PE, topk %d (%s, seed %s)\n",
                        R.n_pes, R.tokens, R.topk, R.routing, tostring(R.seed)))
  f:write(string.format("experts %d\n", R.experts))
  for p = 0, R.n_pes - 1 do
    f:write(string.format("pe %d\n", p))
    for t = 0, R.tokens - 1 do
      local row = { tostring(t) }
      for k = 0, R.topk - 1 do row[#row + 1] = tostring(R.expert[p][t * R.topk + k + 1]) end
      f:write(table.concat(row, " "), "\n")
    end
  end
  f:close()
end

local function stats_line(s)
  return string.format("min %d, max %d, mean %.3f, imbalance (max/mean) %.3f", s.min, s.max,
                       s.mean, s.imbalance)
end

-- moe.summary(R or run config) -> printable text: rows per destination PE and per
-- expert with min/max/mean/imbalance, and the rows each source sends each destination
function moe.summary(x)
  local R = x.dest and x or moe.routes(moe.config(x))
  local cfg, out = R.cfg, {}
  local how = R.routing == "file" and tostring(cfg.routes_file)
           or string.format("seed %s", tostring(R.seed))
           .. (R.routing == "zipf" and string.format(", s %g", cfg.zipf_s)
               or R.routing == "lognormal" and string.format(", sigma %g", cfg.sigma) or "")
  out[#out + 1] = string.format("routing %s (%s): %d PEs x %d tokens, topk %d, %d experts "
    .. "(%d per PE); %d rows (token, k) in all\n", R.routing, how, R.n_pes, R.tokens,
    R.topk, R.experts, R.per_pe, R.pe_stats.sum)
  local line = { "rows received per PE:" }
  for d = 0, R.n_pes - 1 do
    if d > 0 and d % 8 == 0 then line[#line + 1] = "\n " end
    line[#line + 1] = string.format(" pe%d %d", d, R.recv[d])
  end
  out[#out + 1] = table.concat(line) .. "\n  " .. stats_line(R.pe_stats) .. "\n"
  line = { "rows per expert:" }
  for e = 0, R.experts - 1 do
    if e > 0 and e % 16 == 0 then line[#line + 1] = "\n " end
    line[#line + 1] = string.format(" e%d %d", e, R.expert_rows[e])
  end
  out[#out + 1] = table.concat(line) .. "\n  " .. stats_line(R.expert_stats) .. "\n"
  if R.n_pes <= 16 then
    out[#out + 1] = "rows sent (row: source PE, column: destination PE):\n"
    for p = 0, R.n_pes - 1 do
      line = { string.format("  %3d:", p) }
      for d = 0, R.n_pes - 1 do line[#line + 1] = string.format(" %5d", R.send[p][d]) end
      out[#out + 1] = table.concat(line) .. "\n"
    end
  end
  return table.concat(out)
end

------------------------------------------------------------------------------
-- work division

-- the share [first, first + n) of count items a block takes (even split)
function moe.share(count, block, blocks)
  local per = (count + blocks - 1) // blocks
  local first = block * per
  return first, math.max(0, math.min(per, count - first))
end

-- the overlap of [a, a + n) with [lo, hi): count, first
function moe.overlap(a, n, lo, hi)
  local first, last = math.max(a, lo), math.min(a + n, hi)
  return math.max(0, last - first), first
end

-- the tiles of a block's tokens on PE pe: at most tile_tokens tokens each, their
-- rows whose send position is in [lo, hi) (default all) grouped by destination:
-- {first = token, n = tokens, rows = {{i = token - first, k =}, ...} in pack order,
--  at = {[i * topk + k + 1] = pack row}, groups = {{pe =, first = pack row, count =,
--  send = send position, slot = receive slot on pe}, ...}}
-- The groups come in PE order, or with stagger in the order moe.stagger gives
-- (destinations from pe + block * n_pes / blocks on, cyclically)
function moe.tiles(R, pe, block, blocks, tile_tokens, lo, hi, stagger)
  lo, hi = lo or 0, hi or math.maxinteger
  local K, tiles = R.topk, {}
  local first, n = moe.share(R.tokens, block, blocks)
  for t0 = first, first + n - 1, tile_tokens do
    local t1 = math.min(t0 + tile_tokens, first + n) - 1
    local by, ds, tmin, tmax = {}, {}, math.maxinteger, -1
    for t = t0, t1 do
      for k = 0, K - 1 do
        local i = t * K + k + 1
        local p = R.pos[pe][i]
        if p >= lo and p < hi then
          local d = R.dest[pe][i]
          if by[d] == nil then by[d] = {}; ds[#ds + 1] = d end
          by[d][#by[d] + 1] = i
          tmin, tmax = math.min(tmin, t), math.max(tmax, t)
        end
      end
    end
    if tmax >= 0 then
      local tile = { first = tmin, n = tmax - tmin + 1, rows = {}, at = {}, groups = {} }
      if stagger then moe.stagger(ds, pe, block, blocks, R.n_pes) else table.sort(ds) end
      for _, d in ipairs(ds) do
        local list = by[d]
        local g = { pe = d, first = #tile.rows, count = #list, send = R.pos[pe][list[1]],
                    slot = R.slot[pe][list[1]] }
        for j, i in ipairs(list) do
          assert(R.pos[pe][i] == g.send + j - 1, "moe.tiles: a group is not contiguous")
          local t, k = (i - 1) // K, (i - 1) % K
          tile.rows[#tile.rows + 1] = { i = t - tmin, k = k }
          tile.at[(t - tmin) * K + k + 1] = #tile.rows - 1
        end
        tile.groups[#tile.groups + 1] = g
      end
      tiles[#tiles + 1] = tile
    end
  end
  return tiles
end

-- the tiles of every (PE, block): plan[pe][block] (stagger: see moe.tiles)
function moe.plan(R, blocks, tile_tokens, lo, hi, stagger)
  local plan = {}
  for p = 0, R.n_pes - 1 do
    plan[p] = {}
    for b = 0, blocks - 1 do
      plan[p][b] = moe.tiles(R, p, b, blocks, tile_tokens, lo, hi, stagger)
    end
  end
  return plan
end

-- sort the destination PEs ds in place in the staggered order of block `block`
-- of PE pe: by (d - start) mod n from start = pe + block * n // blocks. In PE
-- order every block of every PE would put to PE 0 first, then PE 1, ...: the
-- destinations would take the puts one at a time while the others idle; so
-- each PE starts elsewhere, and each of its blocks elsewhere again
function moe.stagger(ds, pe, block, blocks, n)
  local start = pe + block * n // blocks
  table.sort(ds, function(x, y) return (x - start) % n < (y - start) % n end)
  return ds
end

-- combine's put-back: the path kinds (m:path names) in the order a block puts
-- its shares, slowest first; block b starts at its b-th kind (cyclically), so
-- that at any moment some blocks drive each kind of link
moe.PUTBACK_PATHS = { "rdma", "hccs", "sio", "local" }

-- the rows of expert PE d to put back, split evenly over blocks kind by kind:
-- for each path kind (path_of(d, p) of source p) the sources of that kind, from
-- the (d mod count)-th on (each PE starts elsewhere), their rows end to end,
-- block b taking rows [total * b // blocks, total * (b + 1) // blocks).
-- -> pieces[b] = {[kind] = {{pe =, count =, slot = receive slot, send = position
-- in pe's send order}, ...}}
local function putback_pieces(R, d, blocks, path_of)
  local of = {}
  for p = 0, R.n_pes - 1 do
    if R.send[p][d] > 0 then
      local kind = path_of(d, p)
      of[kind] = of[kind] or {}
      of[kind][#of[kind] + 1] = p
    end
  end
  local pieces = {}
  for b = 0, blocks - 1 do pieces[b] = {} end
  local off_d = R.recv_off[d]
  for kind, list in pairs(of) do
    local total = 0
    for _, p in ipairs(list) do total = total + R.send[p][d] end
    local pos, b, hi = 0, -1, 0
    local out                                         -- block b's list of this kind
    for j = 0, #list - 1 do
      local p = list[(d + j) % #list + 1]
      local off, left, slot, send = 0, R.send[p][d], off_d[p], R.send_off[p][d]
      while left > 0 do
        while pos >= hi do                            -- the next block with rows
          b = b + 1
          hi, out = total * (b + 1) // blocks, {}
          pieces[b][kind] = out
        end
        local take = math.min(left, hi - pos)
        out[#out + 1] = { pe = p, first = 0, count = take, slot = slot + off, send = send + off }
        pos, off, left = pos + take, off + take, left - take
      end
    end
  end
  return pieces
end

-- cut a block's segments (in order) into chunks of at most chunk_rows rows:
-- {{count =, segs = {{pe =, first = row in the chunk, count =, slot =, send =}, ...}}, ...}
-- (a segment that fits whole is kept, with its first set)
local function putback_chunks(segs, chunk_rows)
  local chunks, ch = {}, nil
  for _, g in ipairs(segs) do
    local off = 0
    while off < g.count do
      if ch == nil or ch.count == chunk_rows then
        ch = { count = 0, segs = {} }
        chunks[#chunks + 1] = ch
      end
      local take = math.min(g.count - off, chunk_rows - ch.count)
      local seg = g                                   -- whole: the piece's own table
      if take < g.count then
        seg = { pe = g.pe, first = 0, count = take, slot = g.slot + off, send = g.send + off }
      end
      seg.first = ch.count
      ch.segs[#ch.segs + 1] = seg
      ch.count, off = ch.count + take, off + take
    end
  end
  return chunks
end

-- combine's put-back plan of every (PE, block): plan[d][b] = the chunks block b
-- of expert PE d loads and puts back (putback_chunks' form), each block's rows
-- balanced kind by kind (putback_pieces), its kinds in moe.PUTBACK_PATHS order
-- from its b-th present kind on; path_of(d, p) names the path (m:path)
function moe.putback_plan(R, blocks, chunk_rows, path_of)
  local plan = {}
  for d = 0, R.n_pes - 1 do
    plan[d] = {}
    local pieces = putback_pieces(R, d, blocks, path_of)
    for b = 0, blocks - 1 do
      local kinds = {}
      for _, kind in ipairs(moe.PUTBACK_PATHS) do
        local list = pieces[b][kind]
        if list and #list > 0 then kinds[#kinds + 1] = list end
      end
      local segs = {}
      for j = 0, #kinds - 1 do
        for _, g in ipairs(kinds[(b + j) % #kinds + 1]) do segs[#segs + 1] = g end
      end
      plan[d][b] = putback_chunks(segs, chunk_rows)
    end
  end
  return plan
end

-- the send windows of a launch sequence: {{lo =, hi =}, ...} over total rows
function moe.windows(total, cap_rows)
  local w = {}
  for lo = 0, math.max(total, 1) - 1, cap_rows do
    w[#w + 1] = { lo = lo, hi = math.min(lo + cap_rows, total) }
  end
  return w
end

-- token rows an HCCL buffer (shmemlab.hccl.comm) holds: at least one
function moe.hccl_rows(comm, hidden)
  local rows = comm.elems // hidden
  if rows < 1 then
    error(string.format("moe: the HCCL buffer (%d elements) is smaller than one token row "
                        .. "(hidden %d)", comm.elems, hidden), 0)
  end
  return rows
end

-- an HCCL baseline moving total token rows per rank: s.blocks (one per peer
-- rank), s.comm (flag slots b and n + r per rank) and its launch windows
-- s.windows; rows of s.wire (default: hidden elements of c.dtype)
function moe.hccl_windows(m, c, s, total)
  local dtype, row = s.wire and s.wire.dtype or c.dtype, s.wire and s.wire.row or s.hidden
  s.blocks = hccl.blocks(c)
  s.comm = hccl.comm(m, dtype, total * row, 2 * c.pes)
  s.windows = moe.windows(total, moe.hccl_rows(s.comm, row))
  return s
end

------------------------------------------------------------------------------
-- per-op state

-- elements per UB row: a token row padded to whole 32-byte blocks (UB addresses
-- stay 32-byte aligned, as DataCopy needs)
function moe.stride(hidden, esize)
  local per = 32 // esize
  return (hidden + per - 1) // per * per
end

-- the state every MoE op starts from: dtype, sizes, UB budget (c.ub_bytes, at
-- most ub_cap), routes, tag
function moe.state(c, ub_cap)
  local cfg = moe.config(c)
  local esize = lab.core.dtype_size(c.dtype)
  local s = { dtype = c.dtype, esize = esize, hidden = cfg.hidden, tag = 0,
              stride = moe.stride(cfg.hidden, esize) }
  op.fit_ub(c, s, ub_cap)
  s.ub_rows = s.ub_elems // s.stride
  s.routes = moe.routes(cfg)
  return s
end

-- the dtypes a dispatch may send its rows in: int8 (quantised in the kernel)
-- or the input dtype itself
moe.QUANT = { int8 = true }

-- the scale's byte offset in an INT8 row, the row's bytes on the wire:
-- align32(hidden) int8 values (zero padded), then one 32-byte block holding
-- the fp32 scale in its first 4 bytes (Ascend's MoeDistributeDispatch
-- reserves 32 bytes after a quantised token for its scale, 4 of them used)
function moe.int8_row(hidden)
  local at = (hidden + 31) // 32 * 32
  return at, at + 32
end

-- the wire format of a dispatch's rows from c.dispatch_dtype (default the
-- input dtype; "int8" quantises): {dtype, row = elements per row in GM,
-- stride = elements per row in UB, bytes = bytes per row, quant, scale_at}
function moe.wire(c, s)
  local want = c.dispatch_dtype or c.dtype
  if not moe.QUANT[want] and want ~= c.dtype then
    error(string.format("moe: dispatch dtype must be int8 or the input dtype %s, got '%s'",
                        c.dtype, tostring(want)), 0)
  end
  if moe.QUANT[want] then
    local at, row = moe.int8_row(s.hidden)
    return { dtype = want, row = row, stride = row, bytes = row, quant = true, scale_at = at }
  end
  return { dtype = c.dtype, row = s.hidden, stride = s.stride, bytes = s.hidden * s.esize,
           quant = false }
end

-- tokens per dispatch tile: tile rows + topk packed rows per token in the input
-- dtype, or, quantising, an input row plus topk INT8 rows per token beside the
-- two fp32 rows and the 32-byte max the quantisation works in
function moe.dispatch_tile_tokens(s, topk)
  if not s.wire.quant then return moe.tile_tokens(s, 1 + topk) end
  local per = s.stride * s.esize + topk * s.wire.bytes
  local n = (s.ub_bytes - 2 * moe.stride(s.hidden, 4) * 4 - 32) // per
  if n < 1 then
    error(string.format("moe: hidden %d does not fit: an INT8 dispatch tile of one token needs "
      .. "%d UB bytes, the UB budget is %d bytes", s.hidden,
      per + 2 * moe.stride(s.hidden, 4) * 4 + 32, s.ub_bytes), 0)
  end
  return n
end

-- the most tokens a tile of c's configuration holds (the tune knob tile_tokens' bound):
-- a dispatch's (dispatch true) or a combine's; nil when not even one fits
function moe.tile_fit(c, dispatch)
  local copy = {}
  for k, v in pairs(c) do copy[k] = v end
  local ok, n = pcall(function()
    local cfg = moe.config(copy)
    local esize = lab.core.dtype_size(c.dtype)
    local s = op.fit_ub(c, { esize = esize, hidden = cfg.hidden,
                             stride = moe.stride(cfg.hidden, esize) })
    s.ub_rows = s.ub_elems // s.stride
    if not dispatch then return moe.tile_tokens(s, 1 + cfg.topk, 1) end
    s.wire = moe.wire(c, s)
    return moe.dispatch_tile_tokens(s, cfg.topk)
  end)
  return ok and n or nil
end

-- the tune knob tile_tokens of a dispatch (dispatch true) or a combine, and its constraint
function moe.tune(dispatch)
  return op.tune({ op.KNOB_BLOCK_DIM, op.KNOB_UB_BYTES,
    { name = "tile_tokens", range = { 1, 32, "x2" },
      default = function(c) return moe.tile_fit(c, dispatch) end,
      doc = "tokens per tile, so rows per destination of one put (default: as many as the UB "
        .. "holds)" } }, {
    { why = "tile_tokens an integer from 1 to the tokens a tile's UB rows hold",
      ok = function(c)
        local n, fit = c.tile_tokens, moe.tile_fit(c, dispatch)
        return n == nil or (math.type(n) == "integer" and n >= 1 and fit ~= nil and n <= fit)
      end } })
end

-- tokens per tile when a tile needs rows_per_token UB rows per token plus extra rows
function moe.tile_tokens(s, rows_per_token, extra)
  local n = (s.ub_rows - (extra or 0)) // rows_per_token
  if n < 1 then
    error(string.format("moe: hidden %d does not fit: a token needs %d UB rows of %d bytes, "
      .. "the UB budget is %d bytes", s.hidden, rows_per_token + (extra or 0),
      s.stride * s.esize, s.ub_bytes), 0)
  end
  return n
end

-- the signal of source pe in a signal buffer
function moe.sig(buf, pe)
  return buf:sub(pe * moe.SIG, 1)
end

-- a row counter per PE, all 0
function moe.counter(n)
  local t = {}
  for p = 0, n - 1 do t[p] = 0 end
  return t
end

-- payload (metrics.payload_bytes) of an MoE op: local tokens x hidden, in the
-- input dtype
function moe.payload(c)
  local cfg = moe.config(c)
  return { local_tokens = cfg.tokens, hidden = cfg.hidden,
           dtype_size = lab.core.dtype_size(c.dtype) }
end

-- payload of a dispatch: local tokens x hidden in the dtype its rows are sent
-- in (c.dispatch_dtype; an INT8 row's scale is not counted)
function moe.dispatch_payload(c)
  local p = moe.payload(c)
  p.dtype_size = lab.core.dtype_size(c.dispatch_dtype or c.dtype)
  return p
end

-- DeepEP's bandwidth inputs (metrics.deepep): the rows each PE receives (one
-- per token-expert pair, local rows included), the bytes of one on the wire and
-- the hidden size (DeepEP counts a row as hidden BF16 values).
-- dispatch: PE d receives R.recv[d] rows of s.wire.bytes
function moe.deepep_dispatch(_, s)
  local rows = {}
  for d = 0, s.routes.n_pes - 1 do rows[d] = s.routes.recv[d] end
  return { recv_rows = rows, row_bytes = s.wire.bytes, wire_dtype = s.wire.dtype,
           hidden = s.hidden }
end

-- combine: every PE gets back its tokens x topk rows, in the input dtype
function moe.deepep_combine(_, s)
  local rows = {}
  for p = 0, s.routes.n_pes - 1 do rows[p] = s.routes.tokens * s.routes.topk end
  return { recv_rows = rows, row_bytes = s.hidden * s.esize, wire_dtype = s.dtype,
           hidden = s.hidden }
end

-- describe of an MoE op: the algorithm, chunk, cores, the UB and the routing summary
function moe.describe(s, algorithm, chunk_elems, cores)
  return { algorithm = algorithm, chunk_elems = chunk_elems, ub_bytes = s.ub_bytes,
           cores = cores, routing = moe.summary(s.routes) }
end

------------------------------------------------------------------------------
-- kernel plumbing

-- DataCopy when count elements are whole 32-byte blocks, DataCopyPad otherwise
local function copy(k, dst, src, count, esize)
  if (count * esize) % 32 == 0 then k:data_copy(dst, src, count)
  else k:data_copy_pad(dst, src, count) end
end

-- rows rows of hidden elements, src's step elements apart -> dst's step apart:
-- one transfer when the steps agree (rows of whole 32-byte blocks), else one
-- DataCopyPad per row (this engine has no strided DataCopyPad)
local function copy_rows(k, dst, dst_step, src, src_step, rows, hidden)
  if dst_step == src_step then
    k:data_copy(dst, src, rows * hidden)
  else
    for r = 0, rows - 1 do
      k:data_copy_pad(dst:sub(r * dst_step, hidden), src:sub(r * src_step, hidden), hidden)
    end
  end
end

-- rows token rows GM (contiguous, hidden each) -> UB (stride apart)
function moe.load_rows(k, ub, src, rows, hidden, stride)
  copy_rows(k, ub, stride, src, hidden, rows, hidden)
end

-- the reverse of load_rows: rows UB rows (stride apart) -> GM rows (contiguous)
function moe.store_rows(k, dst, ub, rows, hidden, stride)
  copy_rows(k, dst, hidden, ub, stride, rows, hidden)
end

-- one UB -> remote GM put per PE group g: g.count rows of ub from row g.first to
-- row g[at] of PE g.pe's dst (at: "slot" or "send"); the rows counted in sent
function moe.put_groups(k, dst, at, ub, groups, sent, hidden, stride)
  for _, g in ipairs(groups) do
    moe.store_rows(k, k:ptr(dst, g.pe):sub(g[at] * hidden), ub:sub(g.first * stride), g.count,
                   hidden, stride)
    sent[g.pe] = sent[g.pe] + g.count
  end
end

-- quiet (every put has landed), then signal each PE rows were sent to with
-- their count (SIGNAL_ADD on my signal there, or on signal `at` of it)
function moe.signal_counts(k, sig, sent, at)
  k:quiet()
  local s = moe.sig(sig, at or k.pe)
  for pe = 0, k.n_pes - 1 do
    if sent[pe] > 0 then k:signal_op(s, sent[pe], lab.SIGNAL_ADD, pe) end
  end
end

-- the reverse of put_groups: one GM -> UB load per group g: g.count rows of
-- src from row g[at] into ub from row g.first
function moe.load_groups(k, ub, src, at, groups, hidden, stride)
  for _, g in ipairs(groups) do
    moe.load_rows(k, ub:sub(g.first * stride), src:sub(g[at] * hidden), g.count, hidden, stride)
  end
end

-- pack a loaded tile's rows by destination: pack row j = tile row rows[j].i
-- (a UB -> UB copy on the V pipe: Muls by 1, exact)
function moe.pack(k, pack, tile_ub, tile, hidden, stride)
  for j, r in ipairs(tile.rows) do
    k:muls(pack:sub((j - 1) * stride, hidden), tile_ub:sub(r.i * stride, hidden), 1, hidden)
  end
end

-- the combine weight of the k-th expert of a token: 1, 1/2, 1/4, 1/8, 1/8, ...
-- (powers of two: exact in fp16 and bf16)
function moe.weight(k)
  return 2.0 ^ -math.min(k, 3)
end

-- out row i = sum over k of weight(k) * grp row at[i, k], for the tile's tokens
function moe.weighted_sum(k, out, grp, tmp, tile, topk, hidden, stride)
  for i = 0, tile.n - 1 do
    local o = out:sub(i * stride, hidden)
    k:muls(o, grp:sub(tile.at[i * topk + 1] * stride, hidden), moe.weight(0), hidden)
    for kk = 1, topk - 1 do
      k:muls(tmp, grp:sub(tile.at[i * topk + kk + 1] * stride, hidden), moe.weight(kk), hidden)
      k:add(o, o, tmp, hidden)
    end
  end
end

-- the UB of a dispatch tile: {tile = input rows, pack = rows by destination in
-- the wire dtype, stage = a UB of the wire dtype to copy GM -> GM through};
-- quantising also the fp32 work rows {f, t, r} and the pack cleared once (the
-- pads of every INT8 row go out as zeros)
function moe.dispatch_ub(k, a)
  local n, S = a.tile_tokens, a.stride
  if not a.wire.quant then
    local ub = k:ub(a.dtype, a.ub_elems)
    return { tile = ub:sub(0, n * S), pack = ub:sub(n * S), stage = ub }
  end
  local F = moe.stride(a.hidden, 4)
  local u = { tile = k:ub(a.dtype, n * S), pack = k:ub("int8", n * a.routes.topk * a.wire.row),
              f = k:ub("fp32", F), t = k:ub("fp32", F), r = k:ub("fp32", 8, "backed") }
  u.stage = u.pack
  k:duplicate(u.pack, 0, #u.pack)
  return u
end

-- x rounded to fp32 (the scalar unit's float arithmetic)
local function f32(x)
  return (string.unpack("<f", string.pack("<f", x)))
end

-- quantise token row x (hidden elements, UB) into INT8 row q (UB) as Ascend's
-- dynamic quant does: Cast to fp32, Abs, ReduceMax (V); the max on the S pipe
-- (V_S, GetValue, S_V), inv = 127 / max; Muls by inv, Cast to int8 with
-- CAST_RINT (V). Returns the scale 1 / inv (fp32) for the caller to store.
function moe.quantise(k, q, x, u, hidden)
  k:cast(u.f, x, hidden)
  k:abs(u.t, u.f, hidden)
  k:reduce_max(u.r, u.t, hidden)
  k:set_flag("V_S", 0); k:wait_flag("V_S", 0)
  local inv = f32(127 / k:get_value(u.r, 0))
  k:set_flag("S_V", 0); k:wait_flag("S_V", 0)
  k:muls(u.f, u.f, inv, hidden)
  k:cast(q, u.f, hidden, "rint")
  return f32(1 / inv)
end

-- pack a loaded tile's tokens by destination as INT8 rows: each token with
-- rows in the tile is quantised once into its first pack row, the int8 values
-- copied (V) into its other rows, its scale written into every one (S);
-- then S_MTE3 so that the scales are in place before the puts
function moe.pack_int8(k, pack, u, tile, a)
  local H, S, K, P, at = a.hidden, a.stride, a.routes.topk, a.wire.row, a.wire.scale_at
  for i = 0, tile.n - 1 do
    local rows = {}
    for kk = 0, K - 1 do rows[#rows + 1] = tile.at[i * K + kk + 1] end
    if #rows > 0 then
      local first = pack:sub(rows[1] * P, P)
      local scale = moe.quantise(k, first:sub(0, H), u.tile:sub(i * S, H), u, H)
      for j = 2, #rows do k:data_copy(pack:sub(rows[j] * P, at), first:sub(0, at), at) end
      for _, r in ipairs(rows) do
        k:set_value(pack:sub(r * P + at, 4):reinterpret("fp32"), 0, scale)
      end
    end
  end
  k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
end

-- pack a loaded tile's rows by destination in the wire format (a.wire)
function moe.pack_tile(k, u, tile, a)
  if a.wire.quant then moe.pack_int8(k, u.pack, u, tile, a)
  else moe.pack(k, u.pack, u.tile, tile, a.hidden, a.stride) end
end

-- permute the tiles' rows into buf by destination (position = send position - lo),
-- in the wire format: load a tile, pack it in UB, one copy per destination group
function moe.permute(k, buf, input, u, tiles, lo, a)
  local H, S, W = a.hidden, a.stride, a.wire
  for i, t in ipairs(tiles) do
    moe.load_rows(k, u.tile, input:sub(t.first * H), t.n, H, S)
    k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
    moe.pack_tile(k, u, t, a)
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    for _, g in ipairs(t.groups) do
      moe.store_rows(k, buf:sub((g.send - lo) * W.row), u.pack:sub(g.first * W.stride), g.count,
                     W.row, W.stride)
    end
    if i < #tiles then k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0) end
  end
end

-- clear count elements of GM at dst: zeros (a zero-filled GM buffer) into UB once,
-- then UB -> GM in chunks (this engine has no Duplicate to fill UB)
function moe.clear(k, dst, count, zeros, ub)
  local n0 = math.min(count, #zeros, #ub)
  local esize = lab.core.dtype_size(ub.dtype)
  copy(k, ub, zeros, n0, esize)
  k:set_flag("MTE2_MTE3", 0); k:wait_flag("MTE2_MTE3", 0)
  for at = 0, count - 1, n0 do
    local n = math.min(n0, count - at)
    copy(k, dst:sub(at, n), ub, n, esize)
  end
end

-- atomically add weight(k) * row into the output tokens, for the rows of source
-- PE k.pe that expert PE d holds in this launch's window [a.lo, a.hi); buf is d's
-- HCCL buffer (row x of the window at x - lo). Rows come in UB-sized chunks:
-- GM -> UB, Muls into a second UB half, atomic-add UB -> GM per row.
function moe.accumulate(k, a, buf, d, ub)
  local R, pe, H, S = a.routes, k.pe, a.hidden, a.stride
  local cnt, x = moe.overlap(R.recv_off[d][pe], R.send[pe][d], a.lo, a.hi)
  local half = a.ub_rows // 2
  local rows, scaled = ub:sub(0, half * S), ub:sub(half * S, half * S)
  for c0 = 0, cnt - 1, half do
    local n = math.min(half, cnt - c0)
    moe.load_rows(k, rows, buf:sub((x + c0 - a.lo) * H), n, H, S)
    k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
    local base = R.send_off[pe][d] + (x + c0 - R.recv_off[d][pe])
    for j = 0, n - 1 do
      local kk = (R.order[pe][base + j + 1] - 1) % R.topk
      k:muls(scaled:sub(j * S, H), rows:sub(j * S, H), moe.weight(kk), H)
    end
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    k:set_atomic("add", a.dtype)
    for j = 0, n - 1 do
      local t = (R.order[pe][base + j + 1] - 1) // R.topk
      copy(k, a.output:sub(t * H, H), scaled:sub(j * S, H), H, a.esize)
    end
    k:set_atomic_none()
    k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
  end
end

------------------------------------------------------------------------------
-- host-side references (untimed, in C through view:copy)

-- dispatch: every source row in its slot of the expected receive buffers
-- (PE d's at d * cap * wire.row of a host buffer), in the wire format: copied,
-- or quantised on the host (view:quant_int8: int8 values, zero pads, scale)
function moe.expect_dispatch(m, R, input, cap, wire)
  local H, K, W = R.hidden, R.topk, wire.row
  local e = m:host(wire.dtype, R.n_pes * cap * W, "expect"):fill("zero")
  if m:timing_only() then return e end   -- no bytes to place: the rows would be no-ops
  for p = 0, R.n_pes - 1 do
    local src = input:on(p)
    for i = 1, R.tokens * K do
      local x = src:sub((i - 1) // K * H, H)
      local row = e:sub((R.dest[p][i] * cap + R.slot[p][i]) * W, W)
      if wire.quant then row:sub(0, H):quant_int8(x, row:sub(wire.scale_at, 4):reinterpret("fp32"))
      else row:copy(x) end
    end
  end
  return e
end

-- combine: the expert outputs (receive layout, cap rows per PE) and the expected
-- outputs. The outputs are small random integers B pre-multiplied by 1 / weight(k)
-- of their row (doubled in place with copy "add"), so weight(k) * output = B
-- exactly and the expected token = sum over k of B, built with copy "add".
-- buf (optional): the buffer to hold them (e.g. symmetric), cap * hidden elements
function moe.expert_outputs(m, R, dtype, cap, seed, buf)
  local H, K, T = R.hidden, R.topk, R.tokens
  local out = op.fill_reduce_input(buf or m:alloc(dtype, cap * H, "expert_out"), seed)
  local e = m:host(dtype, R.n_pes * T * H, "expect"):fill("zero")
  if m:timing_only() then return out, e end   -- no bytes: every row copy would be a no-op
  for p = 0, R.n_pes - 1 do
    for i = 1, T * K do
      local t = (i - 1) // K
      e:sub((p * T + t) * H, H):copy(out:on(R.dest[p][i]):sub(R.slot[p][i] * H, H), "add")
    end
  end
  for p = 0, R.n_pes - 1 do
    for i = 1, T * K do
      local row = out:on(R.dest[p][i]):sub(R.slot[p][i] * H, H)
      for _ = 1, math.min((i - 1) % K, 3) do row:copy(row, "add") end
    end
  end
  return out, e
end

-- compare buf on every PE with PE p's part (per elements at p * per) of a host
-- buffer: wrong [, index, pe, expected, actual] like view:compare
function moe.compare(buf, expect, per, n_pes)
  local wrong, first = 0, nil
  for p = 0, n_pes - 1 do
    local w, i, pe, x, y = buf:on(p):compare(expect:sub(p * per, per))
    if w > 0 then
      first = first or { i, pe, x, y }
      wrong = wrong + w
    end
  end
  if wrong == 0 then return 0 end
  return wrong, first[1], first[2], first[3], first[4]
end

-- check of a dispatch: every PE's receive buffer s.recv against its part of
-- s.expect (INT8 rows: values, pads and scale bytes, bit for bit)
function moe.check_dispatch(_, c, s)
  return moe.compare(s.recv, s.expect, s.routes.max_recv * s.wire.row, c.pes)
end

-- check of a combine: every PE's output tokens s.output against its part of s.expect
function moe.check_combine(_, c, s)
  return moe.compare(s.output, s.expect, s.routes.tokens * s.hidden, c.pes)
end

return moe
