-- The flow solver against an independent model: random overlapping puts and
-- gets, some double-buffered in chunks that follow one another on a pipe (an
-- A2 mesh with a narrow HBM, an A3 switch with SIO pairs, two A2 servers
-- joined by RDMA) are run with the trace on, then
-- every transfer of the trace is replayed by a plain fluid simulation written
-- here (all rates recomputed from scratch by progressive filling at every
-- start and end, times in real numbers). Each transfer must end where the
-- replay says, within 100 ps (the engine's ends are whole picoseconds and its
-- bytes left are brought up to date at each change; the errors seen are under
-- 10 ps, the retroactive settle once fixed was 30-120 ns). The replay takes only the
-- transfers' start times, sizes and ends from the engine, and the links,
-- weights and caps from the profile (m:params()), never from the solver.
local lab = require("spec.helpers.engine").lab
local op = require("shmemlab.op")

local PS = 1e6                          -- ps per us

-- xorshift32: the next number of a stream
local function rnd(s)
  local x = s.x
  x = x ~ ((x << 13) & 0xffffffff)
  x = x ~ (x >> 17)
  x = x ~ ((x << 5) & 0xffffffff)
  s.x = x
  return x
end

-- run the random program of seed on machine o, 4 blocks per PE; the transfer records
local function run(seed, o)
  local m = lab.machine(o)
  local npes = o.pes
  local B = 64 * 1024
  local src = m:malloc("int8", 4 * B)
  local dst = m:malloc("int8", 16 * B)
  m:trace(100000)
  m:launch(function(k)
    local s = { x = seed * 7919 + k.pe * 131 + k.block * 17 + 1 }
    local ub, small = k:ub("int8", B), k:ub("int8", 8 * 1024)
    for _ = 1, 6 do
      local r = rnd(s)
      local peer, n = r % npes, 1024 * (1 + (r >> 4) % 64)
      local slot = (k.pe * 4 + k.block) % 16
      if (r >> 14) % 4 == 0 then        -- 4 KiB chunks back to back on one pipe
        local move = (r >> 16) % 2 == 0 and op.get_pipelined or op.put_pipelined
        move(k, dst:sub(slot * B, n), (r >> 16) % 2 == 0 and src:sub(0, n) or src:sub(B, n),
             small, n, peer)
      elseif (r >> 12) % 2 == 0 then
        k:mte_put_nbi(dst:sub(slot * B, n), ub, n, peer)
      else
        k:mte_get_nbi(dst:sub(slot * B, n), src:sub(0, n), ub, B, n, peer, 0)
      end
      if (r >> 13) % 3 == 0 then k:quiet() end
    end
    k:quiet()
  end, 4)
  local flows = {}
  for _, t in ipairs(m:trace_records()) do
    if t.kind == "mte" then flows[#flows + 1] = t end
  end
  return flows, m:params()
end

-- the resources (name -> weight) and cap of trace record t, and each
-- resource's capacity into C: its GM side's HBM, and its path from a to b (a
-- get, MTE2, reads from peer_pe to pe; a put, MTE3, writes from pe to
-- peer_pe): over HCCS the directed link (A2 mesh) or a's send and b's receive
-- port (A3 switch) at weight 1 / efficiency, over SIO a's link, over RDMA a's
-- NIC send and b's NIC receive
local function shape(t, p, C)
  local get = t.pipe == "MTE2"
  local a, b = t.peer_pe, t.pe
  local f = { bytes = t.bytes, start = math.floor(t.ts * PS + 0.5),
              cap = (get and p.mte2_bytes_per_cycle or p.mte3_bytes_per_cycle) * p.core_ghz / 1000,
              res = {} }
  local function cross(name, GBps, w) f.res[name], C[name] = w, GBps / 1000 end
  if not get then a, b = b, a end
  cross("hbm" .. t.peer_pe, p.hbm_GBps, 1)
  local eff = 1 / (get and p.hccs_read_eff or p.hccs_write_eff)
  if t.path == "hccs" and p.hccs_switch then
    cross("tx" .. a, p.hccs_GBps, eff)
    cross("rx" .. b, p.hccs_GBps, eff)
  elseif t.path == "hccs" then
    cross(a .. ">" .. b, p.hccs_GBps, eff)
  elseif t.path == "sio" then
    cross("sio" .. a, p.sio_GBps, 1)
  elseif t.path == "rdma" then
    cross("nic_tx" .. a, p.rdma_GBps, 1)
    cross("nic_rx" .. b, p.rdma_GBps, 1)
  else
    assert(t.path == "local", t.path)
  end
  return f
end

-- max-min fair rates of the active flows (progressive filling from scratch)
local function rates(active, C)
  local rate, frozen, left = {}, {}, {}
  for r, c in pairs(C) do left[r] = c end
  local nfree = #active
  while nfree > 0 do
    local w, level = {}, math.huge
    for _, f in ipairs(active) do
      if not frozen[f] then
        level = math.min(level, f.cap)
        for r, wr in pairs(f.res) do w[r] = (w[r] or 0) + wr end
      end
    end
    for r, wr in pairs(w) do level = math.min(level, left[r] / wr) end
    local now = {}
    for _, f in ipairs(active) do
      if not frozen[f] then
        local stop = f.cap <= level * (1 + 1e-12)
        for r in pairs(f.res) do stop = stop or left[r] / w[r] <= level * (1 + 1e-12) end
        if stop then now[#now + 1] = f end
      end
    end
    for _, f in ipairs(now) do
      frozen[f], rate[f], nfree = true, level, nfree - 1
      for r, wr in pairs(f.res) do left[r] = left[r] - wr * level end
    end
  end
  return rate
end

-- replay: each flow's end (ps) by a fluid simulation of all of them
local function replay(all, C)
  local flows = table.move(all, 1, #all, 1, {})
  table.sort(flows, function(a, b) return a.start < b.start end)
  local t, nxt, active, rem, ends = 0, 1, {}, {}, {}
  while nxt <= #flows or #active > 0 do
    while nxt <= #flows and flows[nxt].start <= t do
      active[#active + 1], rem[flows[nxt]] = flows[nxt], flows[nxt].bytes
      nxt = nxt + 1
    end
    local rate, tnext = rates(active, C), nxt <= #flows and flows[nxt].start or math.huge
    for _, f in ipairs(active) do tnext = math.min(tnext, t + rem[f] / rate[f]) end
    local still = {}
    for _, f in ipairs(active) do
      rem[f] = rem[f] - rate[f] * (tnext - t)
      if rem[f] <= 1e-6 then ends[f] = tnext else still[#still + 1] = f end
    end
    active, t = still, tnext
  end
  return ends
end

describe("engine replay", function()
  -- the replay knows the resources and caps of the flows, not the L2 (whose
  -- hits change a local read's cap and HBM share: spec/engine_l2_spec.lua),
  -- so the machines have none
  local cases = {
    { 1, { pes = 4, l2_bytes = 0 }, "A2 mesh" },
    { 2, { pes = 4, hbm_GBps = 60, l2_bytes = 0 }, "A2 mesh, HBM 60 GB/s" },
    { 3, { pes = 4, hbm_GBps = 30, l2_bytes = 0 }, "A2 mesh, HBM 30 GB/s" },
    { 4, { soc = "Ascend910_93", pes = 4, hbm_GBps = 100, l2_bytes = 0 }, "A3 switch and SIO" },
    { 5, { pes = 16, l2_bytes = 0 }, "two A2 servers, RDMA" },
  }
  for _, case in ipairs(cases) do
    it(string.format("random puts and gets (%s, seed %d) end where a fluid replay says",
                     case[3], case[1]), function()
      local recs, p = run(case[1], case[2])
      local C, flows, paths = {}, {}, {}
      for i, t in ipairs(recs) do flows[i], paths[t.path] = shape(t, p, C), true end
      assert.is_true(#flows >= 60, "transfers traced: " .. #flows)
      assert.is_true(paths.hccs or paths.rdma, "no transfer between PEs")
      local ends = replay(flows, C)
      for i, t in ipairs(recs) do
        local want, got = ends[flows[i]], (t.ts + t.dur) * PS
        assert.is_true(math.abs(got - want) <= 100,
          string.format("transfer %d (PE %d block %d %s %d B from %.6f us): ends %.6f us, "
                        .. "the replay says %.6f", i, t.pe, t.block, t.pipe, t.bytes, t.ts,
                        got / PS, want / PS))
      end
    end)
  end
end)
