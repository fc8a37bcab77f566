-- Every kernel primitive called with every optional argument omitted, in
-- every check mode (issue 9, defect 1). A checked run's set_site left a value
-- on the Lua stack when a line called a primitive for the second time, and
-- the primitive's first optional argument read it ("bad argument #2 ... got
-- shmemlab.machine"): the specs missed it because every op passes explicit
-- ids. Each primitive here runs twice from the same line (the loop), so the
-- second call goes through the known-site path.

local H = require("spec.helpers.engine")
local lab = H.lab

local MODES = { "none", "memcheck", "racecheck", "synccheck", "initcheck", "all" }

-- a round's vector, scalar and UB<->GM primitives (f, w, q, r: UB tensors)
local function local_ops(k, g, acc, round, f, w, q, r)
  k:barrier_all()                        -- the previous round is over everywhere
  k:duplicate(f, -1.5, 8)
  k:duplicate(w, 2, 8)
  k:pipe_barrier()
  k:add(w, f, w, 8); k:max(w, w, f, 8); k:min(w, w, f, 8)
  k:muls(w, w, 2, 8); k:abs(w, w, 8)
  k:cast(q, w, 8)                        -- trunc: 3.0 -> 3
  k:data_copy(r, q, 8)                   -- UB -> UB on V
  k:reduce_max(w, w, 8)
  k:set_flag("V_MTE3"); k:wait_flag("V_MTE3")
  k:data_copy(g, r, 8)                   -- 3 in every element
  k:set_flag("MTE3_MTE2"); k:wait_flag("MTE3_MTE2")
  k:data_copy_pad(q, g, 8)
  k:set_flag("MTE2_S"); k:wait_flag("MTE2_S")
  k:set_value(q, 1, k:get_value(q, 0) + round)
  k:set_flag("S_MTE3"); k:wait_flag("S_MTE3")
  k:set_atomic("add")
  k:data_copy(acc, q, 8)                 -- acc += q
  k:set_atomic_none()
  k:system_cycle()
  k:pipe_barrier()
  k:sync_func("MTE3_S")                  -- SyncFunc, its id omitted
  local tq = k:tque("int32", 2, 8)       -- a TQue's round trip (no copies)
  tq:en_que(tq:alloc_tensor())
  tq:free_tensor(tq:de_que())
  tq:free_all_event()
  local s = k:ub("int32", 16)            -- the scalar passes, on a UB of their own
  k:duplicate(s, 0, 16)
  k:pipe_barrier()
  k:scalar_histogram(s, 0, 4, 0, 4, s:sub(8, 4), s:sub(12, 4))
  k:scalar_transpose(s:sub(8, 4), s, 2, 2, 2)
  k:scalar_row_sums(s:sub(12, 4), s, 2, 2, 2)
  k:scalar_topk_count(s, 0, 2, 4, 2, s:sub(8, 4), s:sub(12, 2), s:sub(14, 2), s, 4)
  k:scalar_pair_scan(s, 0, 2, 2, -1)
  k:scalar_layout_count(s, 0, 1, 2, 4, 2, s:sub(8, 4), s:sub(12, 2), s:sub(14, 2), s, 2)
end

