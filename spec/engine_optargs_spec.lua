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

-- every primitive, optional arguments left out (set_flag/wait_flag's id,
-- pipe_barrier's pipe, set_atomic's dtype, cast's round, the MTE sync_id)
local function kernel(k, g, acc, out, got, sig)
  local peer = (k:my_pe() + 1) % k.n_pes
  local f, w = k:ub("fp32", 8), k:ub("fp32", 8)
  local q, r = k:ub("int32", 8), k:ub("int32", 8)
  local e = k:ub("int32", 16)              -- an engine's workspace (SDMA: 64 bytes)
  for round = 1, 2 do
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
    k:sync_all()
    k:barrier_all()                        -- every g written before a peer reads it
    k:mte_put_nbi(out, g, r, 32, 8, peer)
    k:quiet()                              -- its last MTE3 still reads r
    k:mte_get_nbi(got, g, r, 32, 8, peer)
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
    k:roce_put_nbi(out, g, e, 8, peer); k:roce_get_nbi(got, g, e, 8, peer)
    k:roce_quiet(peer, e, 0)
    for _, call in ipairs({ "udma_put_nbi", "udma_get_nbi" }) do   -- a 910B has no UDMA
      assert(not pcall(k[call], k, out, g, e, 8, peer))
    end
    assert(not pcall(k.udma_relay_put_nbi, k, out, g, e, 8, peer, peer))
    assert(not pcall(k.udma_relay_get_nbi, k, got, g, e, 8, peer, peer))
    assert(not pcall(k.udma_put_signal_nbi, k, out, g, 8, sig, 0, peer))
    assert(not pcall(k.udma_quiet, k, peer))
    k:signal_op(sig, 1, lab.SIGNAL_ADD, peer)
    k:prof_start(0); k:prof_end(0)
    k:signal_wait_until(sig, lab.CMP_GE, 2 * round)
    k:wait_signal_value(k:ptr(sig, k:my_pe()), q, 8, lab.CMP_GE, 2 * round)
  end
end

-- the primitives the kernel above calls: the spec below checks this is every
-- method of k, so a new primitive has to be added here
local CALLED = { "abs", "add", "barrier_all", "cast", "data_copy", "data_copy_pad",
  "duplicate", "fence", "getmem", "get_value", "max", "min", "mte_get_nbi", "mte_put_nbi",
  "muls", "my_pe", "pipe_barrier", "prof_end", "prof_start", "ptr", "putmem", "put_signal",
  "put", "get", "putmem_nbi", "put_nbi", "getmem_nbi", "get_nbi", "put_signal_nbi",
  "ascendc_sync_all", "shmem_sync_all", "sdma_put_nbi", "sdma_get_nbi", "sdma_quiet",
  "roce_put_nbi", "roce_get_nbi", "roce_quiet", "udma_put_nbi", "udma_get_nbi",
  "udma_relay_put_nbi", "udma_relay_get_nbi", "udma_put_signal_nbi", "udma_quiet",
  "quiet", "reduce_max", "set_atomic", "set_atomic_none", "set_flag", "set_value",
  "signal_op", "signal_wait_until", "sync_all", "system_cycle", "ub", "wait_flag",
  "wait_signal_value" }

describe("every primitive with its optional arguments omitted", function()
  it("the kernel calls every method of k", function()
    local m, names = lab.machine{ pes = 1 }, {}
    m:launch(function(k)
      local mt = getmetatable(k)
      for name in pairs(type(mt.__index) == "table" and mt.__index or mt) do
        if not name:match("^__") then names[#names + 1] = name end
      end
    end, 1)
    table.sort(names)
    local want = { table.unpack(CALLED) }
    table.sort(want)
    assert.same(want, names)
  end)

  for _, mode in ipairs(MODES) do
    it("runs in check mode " .. mode, function()
      local m = lab.machine{ pes = 2, check = mode }
      local g, acc = m:malloc("int32", 8), m:alloc("int32", 8):fill("const", 0)
      local out, got = m:malloc("int32", 8), m:alloc("int32", 8)
      local sig = m:malloc("int32", 8):fill("const", 0)
      m:launch(kernel, 1, g, acc, out, got, sig)
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
