-- shmemlab.hccl_algo: which algorithm HCCL runs for a collective, level by level,
-- and what cann-hccl's documented alpha-beta formula says it costs.
--
-- Selection follows cann-hccl's operators (src/domain/collective_communication/
-- algorithm/impl/operator/*_operator.cc: SelectAlgfor910B, SelectAlgfor91093) and
-- the level-1 choice of coll_alg_operator.cc (GetDefaultAlgoLevel1V2 and the
-- SelectAlgoTypeFor* cost comparisons); the formulas are those of cann-hccl's
-- docs/zh/user_guide/coll_algo_intro (Mesh.md, Ring.md, RHD.md, NHR.md,
-- Pairwise.md, Pipeline.md). doc/hccl.md says which choices are simplified.
--
-- A plan is { mode =, executor =, phases = { phase, ... }, text = } run in order;
-- a phase is { level =, algo =, prim =, p =, unit =, link =, engine = }: p ranks
-- of one level run algorithm algo (mesh, ring, nhr, hd, pairwise, pipeline) for the
-- primitive prim (allgather, reduce_scatter, allreduce, scatter, broadcast,
-- alltoall) on links of class link (hccs, rdma) with engine (SDMA, RDMA); unit
-- is the bytes of one rank's piece (allgather: what one rank contributes).
local A = {}

local KiB, MiB = 1024, 1024 * 1024

-- coll_alg_operator.cc: LATENCY, the static delay (us) the level-1 choice assumes
A.LATENCY_US = 60
-- coll_alg_operator.cc: PIPELINE_MIN_SIZE_NO_LITE (2 MiB) when the NIC has no
-- RDMA Lite, PIPELINE_MIN_SIZE (32 KiB) when it has; HCCL asks the driver. The
-- lab assumes none (no public figure says which A2 NICs have it)
A.PIPELINE_MIN = 2 * MiB
-- the expansion modes: aiv (HCCL_OP_EXPANSION_MODE=AIV: Vector cores move the
-- data inside a server) and sdma (HOST on A2, AI_CPU on A3: SDMA and RDMA tasks)
A.MODES = { aiv = true, sdma = true }
-- HCCL_OP_EXPANSION_MODE.md: the default is HOST on Atlas A2 and AI_CPU on Atlas
-- A3, both task-based (SDMA inside the server or supernode, RDMA beyond)
A.HCCL_DEFAULT = { Ascend910B = "sdma", Ascend910_93 = "sdma" }
-- what --baseline hccl runs inside one server: the lab keeps the hcomm seed's AIV
-- orchestration there (its figures predate this module); beyond one server it
-- runs HCCL_DEFAULT. doc/hccl.md gives the gap to HCCL's true default
A.LAB_SINGLE_SERVER = "aiv"

local function log2ceil(p)
  local k = 0
  while (1 << k) < p do k = k + 1 end
  return k
end
A.log2ceil = log2ceil

local function pow2(p) return p > 0 and (p & (p - 1)) == 0 end

-- the servers of n PEs on profile p: servers, PEs per server, link class between them
function A.topology(prof, n)
  local per = math.min(n, prof.pes_per_server)
  local servers = (n + per - 1) // per
  local dom = prof.supernode_dies > 0 and prof.supernode_dies or prof.pes_per_server
  return { servers = servers, per_server = per, inter = n > dom and "rdma" or
           (prof.supernode_dies > 0 and "hccs" or "rdma"), switch = prof.hccs_switch }
end

-- level-1 algorithm of allgather / reduce_scatter / allreduce among S servers, by
-- the cost comparison of SelectAlgoTypeFor{AllGather,ReduceScatter,AllReduce}: the
-- byte terms of ring, NHR and HD agree for a power of two, so the static delay
-- decides (ties keep ring, then NHR); RHD's extra bytes lose otherwise
function A.level1_rs_ag(S)
  local ring, nhr = (S - 1) * A.LATENCY_US, log2ceil(S) * A.LATENCY_US
  return nhr < ring and "nhr" or "ring"
end

-- level-1 algorithm of broadcast (SelectAlgoTypeForBroadcast): ring or HD; for a
-- power of two the byte terms agree and 2 log2 S < 2 (S - 1) from S = 4 on; else
-- HD pays one extra copy of the data (RHD), ring wins at bw of the profile's NIC
function A.level1_bcast(S, bytes, GBps)
  local d, steps = A.LATENCY_US, S - 1
  local t = bytes / (GBps * 1e3)                     -- us per byte term
  local ring = 2 * steps * d + 2 * steps / S * t
  local hd = pow2(S) and 2 * math.log(S, 2) * d + 2 * steps / S * t
             or (1 + 2 * math.floor(math.log(S, 2))) * d + (1 + 2 * steps / S) * t
  return hd < ring and "hd" or "ring"
end

A.pow2 = pow2
A.KiB, A.MiB = KiB, MiB

local NAME = { mesh = "mesh", ring = "ring", nhr = "NHR", hd = "RHD", pairwise = "pairwise",
               pipeline = "pipeline" }
A.NAME = NAME

-- a phase: level, algorithm, primitive, ranks, bytes of one rank's piece, link
local function ph(level, algo, prim, p, unit, link)
  return { level = level, algo = algo, prim = prim, p = p, unit = unit, link = link,
           engine = link == "rdma" and "RDMA" or "SDMA" }
end
A.phase = ph

-- Atlas A2 in HOST mode (SelectAlgfor910B of each operator, op-base mode, SDMA
-- inline reduce, deterministic computing off): level 0 the server's HCCS mesh,
-- level 1 the same-index cards of every server over RDMA
local A2 = {}
function A2.allgather(t, b)
  local S, P = t.servers, t.per_server
  if S == 1 then return "AllGatherMeshOpbaseExecutor", { ph(0, "mesh", "allgather", P, b, "hccs") } end
  if b >= A.PIPELINE_MIN then
    return "AllGatherMeshOpbasePipelineExecutor", { ph(1, "pipeline", "allgather", S, b, "rdma") }
  end
  return "AllGatherMeshExecutor", { ph(0, "mesh", "allgather", P, b, "hccs"),
                                    ph(1, A.level1_rs_ag(S), "allgather", S, P * b, "rdma") }
end
function A2.reduce_scatter(t, b)
  local S, P = t.servers, t.per_server
  if S == 1 then
    return "ReduceScatterMeshDmaEliminationExecutor", { ph(0, "mesh", "reduce_scatter", P, b, "hccs") }
  end
  if b >= A.PIPELINE_MIN then
    return "ReduceScatterMeshOpbasePipelineExecutor",
           { ph(1, "pipeline", "reduce_scatter", S, b, "rdma") }
  end
  return "ReduceScatterMeshExecutor", { ph(1, A.level1_rs_ag(S), "reduce_scatter", S, P * b, "rdma"),
                                        ph(0, "mesh", "reduce_scatter", P, b, "hccs") }
end
function A2.allreduce(t, b)
  local S, P = t.servers, t.per_server
  local slice = b // P
  local out = { ph(0, "mesh", "reduce_scatter", P, slice, "hccs") }
  if S > 1 and b // (S * P) >= A.PIPELINE_MIN then
    return "AllReduceMeshOpbasePipelineExecutor",
           { ph(1, "pipeline", "reduce_scatter", S, b // (S * P), "rdma"),
             ph(1, "pipeline", "allgather", S, b // (S * P), "rdma") }
  end
  if S > 1 then out[2] = ph(1, A.level1_rs_ag(S), "allreduce", S, slice // S, "rdma") end
  out[#out + 1] = ph(0, "mesh", "allgather", P, slice, "hccs")
  return "AllReduceMeshExecutor", out
end
function A2.alltoall(t, b)
  local S, P = t.servers, t.per_server
  if S == 1 then return "RunAlltoAllVFullMesh", { ph(0, "mesh", "alltoall", P, b, "hccs") } end
  return "RunAlltoAllVStaged", { ph(0, "mesh", "alltoall", P, S * b, "hccs"),
                                 ph(1, "pairwise", "alltoall", S, P * b, "rdma") }
end
function A2.broadcast(t, b, prof)
  local S, P = t.servers, t.per_server
  local slice = b // P
  local out = { ph(0, "mesh", "scatter", P, slice, "hccs") }
  if S > 1 then
    out[2] = ph(1, A.level1_bcast(S, slice, prof.rdma_GBps), "broadcast", S, slice, "rdma")
  end
  out[#out + 1] = ph(0, "mesh", "allgather", P, slice, "hccs")
  return "BroadCastMeshExecutor", out
end

-- Atlas A3 in AI_CPU mode (SelectAlgfor91093, one supernode: the level-1 link is
-- the UB switch, HCCS class; its double ring is run as one ring, see doc/hccl.md).
-- Its size thresholds (bytes of a rank's dataSize; allreduce's per rank of the
-- communicator), named so that a spec can reach each executor at small sizes
local A3 = {}
A.A3_MESH_MAX = 2 * MiB          -- allgather / reduce_scatter: mesh up to here in a server
A.A3_AG_SMALL_MAX = 4 * MiB      -- allgather beyond a server: AllGatherSmallCount up to here
A.A3_AR_MESH_PER_RANK = MiB      -- allreduce in a server: small-count mesh up to n x this
A.A3_AR_COMM_PER_RANK = 256 * KiB  -- allreduce beyond a server: AllReduceComm up to n x this
function A3.allgather(t, b, _, n)
  local S, P = t.servers, t.per_server
  if S == 1 then
    if b <= A.A3_MESH_MAX then
      return "AllGatherMeshOpbaseExecutor", { ph(0, "mesh", "allgather", P, b, "hccs") }
    end
    return "AlignedAllGatherDoubleRingFor91093Executor", { ph(0, "ring", "allgather", P, b, "hccs") }
  end
  if b <= A.A3_AG_SMALL_MAX then
    return "AllGatherSmallCount", { ph(0, pow2(n) and "hd" or "nhr", "allgather", n, b, "hccs") }
  end
  return "AlignedAllGatherDoubleRingFor91093Executor",
         { ph(0, "ring", "allgather", P, b, "hccs"), ph(1, "nhr", "allgather", S, P * b, t.inter) }
end
function A3.reduce_scatter(t, b)
  local S, P = t.servers, t.per_server
  if S == 1 and b <= A.A3_MESH_MAX then
    return "ReduceScatterDeterExecutor", { ph(0, "mesh", "reduce_scatter", P, b, "hccs") }
  end
  if S == 1 then
    return "AlignedReduceScatterDoubleRingFor91093Executor", { ph(0, "ring", "reduce_scatter", P, b, "hccs") }
  end
  return "AlignedReduceScatterDoubleRingFor91093Executor",
         { ph(1, "nhr", "reduce_scatter", S, P * b, t.inter), ph(0, "ring", "reduce_scatter", P, b, "hccs") }
end
function A3.allreduce(t, b, _, n)
  local S, P = t.servers, t.per_server
  if S == 1 and b <= A.A3_AR_MESH_PER_RANK * n then
    return "AllReduceMeshSmallCountExecutor", { ph(0, "mesh", "reduce_scatter", P, b // P, "hccs"),
                                                ph(0, "mesh", "allgather", P, b // P, "hccs") }
  end
  if S > 1 and b <= A.A3_AR_COMM_PER_RANK * n then
    return "AllReduceComm (NHR)", { ph(0, "nhr", "allreduce", n, b // n, "hccs") }
  end
  local slice = b // P
  local out = { ph(0, "ring", "reduce_scatter", P, slice, "hccs") }
  if S > 1 then out[2] = ph(1, "nhr", "allreduce", S, slice // S, t.inter) end
  out[#out + 1] = ph(0, "ring", "allgather", P, slice, "hccs")
  return "AlignedAllReduceDoubleRingFor91093Executor", out
end
function A3.alltoall(_, b, _, n)
  return "RunAlltoAllDirectFullmesh", { ph(0, "mesh", "alltoall", n, b, "hccs") }
end
function A3.broadcast(t, b)
  local S, P = t.servers, t.per_server
  local slice = b // P
  local out = { ph(0, "mesh", "scatter", P, slice, "hccs") }
  if S > 1 then out[2] = ph(1, "nhr", "broadcast", S, slice, t.inter) end
  out[#out + 1] = ph(0, "mesh", "allgather", P, slice, "hccs")
  return "BroadcastMeshExecutor (A3: not traced, doc/hccl.md)", out
end

A.TABLES = { Ascend910B = A2, Ascend910_93 = A3 }

-- alpha (us) and beta (us per byte) of a link class from the profile: HCCS at its
-- write efficiency (the emulation puts), RDMA at the NIC rate
function A.alpha_beta(prof, link)
  if link == "rdma" then return prof.rdma_alpha_ns / 1e3, 1 / (prof.rdma_GBps * 1e3) end
  return prof.hccs_alpha_ns / 1e3, 1 / (prof.hccs_GBps * prof.hccs_write_eff * 1e3)
end

-- bytes one rank moves per mesh step over its links: on a full mesh (A2) each peer
-- has its own link (Mesh.md's n/p); behind a switch port (A3) the p - 1 pieces share
-- the port
local function mesh_bytes(prof, ph_)
  return prof.hccs_switch and (ph_.p - 1) * ph_.unit or ph_.unit
end

-- cann-hccl's documented time (us) of one phase; unit = n / p of the docs
-- (broadcast: unit = n). Reductions cost no gamma: SDMA reduces inline
local FORMULA = {
  mesh = function(prof, x, a, b)
    local once = a + mesh_bytes(prof, x) * b
    return x.prim == "allreduce" and 2 * once or once
  end,
  ring = function(_, x, a, b)
    if x.prim == "broadcast" then return (x.p - 1) * (a + x.unit * b) end
    local once = (x.p - 1) * a + (x.p - 1) * x.unit * b
    return x.prim == "allreduce" and 2 * once or once
  end,
  nhr = function(_, x, a, b)
    local k = log2ceil(x.p)
    if x.prim == "broadcast" then return 2 * k * a + 2 * (x.p - 1) / x.p * x.unit * b end
    local once = k * a + (x.p - 1) * x.unit * b
    return x.prim == "allreduce" and 2 * once or once
  end,
  hd = function(_, x, a, b)
    local k = log2ceil(x.p)
    if x.prim == "broadcast" then return k * (a + x.unit * b) end
    local once = k * a + (x.p - 1) * x.unit * b
    return x.prim == "allreduce" and 2 * once or once
  end,
  pairwise = function(_, x, a, b) return (x.p - 1) * (a + x.unit * b) end,
  pipeline = function(prof, x, ai, bi)
    local aa, ba = A.alpha_beta(prof, "hccs")
    local intra = aa + x.unit * ba
    return math.max(x.unit * bi + ai, intra) * (x.p - 1) + intra
  end,
}

-- the documented time (us) of a phase and of a plan (phases in sequence)
function A.formula(prof, x)
  local a, b = A.alpha_beta(prof, x.link)
  return FORMULA[x.algo](prof, x, a, b)
end
function A.plan_formula(prof, plan)
  local t = 0
  for _, x in ipairs(plan.phases) do t = t + A.formula(prof, x) end
  return t
end

-- "level0 mesh (SDMA), level1 NHR (RDMA)"
function A.describe(phases)
  local parts = {}
  for _, p in ipairs(phases) do
    parts[#parts + 1] = string.format("level%d %s %s (%s)", p.level, NAME[p.algo],
                                      p.prim:gsub("_", "-"), p.engine)
  end
  return table.concat(parts, ", ")
end

-- the plan HCCL runs for collective on n PEs of profile prof, bytes = HCCL's
-- dataSize (count x element size of the op's count), mode aiv | sdma | nil (the
-- lab's default: see LAB_SINGLE_SERVER); nil and a message when no table fits
function A.select(prof, collective, n, bytes, mode)
  local tab = A.TABLES[prof.name]
  if not tab or not tab[collective] then
    return nil, string.format("no HCCL selection table for %s on %s", collective, prof.name)
  end
  local t = A.topology(prof, n)
  if t.inter == "rdma" and prof.supernode_dies > 0 then
    return nil, string.format("%d PEs span supernodes of %d dies: HCCL's level 2 is not "
                              .. "modeled", n, prof.supernode_dies)
  end
  if t.servers > 1 and n % t.per_server ~= 0 then
    return nil, string.format("%d PEs are not a whole number of servers of %d: HCCL's "
                              .. "levels take the same number of ranks on every server",
                              n, t.per_server)
  end
  mode = mode or (t.servers == 1 and A.LAB_SINGLE_SERVER or A.HCCL_DEFAULT[prof.name])
  if mode == "aiv" and t.servers == 1 then
    return { mode = "aiv", executor = "hcomm AIV mesh", aiv = true, topology = t,
             text = "level0 mesh (AIV)", phases = {} }
  end
  local exec, phases = tab[collective](t, bytes, prof, n)
  local text = A.describe(phases)
  if mode == "aiv" then
    text = text .. " (AIV mode beyond one server: HCCL's AIV-RDMA executors are not "
           .. "emulated; the task plan runs)"
  end
  return { mode = mode, executor = exec, phases = phases, topology = t, text = text,
           collective = collective }
end

return A