-- a round's transfers to and from the peer, on every engine (e: an engine's workspace)
local function transfers(k, g, out, got, sig, peer, round, r, e)
  k:sync_all()
  k:barrier_all()                        -- every g written before a peer reads it
  k:mte_put_nbi(out, g, r, 32, 8, peer)
  k:quiet()                              -- its last MTE3 still reads r
  k:mte_get_nbi(got, g, r, 32, 8, peer)
  k:fence()
  k:mte_put_pipelined(out, g, r, 8, peer)   -- bufs omitted: two halves of r
  k:quiet()
  k:mte_get_pipelined(got, g, r, 8, peer)
  k:fence()
  k:putmem(out, g, 8, peer)
  k:getmem(got, g, 8, peer)
  k:put_signal(out, g, 8, sig, 1, lab.SIGNAL_ADD, peer)
  k:put_signal_nbi(out, g, 8, sig, 0, lab.SIGNAL_ADD, peer)
  k:put(out, g, 8, peer); k:get(got, g, 8, peer)
  for _, nbi in ipairs({ "putmem_nbi", "put_nbi" }) do k[nbi](k, out, g, 8, peer); k:quiet() end
  for _, nbi in ipairs({ "getmem_nbi", "get_nbi" }) do k[nbi](k, got, g, 8, peer); k:quiet() end
  k:mte_get_nbi(r, g, 8, peer)           -- the UB forms
  k:set_flag("MTE2_MTE3"); k:wait_flag("MTE2_MTE3")
  k:mte_put_nbi(out, r, 8, peer)
  k:quiet()
  k:ascendc_sync_all()
  k:shmem_sync_all()
  k:sdma_put_nbi(out, g, e, 8, peer, 0); k:sdma_get_nbi(got, g, e, 64, 8, peer, 0)
  k:sdma_quiet(e, 0)
  k:sdma_reduce_nbi(out, g, e, 8, peer, "add"); k:sdma_quiet(e, 0)
  k:mte_quiet()
  if round == 2 then k:set_mte_config(e) end     -- the staged calls below stage through e
  k:roce_put_nbi(out, g, e, 8, peer); k:roce_get_nbi(got, g, e, 8, peer)
  k:roce_quiet(peer, e, 0)
  k:roce_reduce_nbi(out, g, e, 8, peer, "max"); k:roce_quiet(peer, e, 0)
  for _, call in ipairs({ "udma_put_nbi", "udma_get_nbi" }) do   -- a 910B has no UDMA
    assert(not pcall(k[call], k, out, g, e, 8, peer))
  end
  assert(not pcall(k.udma_relay_put_nbi, k, out, g, e, 8, peer, peer))
  assert(not pcall(k.udma_relay_get_nbi, k, got, g, e, 8, peer, peer))
  assert(not pcall(k.udma_put_signal_nbi, k, out, g, 8, sig, 0, peer))
  assert(not pcall(k.udma_quiet, k, peer))
end

-- a round's signals and waits (q: a UB tensor for wait_signal_value)
local function waits(k, sig, x, round, peer, q)
  k:signal_op(sig, 1, lab.SIGNAL_ADD, peer)
  k:prof_start(0); k:prof_end(0)
  k:signal_wait_until(sig, lab.CMP_GE, 2 * round)
  k:wait_signal_value(k:ptr(sig, k:my_pe()), q, 8, lab.CMP_GE, 2 * round)
  -- the p2p_sync family (status left nil), p / g, the atomics (issue 13)
  k:wait_until(sig, lab.CMP_GE, 2 * round)
  k:wait(sig, -1)
  k:wait_until_all(sig, 1, nil, lab.CMP_GE, 2 * round)
  k:wait_until_any(sig, 1, nil, lab.CMP_GE, 2 * round)
  k:wait_until_some(sig, 1, x.idx, nil, lab.CMP_GE, 2 * round)
  k:wait_until_all_vector(sig, 1, nil, lab.CMP_GE, x.zero)
  k:wait_until_any_vector(sig, 1, nil, lab.CMP_GE, x.zero)
  k:wait_until_some_vector(sig, 1, x.idx, nil, lab.CMP_GE, x.zero)
  k:test(sig, lab.CMP_GE, 0); k:test_all(sig, 1, nil, lab.CMP_GE, 0)
  k:test_any(sig, 1, nil, lab.CMP_GE, 0); k:test_some(sig, 1, x.idx, nil, lab.CMP_GE, 0)
  k:test_all_vector(sig, 1, nil, lab.CMP_GE, x.zero)
  k:test_any_vector(sig, 1, nil, lab.CMP_GE, x.zero)
  k:test_some_vector(sig, 1, x.idx, nil, lab.CMP_GE, x.zero)
end

