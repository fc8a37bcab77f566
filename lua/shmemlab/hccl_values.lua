-- shmemlab.hccl_values: where the bytes of an HCCL task plan (shmemlab.hccl_levels)
-- come from and land, so that the baseline computes its collective and is checked
-- like any op. Each PE has one symmetric work buffer W (HCCL's CCL buffer) holding
-- the collective's data for one launch, cut into atoms: a rank's block (allgather,
-- reduce_scatter, alltoall) or a slice's sub-piece (allreduce, broadcast). A phase
-- moves regions of p atoms-or-blocks between the ranks of its groups; a region's
-- place in W follows a layout chosen so that every transfer of the plan is one
-- contiguous range on both ends (one descriptor, as the plan times it):
--   nat   region r at r
--   asc   region r at (r - x) mod p (x the rank's index): NHR reduce-scatter sends
--         the ranges [x + d, x + d + m) forward
--   desc  region r at -((x - r) mod p): NHR allgather sends what it holds,
--         x, x - 1, ..., x - m + 1; negative places keep it clear of the asc
--         places of the same phase (NHR allreduce, broadcast's scatter)
--   rasc  root-relative, unrolled: the binomial scatter's halves [rel + d, rel + 2d)
-- Reductions ride the descriptors (sdma_reduce_nbi / roce_reduce_nbi: HCCL's SDMA
-- inline reduce and RDMA write with reduce, cann-hccl coll_comm_executor.cc
-- GetReduceAttr; the templates' Sender / Reducer, e.g. reduce_scatter_mesh.cc).
-- HCCL's copies between the user buffers and the CCL buffer are not in the plan's
-- timing; here the host stages them between launches.
local op = require("shmemlab.op")
local algo = require("shmemlab.hccl_algo")

local V = {}

-- the place of region r for rank x of a p-rank group under layout lay
local function pos(lay, x, r, p, root)
  if lay == "nat" then return r end
  if lay == "asc" then return (r - x) % p end
  if lay == "desc" then return -((x - r) % p) end
  return r - (x - root) % p                    -- rasc: r is root-relative, unrolled
end
V.pos = pos

local function find(plan, pred)
  for ix, x in ipairs(plan.phases) do if pred(x) then return ix, x end end
end

-- the layout of a level's regions in a plan: desc after an NHR allgather, asc
-- before it for reduce_scatter / allreduce, else natural
local function nhr_of(plan)
  local _, x = find(plan, function(y) return y.algo == "nhr" end)
  return x
end

-- allgather / reduce_scatter: atoms = ranks' blocks, outer = servers (level 1),
-- inner = ranks of a server (level 0); a plan of one level over every rank has one
-- outer block
local function block_frame(plan, n, per, chunk, reduce)
  local nhr = nhr_of(plan)
  local all = #plan.phases == 1 and plan.phases[1].level == 0 and plan.phases[1].p == n
  local Sg, Pg = all and 1 or n // per, all and n or per
  local lay1 = (nhr and not all) and (reduce and "asc" or "desc") or "nat"
  local lay0 = (nhr and all) and (reduce and "asc" or "desc") or "nat"
  local o1 = lay1 == "desc" and Sg - 1 or 0
  local o0 = lay0 == "desc" and Pg - 1 or 0
  local f = { welems = n * chunk, chunk = chunk }
  local function outer(pe, srv) return (o1 + pos(lay1, pe // Pg, srv, Sg)) * Pg * chunk end
  function f.slot(pe, a)
    return outer(pe, a // Pg) + (o0 + pos(lay0, pe % Pg, a % Pg, Pg)) * chunk
  end
  function f.ctx(x)
    if x.algo == "pipeline" then return { pipeline = true } end
    if x.level == 1 then
      return { R = Pg * chunk, base = function() return o1 * Pg * chunk end }
    end
    return { R = chunk, base = function(pe) return outer(pe, pe // Pg) + o0 * chunk end }
  end
  return f
end

-- allreduce: atoms = sub-piece s' of slice i' (outer: the level-0 slices, inner:
-- the level-1 pieces of a slice); NHR keeps its reduce-scatter places (asc) apart
-- from its allgather places (desc) in a slice of 2 Sg - 1 pieces
local function slice_frame(plan, n, per, chunk)
  local nhr = nhr_of(plan)
  local all = nhr and nhr.p == n and nhr.level == 0
  local Pg, Sg = all and 1 or per, all and n or n // per
  local origin = nhr and Sg - 1 or 0
  local stride = (nhr and 2 * Sg - 1 or Sg) * chunk
  local l1 = find(plan, function(y) return y.level == 1 or y == nhr end) or math.huge
  local f = { welems = Pg * stride, chunk = chunk, atoms = Pg * Sg }
  local function m1(pe) return all and pe or pe // per end
  function f.slot(pe, a, final)
    local i, s = a // Sg, a % Sg
    local lay = nhr and (final and "desc" or "asc") or "nat"
    return i * stride + (origin + pos(lay, m1(pe), s, Sg)) * chunk
  end
  function f.ctx(x, ix)
    if x.algo == "nhr" or x.level == 1 then
      return { R = chunk,
               base = function(pe) return (all and 0 or pe % per) * stride + origin * chunk end }
    end
    return { R = stride, base = function() return ix < l1 and origin * chunk or 0 end }
  end
  return f
end

-- broadcast: atoms = sub-piece r' of slice i'; NHR's binomial scatter (rasc, up to
-- 2^K pieces) and its allgather (desc) share a slice of Sg - 1 + 2^K pieces
local function bcast_frame(plan, n, per, chunk, root)
  local nhr = nhr_of(plan)
  local S = n // per
  local Sg = nhr and S or 1
  local cap = nhr and 1 << algo.log2ceil(S) or 1
  local origin = nhr and S - 1 or 0
  local stride = (origin + cap) * chunk
  local rs = root // per
  local l1 = find(plan, function(y) return y.level == 1 end) or math.huge
  local f = { welems = per * stride, chunk = chunk, atoms = per * Sg, root = root }
  function f.slot(pe, a, final)
    local i, r = a // Sg, a % Sg
    local p = final and nhr and -(((pe // per - rs) % S - r) % S) or r
    return i * stride + (origin + p) * chunk
  end
  function f.ctx(x, ix)
    if x.level == 1 then
      return { R = chunk, root = rs,
               base = function(pe) return pe % per * stride + origin * chunk end }
    end
    return { R = stride, base = function() return ix < l1 and origin * chunk or 0 end }
  end
  return f
end

-- alltoall over one level: W = the send blocks, then the receive blocks
local function a2a_frame(n, chunk)
  local f = { welems = 2 * n * chunk, chunk = chunk }
  function f.ctx() return { a2a = true, R = chunk, base = function() return 0 end } end
  return f
end

-- the parts a rank's count splits into (every piece a whole number of elements)
local function parts(plan, collective, n, per)
  if collective == "allreduce" then
    if plan.phases[1].algo == "pipeline" then return n end
    local nhr = nhr_of(plan)
    if nhr and nhr.p == n then return n end
    return per * (n // per)
  elseif collective == "broadcast" then
    return nhr_of(plan) and per * (n // per) or per
  end
  return 1
end

-- why a plan cannot carry values (nil: it can)
local function unsupported(plan, n, per)
  for _, x in ipairs(plan.phases) do
    if x.algo == "pairwise" then
      return "HCCL's staged alltoall sends a block list per pairwise step (one "
             .. "descriptor a block), the plan one descriptor a step"
    end
    if x.algo == "hd" and x.prim ~= "allgather" and x.prim ~= "broadcast" then
      return "RHD " .. x.prim .. " is not in a selection table"
    end
    if x.algo == "mesh" and x.prim == "allreduce" then return "mesh allreduce is not in a selection table" end
  end
  if n % per ~= 0 then return "PEs not a whole number of servers" end
end

-- the frame of a run (nil and why when its values cannot be carried): chunk =
-- elements of an atom in one launch
function V.frame(plan, c, loops)
  local n, per = c.pes, plan.topology.per_server
  local why = unsupported(plan, n, per)
  if why then return nil, why end
  local k = parts(plan, plan.collective, n, per) * loops
  if c.count % k ~= 0 then
    return nil, string.format("count %d is not a multiple of %d (the plan's pieces times "
                              .. "its %d launch(es))", c.count, k, loops)
  end
  local chunk, coll = c.count // k, plan.collective
  local f
  if coll == "allgather" or coll == "reduce_scatter" then
    f = block_frame(plan, n, per, chunk, coll == "reduce_scatter")
  elseif coll == "allreduce" and plan.phases[1].algo == "pipeline" then
    f = block_frame(plan, n, per, chunk, true)    -- the pipelines' pieces: n, in place
    f.atoms = n
  elseif coll == "allreduce" then f = slice_frame(plan, n, per, chunk)
  elseif coll == "broadcast" then f = bcast_frame(plan, n, per, chunk, c.root or 0)
  else f = a2a_frame(n, chunk) end
  f.collective, f.count, f.parts = coll, c.count, k // loops
  return f
end

-- the element offsets of a transfer of group ranks fi -> ti carrying region
-- descriptor d under phase context ctx: soff, doff (nil: no values)
function V.place(ctx, d, from, to, fi, ti, p)
  if not d then return nil end
  if ctx.a2a then
    return { ctx.base(from) + ti * ctx.R, ctx.base(to) + (p + fi) * ctx.R }
  end
  return { ctx.base(from) + pos(d.lay, fi, d.r, p, ctx.root) * ctx.R,
           ctx.base(to) + pos(d.lay, ti, d.r, p, ctx.root) * ctx.R, d.red }
end

-- the user buffers and the reference (as the AIV baseline's setup makes them)
function V.io(m, c, collective, s)
  local n, dt = c.pes, c.dtype
  if collective == "allgather" then
    s.input = op.fill_input(m:alloc(dt, c.count, "input"), dt)
    s.output = m:alloc(dt, c.count * n, "output")
    s.expect = op.allgather_expect(m, c, s.input)
  elseif collective == "reduce_scatter" then
    s.input = op.fill_reduce_input(m:alloc(dt, c.count * n, "input"))
    s.output = m:alloc(dt, c.count, "output")
    s.expect = op.reduce_scatter_expect(m, c, s.input, s.atomic)
  elseif collective == "allreduce" then
    s.input = op.fill_reduce_input(m:alloc(dt, c.count, "input"))
    s.output = m:alloc(dt, c.count, "output")
    s.expect = op.allreduce_expect(m, c, s.input, s.atomic)
  elseif collective == "broadcast" then
    s.input = op.fill_input(m:alloc(dt, c.count, "input"), dt)
    s.output = m:alloc(dt, c.count, "output")
    s.expect = m:host(dt, c.count, "expect"):copy(s.input:on(c.root or 0))
  else
    s.input = op.fill_input(m:alloc(dt, c.count * n, "input"), dt)
    s.output = m:alloc(dt, c.count * n, "output")
    s.expect = op.alltoall_expect(m, c, s.input)
  end
end

-- host staging of launch l (0-based): HCCL's copy of the user input into the CCL
-- buffer (before) and of the result out of it (after); f.parts atoms of a rank's
-- count, each launch an f.chunk-element piece of every atom
function V.stage_in(f, s, n, l)
  local ch, atom = f.chunk, f.count // f.parts
  local coll = f.collective
  for pe = 0, n - 1 do
    local w, inp = s.w:on(pe), s.input:on(pe)
    if coll == "allgather" then
      w:sub(f.slot(pe, pe), ch):copy(inp:sub(l * ch, ch))
    elseif coll == "reduce_scatter" then
      for a = 0, n - 1 do w:sub(f.slot(pe, a), ch):copy(inp:sub(a * f.count + l * ch, ch)) end
    elseif coll == "allreduce" or (coll == "broadcast" and pe == f.root) then
      for a = 0, f.atoms - 1 do w:sub(f.slot(pe, a), ch):copy(inp:sub(a * atom + l * ch, ch)) end
    elseif coll == "alltoall" then
      for j = 0, n - 1 do w:sub(j * ch, ch):copy(inp:sub(j * f.count + l * ch, ch)) end
    end
  end
end

function V.stage_out(f, s, n, l)
  local ch, atom = f.chunk, f.count // f.parts
  local coll = f.collective
  for pe = 0, n - 1 do
    local w, out = s.w:on(pe), s.output:on(pe)
    if coll == "allgather" then
      for a = 0, n - 1 do out:sub(a * f.count + l * ch, ch):copy(w:sub(f.slot(pe, a), ch)) end
    elseif coll == "reduce_scatter" then
      out:sub(l * ch, ch):copy(w:sub(f.slot(pe, pe), ch))
    elseif coll == "alltoall" then
      for j = 0, n - 1 do
        local from = j == pe and j * ch or (n + j) * ch     -- a rank's own block: a local copy
        out:sub(j * f.count + l * ch, ch):copy(w:sub(from, ch))
      end
    else
      for a = 0, f.atoms - 1 do out:sub(a * atom + l * ch, ch):copy(w:sub(f.slot(pe, a, true), ch)) end
    end
  end
end

return V
