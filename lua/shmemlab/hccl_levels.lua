-- shmemlab.hccl_levels: HCCL's task-mode collectives (HOST on A2, AI_CPU on A3)
-- run level by level on the engines HCCL drives: each step of an algorithm is a
-- set of SDMA (inside a server or supernode) or RDMA (between them) transfers,
-- each followed on the same engine queue by a notify write into the receiver's
-- flag slot for the sender; a sender's next step waits for the notifies it has
-- been sent so far. Each concurrent transfer of a step has its own block (HCCL's
-- slave streams). The plan (shmemlab.hccl_algo) gives the phases; transfers
-- carry the plan's sizes between the plan's ranks, so the timing is the
-- algorithm's, and in a data run the bytes of the collective, read and landed
-- where shmemlab.hccl_values places them (reductions on the descriptors); a
-- timing-only run (or a plan that cannot carry values) lands in a scratch zone.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local algo = require("shmemlab.hccl_algo")
local values = require("shmemlab.hccl_values")

local L = {}
local FLAG = 8                          -- int32 per flag slot (32 bytes)
L.UNUSED = "HCCL task plan: SDMA and RDMA engines move the data, no core copies or computes"

-- the ranks of a phase's groups: one group of every PE, a server's PEs (level 0)
-- or the same-index PEs of every server (level 1)
local function groups(x, n, per)
  local out = {}
  if x.level == 0 and x.p == n then
    out[1] = {}
    for pe = 0, n - 1 do out[1][pe + 1] = pe end
  elseif x.level == 0 then
    for s = 0, n // per - 1 do
      local g = {}
      for i = 0, per - 1 do g[i + 1] = s * per + i end
      out[#out + 1] = g
    end
  else
    for i = 0, per - 1 do
      local g = {}
      for s = 0, n // per - 1 do g[s + 1] = s * per + i end
      out[#out + 1] = g
    end
  end
  return out
end

-- the steps of one group (ranks g, indices 0..p-1): steps[k] = list of
-- {from, to, bytes, region} (group indices); root = index of the data's owner;
-- region = which data the transfer carries (shmemlab.hccl_values: {r =, lay =,
-- red =}; nil: no values)
local PATTERN = {}
local function pairs_of(p, f)            -- one step of f(i) -> {to, bytes, region} or nil
  local st = {}
  for i = 0, p - 1 do
    for _, t in ipairs(f(i)) do st[#st + 1] = { i, t[1], t[2], t[3] } end
  end
  return st
end
local function nat(r, red) return { r = r, lay = "nat", red = red } end
-- peers by offset: each round a permutation; a rank's own block (allgather,
-- alltoall) or the receiver's block reduced into it (reduce_scatter)
function PATTERN.mesh_all(p, u, prim)
  return { pairs_of(p, function(i)
    local t = {}
    for k = 1, p - 1 do
      local to = (i + k) % p
      local what = prim == "reduce_scatter" and nat(to, true) or prim ~= "allreduce" and nat(i) or nil
      t[k] = { to, u, what }
    end
    return t
  end) }
end
function PATTERN.scatter_mesh(p, u, root)
  local st = {}
  for k = 1, p - 1 do st[k] = { root, (root + k) % p, u, nat((root + k) % p) } end
  return { st }
end
-- ring step k (0-based): reduce-scatter forwards block i - k - 1 into the next
-- rank's partial; allgather forwards block i - k; allreduce does both in turn
function PATTERN.ring(p, u, nsteps, prim)
  local out = {}
  for k = 0, nsteps - 1 do
    local red = prim == "reduce_scatter" or (prim == "allreduce" and k < p - 1)
    local kk = red and k or k % (p - 1)
    out[#out + 1] = pairs_of(p, function(i)
      return { { (i + 1) % p, u, nat((i - kk - (red and 1 or 0)) % p, red) } }
    end)
  end
  return out
end
function PATTERN.chain(p, u, root)         -- ring broadcast: one hop a step
  local out = {}
  for k = 0, p - 2 do out[#out + 1] = { { (root + k) % p, (root + k + 1) % p, u, nat(0) } } end
  return out
end
-- NHR (ring distances) / HD (xor partners); reverse: distances halving (reduce-
-- scatter: rank i sends the partials of i + d .. i + d + m - 1, asc places),
-- else doubling (allgather: what i holds, i - m + 1 .. i, desc places, the
-- first at the lowest; HD: the aligned block of d around i)
function PATTERN.doubling(p, u, xor, reverse)
  local K, out = algo.log2ceil(p), {}
  for k = 0, K - 1 do
    local d = 1 << (reverse and K - 1 - k or k)
    out[#out + 1] = pairs_of(p, function(i)
      local to = xor and (i ~ d) or (i + d) % p
      if to >= p then return {} end
      local what
      if xor then what = not reverse and nat(i & ~(d - 1)) or nil
      elseif reverse then what = { r = to, lay = "asc", red = true }
      else what = { r = (i - math.min(d, p - d) + 1) % p, lay = "desc" } end   -- lowest place
      return { { to, math.min(d, p - d) * u, what } }
    end)
  end
  return out
end
-- tree broadcast (whole u) or scatter (halves: the root-relative pieces
-- rel + d .. rel + 2d - 1)
function PATTERN.binomial(p, u, root, halving)
  local K, out = algo.log2ceil(p), {}
  for k = 0, K - 1 do
    local d = 1 << (K - 1 - k)
    local st = {}
    for rel = 0, p - 1, 2 * d do
      if rel + d < p then
        st[#st + 1] = { (root + rel) % p, (root + rel + d) % p, halving and d * u or u,
                        halving and { r = rel + d, lay = "rasc" } or nat(0) }
      end
    end
    out[#out + 1] = st
  end
  return out
end
function PATTERN.pairwise(p, u)
  local out = {}
  for k = 1, p - 1 do out[#out + 1] = pairs_of(p, function(i) return { { (i + k) % p, u } } end) end
  return out
end

local function cat(a, b) for _, x in ipairs(b) do a[#a + 1] = x end return a end

-- the group-level steps of phase x on p ranks
local function phase_steps(x, root)
  local p, u, prim = x.p, x.unit, x.prim
  if x.algo == "mesh" then
    if prim == "scatter" then return PATTERN.scatter_mesh(p, u, root) end
    if prim == "allreduce" then return cat(PATTERN.mesh_all(p, u, prim), PATTERN.mesh_all(p, u, prim)) end
    return PATTERN.mesh_all(p, u, prim)
  elseif x.algo == "ring" then
    if prim == "broadcast" then return PATTERN.chain(p, u, root) end
    return PATTERN.ring(p, u, (prim == "allreduce" and 2 or 1) * (p - 1), prim)
  elseif x.algo == "pairwise" then
    return PATTERN.pairwise(p, u)
  end
  local xor = x.algo == "hd"
  if prim == "broadcast" and xor then return PATTERN.binomial(p, u, root, false) end
  if prim == "broadcast" then
    return cat(PATTERN.binomial(p, u // p, root, true), PATTERN.doubling(p, u // p, false, false))
  end
  if prim == "allreduce" then
    return cat(PATTERN.doubling(p, u, xor, true), PATTERN.doubling(p, u, xor, false))
  end
  return PATTERN.doubling(p, u, xor, prim == "reduce_scatter")
end

-- HCCL's pipeline (Pipeline.md): allgather in S - 1 steps, each an RDMA hop to
-- the next server's same-index card beside SDMA copies of the last piece to the
-- local peers, then one last local step. reduce_scatter runs it backwards: a
-- local step first (each rank's partials of the pieces of server s - 1 to their
-- column's rank), then S - 1 steps that forward the piece completed in the step
-- before over RDMA beside the local partials of the next, so each server adds
-- its ranks' partials before it forwards (atom = the piece a transfer carries)
local function pipeline_steps(x, n, per)
  local out, S, red = {}, x.p, x.prim == "reduce_scatter"
  for k = 1, S do
    local st = {}
    for pe = 0, n - 1 do
      local s, i, base = pe // per, pe % per, pe - pe % per
      if red then
        if k > 1 then st[#st + 1] = { pe, (pe + per) % n, x.unit, "RDMA", (s - k + 1) % S * per + i } end
        for j = base, base + per - 1 do
          if j ~= pe then st[#st + 1] = { pe, j, x.unit, "SDMA", (s - k) % S * per + j % per } end
        end
      else
        local atom = (s - k + 1) % S * per + i            -- the piece of this step
        if k < S then st[#st + 1] = { pe, (pe + per) % n, x.unit, "RDMA", atom } end
        for j = base, base + per - 1 do
          if j ~= pe then st[#st + 1] = { pe, j, x.unit, "SDMA", atom } end
        end
      end
    end
    out[k] = st
  end
  return out
end

-- the transfers of one phase (ix) into steps (from step first + 1 on); with a
-- frame (shmemlab.hccl_values) each carries place = {soff, doff, reduce}
local function add_phase(steps, first, x, ix, n, per, root, frame)
  local ctx = frame and frame.ctx(x, ix)
  for _, g in ipairs(groups(x, n, per)) do
    local groot = 0
    for i, pe in ipairs(g) do
      if pe == root or (x.level == 1 and pe // per == root // per) then groot = i - 1 end
    end
    if x.prim == "scatter" and g[groot + 1] ~= root then goto next_group end
    for k, st in ipairs(phase_steps(x, groot)) do
      local by = steps[first + k] or {}
      steps[first + k] = by
      for _, t in ipairs(st) do
        local from, to = g[t[1] + 1], g[t[2] + 1]
        by[from] = by[from] or {}
        table.insert(by[from], { to, t[3], x.engine,
                                 ctx and values.place(ctx, t[4], from, to, t[1], t[2], x.p) })
      end
    end
    ::next_group::
  end
end

-- the steps of a plan on n PEs: steps[s][pe] = list of {to, bytes, engine, place},
-- and starts[s] = true where a phase after the first begins
function L.schedule(plan, n, per, root, frame)
  local steps, starts = {}, {}
  for ix, x in ipairs(plan.phases) do
    if #steps > 0 then starts[#steps + 1] = true end
    if x.algo == "pipeline" then
      for _, st in ipairs(pipeline_steps(x, n, per)) do
        local by = {}
        for _, t in ipairs(st) do
          by[t[1]] = by[t[1]] or {}
          table.insert(by[t[1]], { t[2], t[3], t[4], frame and { frame.slot(t[1], t[5]),
                                   frame.slot(t[2], t[5]), x.prim == "reduce_scatter" } })
        end
        steps[#steps + 1] = by
      end
    else
      add_phase(steps, #steps, x, ix, n, per, root, frame)
    end
  end
  return steps, starts
end

-- what a PE waits for before step s: the newest tag from each sender of every
-- earlier step (recv[s][pe] = {sender = tag index}), and at the end
local function receives(steps, n)
  local recv, seen = {}, {}
  for pe = 0, n - 1 do seen[pe] = {} end
  for s = 1, #steps + 1 do
    recv[s] = {}
    for pe = 0, n - 1 do
      local list = {}
      for from, t in pairs(seen[pe]) do list[#list + 1] = { from, t } end
      table.sort(list, function(a, b) return a[1] < b[1] end)
      recv[s][pe] = list
    end
    for from, sends in pairs(steps[s] or {}) do
      for _, t in ipairs(sends) do seen[t[1]][from] = s end
    end
  end
  return recv
end

-- transfer t of a plan that carries values: its descriptors (one per CCL
-- buffer's worth, as the timing-only plan) from W at place[1] into the
-- receiver's W at place[2], reducing as they land where place[3] says
local function send_values(k, a, t, ub)
  local pl, es = t[4], a.esize
  for off = 0, t[2] - 1, a.piece do
    local n = math.min(a.piece, t[2] - off) // es
    local dst, src = a.w:sub(pl[2] + off // es, n), a.w:sub(pl[1] + off // es, n)
    if pl[3] then
      if t[3] == "RDMA" then k:roce_reduce_nbi(dst, src, ub, n, t[1], a.atomic)
      else k:sdma_reduce_nbi(dst, src, ub, n, t[1], a.atomic) end
    elseif t[3] == "RDMA" then k:roce_put_nbi(dst, src, ub, n, t[1])
    else k:sdma_put_nbi(dst, src, ub, n, t[1], 0) end
  end
end

-- block b of PE pe: its sends of a step are b + 1, b + 1 + B, ...; before them it
-- waits for every notify newer than the ones it has seen; at a phase's start every
-- block waits for its own transfers to land and for the PE's other blocks (HCCL's
-- executors run the levels one after the other); block 0 waits for the last
-- notifies at the end
local function kernel(k, a)
  local pe, B, ub = k.pe, k.block_num, k:ub("int32", 16, "backed")
  local seen = {}
  local function wait_for(list)
    for _, w in ipairs(list) do
      if (seen[w[1]] or 0) < w[2] then
        k:prof_start(lab.frames.SIGNAL_WAIT)
        k:wait_signal_value(a.flags:sub(w[1] * FLAG, FLAG), ub, FLAG, lab.CMP_GE, a.base + w[2])
        k:prof_end(lab.frames.SIGNAL_WAIT)
        seen[w[1]] = w[2]
      end
    end
  end
  local posted = {}
  for s, by in ipairs(a.steps) do
    if a.starts[s] then                  -- a phase ends when every stream's tasks are done
      if posted.SDMA then k:sdma_quiet(ub, 0) end
      if posted.RDMA then k:roce_quiet(pe, ub, 0) end
      posted = {}
      k:sync_all()
    end
    local mine = by[pe]
    if mine and #mine > k.block then
      wait_for(a.recv[s][pe])
      k:prof_start(lab.frames.REMOTE_PUT_GET)
      for j = k.block + 1, #mine, B do
        local t = mine[j]
        local flag = a.tags:sub(s * FLAG, FLAG)
        local at = ((a.step_slots and (s - 1) * B or 0) + k.block) * a.slot_bytes
        posted[t[3]] = true
        if a.w then send_values(k, a, t, ub)
        else
          for off = 0, t[2] - 1, a.piece do         -- a descriptor per CCL buffer's worth
            local n = math.min(a.piece, t[2] - off)
            if t[3] == "RDMA" then k:roce_put_nbi(a.land:sub(at, n), a.src:sub(0, n), ub, n, t[1])
            else k:sdma_put_nbi(a.land:sub(at, n), a.src:sub(0, n), ub, n, t[1], 0) end
          end
        end
        if t[3] == "RDMA" then k:roce_put_nbi(a.flags:sub(pe * FLAG, FLAG), flag, ub, FLAG, t[1])
        else k:sdma_put_nbi(a.flags:sub(pe * FLAG, FLAG), flag, ub, FLAG, t[1], 0) end
      end
      k:prof_end(lab.frames.REMOTE_PUT_GET)
    end
  end
  if k.block == 0 then wait_for(a.recv[#a.steps + 1][pe]) end
end

-- the blocks a schedule needs: the most sends of one PE in one step, at most cores
local function width(steps, cores)
  local w = 1
  for _, by in ipairs(steps) do
    for _, sends in pairs(by) do w = math.max(w, #sends) end
  end
  return math.min(w, cores)
end

-- setup of a task-mode baseline: the schedule, a landing zone as large as the
-- largest transfer or the CCL buffer (HCCL_BUFFSIZE: a larger transfer is one
-- descriptor per buffer's worth; every one lands at the zone's start: the bytes
-- are not the result), notify slots (one per sender) and each step's notify value
function L.setup(m, c, plan)
  local n, per = c.pes, plan.topology.per_server
  local loops = L.loops(c, plan)
  local scaled = { phases = {}, topology = plan.topology }
  for i, x in ipairs(plan.phases) do
    local y = {}
    for k, v in pairs(x) do y[k] = v end
    y.unit = (x.unit + loops - 1) // loops
    scaled.phases[i] = y
  end
  local frame, why = nil, "timing-only"
  if not m:timing_only() then frame, why = values.frame(plan, c, loops) end
  local esize = lab.core.dtype_size(c.dtype)
  local half = m:state().profile.sym_heap_bytes // 2
  if frame and frame.welems * esize > half then
    frame, why = nil, string.format("its CCL buffer of %d bytes a PE does not fit in half the "
                                    .. "symmetric heap", frame.welems * esize)
  end
  local steps, starts = L.schedule(scaled, n, per, c.root or 0, frame)
  local big = 1
  for _, by in ipairs(steps) do
    for _, sends in pairs(by) do
      for _, t in ipairs(sends) do big = math.max(big, t[2]) end
    end
  end
  big = math.min(big, c.profile.hccl_buffer_bytes)
  local blocks = width(steps, c.cores)
  -- a landing slot per step and block (no two writes of a launch share one), else
  -- per block (a step's writes apart), else one, as fits in half the heap
  local by_step = #steps * blocks * big <= half
  local slots = by_step and #steps * blocks or (blocks * big <= half and blocks or 1)
  local s = {
    hccl_plan = plan, steps = steps, starts = starts, recv = receives(steps, n), base = 0,
    piece = big, loops = loops, frame = frame, unchecked = why, esize = esize, n = n,
    blocks = blocks, slot_bytes = slots > 1 and big or 0, step_slots = by_step,
    flags = m:malloc("int32", n * FLAG, "hccl_notify", "backed"),
    tags = m:alloc("int32", (#steps + 1) * FLAG, "hccl_notify_values", "backed"),
  }
  if frame then                         -- the CCL buffer W, the user buffers, the reference
    s.w = m:malloc(c.dtype, frame.welems, "hccl_ccl")
    -- written before the check reads it (a tree's padding is read unwritten);
    -- else left to fill in as it is touched
    if c.check and c.check ~= "none" then s.w:fill("zero") end
    if plan.collective == "reduce_scatter" or plan.collective == "allreduce" then
      s.atomic = op.atomic("hccl_" .. plan.collective, c.reduce or "sum")
    end
    values.io(m, c, plan.collective, s)
  else                                  -- sizes and paths only: scratch source and landing
    s.src = m:alloc("int8", big, "hccl_src")
    if not m:timing_only() then s.src:fill("zero") end
    s.land = m:malloc("int8", big * slots, "hccl_land")
  end
  return s
end

-- one launch: the notify values of this launch (above every earlier one)
function L.run(m, _, s)
  local out = {}
  for i = 1, s.loops do
    local v = {}
    for st = 0, #s.steps do
      for j = 1, FLAG do v[st * FLAG + j] = s.base + st end
    end
    s.tags:fill(v)
    if s.frame then values.stage_in(s.frame, s, s.n, i - 1) end
    out[i] = m:launch({ name = "hccl_task_plan", kernel = kernel }, s.blocks, s)
    if s.frame then values.stage_out(s.frame, s, s.n, i - 1) end
    s.base = s.base + #s.steps + 1
  end
  return out
end

-- the bytes a rank's CCL buffer must hold for the whole collective
local RANK_BYTES = { allgather = true, reduce_scatter = true, alltoall = true }

-- the loops of an operation: HCCL's op-base executors run the algorithm once per
-- CCL buffer's worth (HCCL_BUFFSIZE) of a rank's data, each loop a launch here
function L.loops(c, plan)
  local b = c.count * lab.core.dtype_size(c.dtype)
  local total = RANK_BYTES[plan.collective] and b * c.pes or b
  return math.max(1, (total + c.profile.hccl_buffer_bytes - 1) // c.profile.hccl_buffer_bytes)
end

-- the plan of a run: --baseline hccl (nil: the lab's default), hccl-aiv, hccl-sdma
local MODE = { hccl = false, ["hccl-aiv"] = "aiv", ["hccl-sdma"] = "sdma" }
function L.plan(c, collective)
  local mode = MODE[c.baseline or "hccl"] or nil
  local bytes = c.count * lab.core.dtype_size(c.dtype)
  local plan, err = algo.select(c.profile, collective, c.pes, bytes, mode or nil)
  -- no HCCL table for this SoC or size of machine: the AIV kernels, as before
  return plan or { aiv = true, mode = "aiv", text = "level0 mesh (AIV)", note = err }
end

-- an HCCL baseline that runs its AIV kernels inside one server (aiv plans) and
-- the task plan otherwise; def is the op.define table of the AIV baseline
function L.wrap(def)
  local setup, run, describe = def.setup, def.run, def.describe
  local aiv_title = def.title
  local task_title = (aiv_title:gsub("emulated AIV orchestration", "emulated HCCL task plan"))
  def.setup = function(m, c)
    local plan = L.plan(c, def.collective)
    def.title = plan.aiv and aiv_title or task_title     -- each run loads its baseline anew
    if plan.aiv then
      local s = setup(m, c)
      s.hccl_plan = plan
      return s
    end
    return L.setup(m, c, plan)
  end
  def.run = function(m, c, s)
    if s.hccl_plan.aiv then return run(m, c, s) end
    return L.run(m, c, s)
  end
  def.describe = function(c, s)
    if s.hccl_plan.aiv then return describe(c, s) end
    local p = s.hccl_plan
    return { algorithm = string.format("HCCL %s mode, %s: %s", p.mode, p.executor, p.text),
             chunk_elems = 0, ub_bytes = 64, cores = s.blocks }   -- no UB chunk: engines move the data
  end
  -- a frame the task plan leaves unused (its blocks only post and wait) has this
  -- reason; looked up, not listed, so a one-PE run still gives its own reasons
  setmetatable(def.unused, { __index = function(_, id)
    if lab.frames.names[id] then return L.UNUSED end
  end })
  def.plan_text = function(c)   -- what the run header names (nil: AIV kernels by choice)
    local ok, plan = pcall(L.plan, c, def.collective)
    if ok and not plan.aiv then return string.format("HCCL %s mode: %s", plan.mode, plan.text) end
    if ok and plan.note then return "AIV kernels: " .. plan.note end
  end
  def.unchecked = function(_, s)
    if not s.hccl_plan.aiv and not s.frame then
      return "HCCL task plan: sizes and paths, not values: " .. s.unchecked
    end
  end
  return def
end

return L