-- a round's p / g, atomics and team calls
local function atomics(k, x, round, peer)
  k:p(x.px, round, k:my_pe()); k:g(x.px, k:my_pe())
  k:atomic_add(x.ctr, 1, k:my_pe())                  -- the UB + MTE3 path
  k:set_flag("MTE3_S"); k:wait_flag("MTE3_S")      -- before the scratch UB is written again
  k:atomic_add(x.ctr64, 1, peer)                    -- int64: a read-modify-write
  k:atomic_fetch_add(x.ctr64, 1, peer); k:atomic_inc(x.ctr64, peer)
  k:atomic_fetch_inc(x.ctr64, peer); k:atomic_fetch(x.ctr64, peer)
  k:atomic_set(x.set, 1, peer); k:atomic_swap(x.set, 2, peer)
  k:atomic_compare_swap(x.set, 2, 3, peer)
  for _, call in ipairs({ "atomic_and", "atomic_or", "atomic_xor", "atomic_fetch_and",
                          "atomic_fetch_or", "atomic_fetch_xor" }) do
    assert(not pcall(k[call], k, x.bits, 0, peer))    -- RDMA and UDMA only: not over HCCS
    k["roce_" .. call](k, x.bits, -1, peer)            -- the RDMA engine's own call
  end
  k:team_my_pe(lab.TEAM_WORLD); k:team_n_pes(lab.TEAM_WORLD)
  k:team_translate_pe(lab.TEAM_WORLD, 0, lab.TEAM_WORLD); k:team_pe_mapping(lab.TEAM_WORLD, 0)
  k:barrier(lab.TEAM_WORLD); k:sync(lab.TEAM_WORLD)
  k:roce_barrier(lab.TEAM_WORLD); k:roce_team_sync(lab.TEAM_WORLD); k:roce_sync(lab.TEAM_WORLD)
  k:roce_barrier_all(); k:roce_sync_all()
end

-- every primitive, optional arguments left out (set_flag/wait_flag's id,
-- pipe_barrier's pipe, set_atomic's dtype, cast's round, the MTE sync_id)
local function kernel(k, g, acc, out, got, sig, x)
  local peer = (k:my_pe() + 1) % k.n_pes
  local f, w = k:ub("fp32", 8), k:ub("fp32", 8)
  local q, r = k:ub("int32", 8), k:ub("int32", 8)
  local e = k:ub("int32", 16)              -- an engine's workspace (SDMA: 64 bytes)
  for round = 1, 2 do
    local_ops(k, g, acc, round, f, w, q, r)
    transfers(k, g, out, got, sig, peer, round, r, e)
    waits(k, sig, x, round, peer, q)
    atomics(k, x, round, peer)
  end
end

-- p2p_sync, p / g and the atomics are also registered under the library's
-- type names (int32_test, half_p, ...): one closure of the same C function as
-- the untyped name, which the kernel calls
local P2P_TYPES = { float = true, int8 = true, int16 = true, int32 = true, int64 = true,
  uint8 = true, uint16 = true, uint32 = true, uint64 = true, char = true, half = true,
  bfloat16 = true, double = true }
-- and the engines' own atomics (mte_atomic_add, roce_atomic_fetch_xor, ...):
-- the untyped atomic's C function with the engine fixed
local ENGINES = { mte = true, roce = true, udma = true }
local function typed_alias(name, called)
  local t, base = name:match("^(%l+%d*)_(.+)$")
  if t ~= nil and ENGINES[t] and base:match("^atomic_") then return called[base] end
  return t ~= nil and P2P_TYPES[t] and called[base]
end

-- the primitives the kernel above calls: the spec below checks this is every
-- method of k, so a new primitive has to be added here
local CALLED = { "abs", "add", "barrier_all", "cast", "data_copy", "data_copy_pad",
  "scalar_histogram", "scalar_transpose", "scalar_row_sums", "scalar_topk_count",
  "scalar_pair_scan", "scalar_layout_count",
  "duplicate", "fence", "getmem", "get_value", "max", "min", "mte_get_nbi", "mte_put_nbi",
  "mte_get_pipelined", "mte_put_pipelined",
  "muls", "my_pe", "pipe_barrier", "prof_end", "prof_start", "ptr", "putmem", "put_signal",
  "put", "get", "putmem_nbi", "put_nbi", "getmem_nbi", "get_nbi", "put_signal_nbi",
  "ascendc_sync_all", "shmem_sync_all", "sdma_put_nbi", "sdma_get_nbi", "sdma_quiet", "mte_quiet",
  "set_mte_config",
  "roce_put_nbi", "roce_get_nbi", "roce_quiet", "udma_put_nbi", "udma_get_nbi",
  "sdma_reduce_nbi", "roce_reduce_nbi",
  "udma_relay_put_nbi", "udma_relay_get_nbi", "udma_put_signal_nbi", "udma_quiet",
  "quiet", "reduce_max", "set_atomic", "set_atomic_none", "set_flag", "set_value",
  "signal_op", "signal_wait_until", "sync_all", "sync_func", "system_cycle", "tque", "ub",
  "wait_flag",
  "wait_signal_value",
  "wait_until", "wait", "wait_until_all", "wait_until_any", "wait_until_some",
  "wait_until_all_vector", "wait_until_any_vector", "wait_until_some_vector", "test",
  "test_all", "test_any", "test_some", "test_all_vector", "test_any_vector", "test_some_vector",
  "p", "g", "atomic_add", "atomic_fetch_add", "atomic_inc", "atomic_fetch_inc", "atomic_fetch",
  "atomic_set", "atomic_swap", "atomic_compare_swap", "atomic_and", "atomic_or", "atomic_xor",
  "atomic_fetch_and", "atomic_fetch_or", "atomic_fetch_xor", "team_my_pe", "team_n_pes",
  "team_translate_pe", "team_pe_mapping", "barrier", "sync", "roce_barrier", "roce_team_sync",
  "roce_sync", "roce_barrier_all", "roce_sync_all" }

describe("every primitive with its optional arguments omitted", function()
  it("the kernel calls every method of k", function()
    local m, names = lab.machine{ pes = 1 }, {}
    local called = {}
    for _, name in ipairs(CALLED) do called[name] = true end
    m:launch(function(k)
      local mt = getmetatable(k)
      for name in pairs(type(mt.__index) == "table" and mt.__index or mt) do
        if not name:match("^__") and not typed_alias(name, called) then
          names[#names + 1] = name
        end
      end
    end, 1)
    table.sort(names)
    local want = { table.unpack(CALLED) }
    table.sort(want)
    assert.same(want, names)
  end)

  for _, mode in ipairs(MODES) do
    it("runs in check mode " .. mode, function()
      -- Ascend950's atomics on
      local m = lab.machine{ pes = 2, check = mode, scalar_amo = true }
      local g, acc = m:malloc("int32", 8), m:alloc("int32", 8):fill("const", 0)
      local out, got = m:malloc("int32", 8), m:alloc("int32", 8)
      local sig = m:malloc("int32", 8):fill("const", 0)
      local x = { idx = m:alloc("int64", 1), zero = m:alloc("int32", 1):fill("zero"),
                  px = m:malloc("int32", 1), ctr = m:malloc("int32", 1):fill("zero"),
                  ctr64 = m:malloc("int64", 1):fill("zero"), set = m:malloc("int32", 1):fill("zero"),
                  bits = m:malloc("int64", 1):fill("zero") }
      m:launch(kernel, 1, g, acc, out, got, sig, x)
      if mode ~= "none" then assert.same({}, m:check_reports()) end
      for pe = 0, 1 do
        -- round 1 adds {3, 4, 3...}, round 2 {3, 5, 3...}
        assert.same({ 6, 9, 6, 6, 6, 6, 6, 6 }, acc:on(pe):read(0, 8))
        assert.same({ 3, 3, 3, 3, 3, 3, 3, 3 }, got:on(pe):read(0, 8))
        assert.same({ 3, 3, 3, 3, 3, 3, 3, 3 }, out:on(pe):read(0, 8))
        assert.equal(4, sig:on(pe):read(0))
      end
    end)
  end
end)
