-- One element at a time: p / g (shmem_device_rma.h) and the atomics of
-- shmem_device_amo.h, remote and local, on the path each takes: atomic_add
-- of the MTE types through the scratch UB and MTE3, every other atomic a
-- read-modify-write at the target (Ascend950's scalar atomics over MTE, its
-- RDMA engine between servers); the fetching ones return the old value.

local H = require("spec.helpers.engine")
local lab = H.lab

describe("p / g", function()
  for _, pes in ipairs({ 2, 8 }) do
    it("p puts one element on the next PE, g reads it back, every dtype (" .. pes .. " PEs)",
       function()
      local m = lab.machine{ pes = pes }
      local bufs = {}
      for _, dt in ipairs(H.DTYPES) do bufs[dt] = m:malloc(dt, 2, dt):fill("zero") end
      local got = {}
      m:launch(function(k, b)
        local next = (k.pe + 1) % k.n_pes
        for _, dt in ipairs(H.DTYPES) do
          local v = H.FLOAT[dt] and k.pe + 0.5 or k.pe + 3
          k:p(b[dt], v, next)
          k[lab.core.dtype_cann(dt) .. "_p"](k, b[dt]:sub(1, 1), v, k.pe)
        end
        k:barrier_all()
        got[k.pe] = {}
        for _, dt in ipairs(H.DTYPES) do
          got[k.pe][dt] = { k:g(b[dt], next), k[lab.core.dtype_cann(dt) .. "_g"](k, b[dt]:sub(1, 1), k.pe) }
        end
      end, 1, bufs)
      for pe = 0, pes - 1 do
        local next = (pe + 1) % pes
        for _, dt in ipairs(H.DTYPES) do
          local own = H.FLOAT[dt] and pe + 0.5 or pe + 3
          local mine = H.FLOAT[dt] and pe + 0.5 or pe + 3   -- next holds what pe wrote
          assert.same({ mine, own }, got[pe][dt], dt)
          assert.same({ H.FLOAT[dt] and pe + 0.5 or pe + 3 }, bufs[dt]:on(next):read(0, 1))
        end
      end
    end)
  end

  it("p returns once its store landed (signal_ns + alpha): a g after it sees it; g costs "
     .. "scalar_ns + 2 alpha", function()
    local m = lab.machine{ pes = 2 }
    local x = m:malloc("int32", 1, "x"):fill("zero")
    local t = {}
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local c0 = k:system_cycle()
      k:g(x, 1)
      t.g = k:system_cycle() - c0
      c0 = k:system_cycle()
      k:p(x, 7, 1)
      t.p = k:system_cycle() - c0
      t.seen = k:g(x, 1)
    end, 1)
    local p = m:params()
    assert.equals(7, t.seen)
    assert.near((p.signal_ns + p.hccs_alpha_ns + p.scalar_ns) / 1000 * p.cycle2us, t.p, 1)
    -- system_cycle costs scalar_ns itself (it reads the counter after it); the
    -- counter ticks cycle2us per us
    assert.near((2 * p.scalar_ns + 2 * p.hccs_alpha_ns) / 1000 * p.cycle2us, t.g, 1)
    assert.same({ 7 }, x:on(1):read(0, 1))
  end)

  it("refuses a remote element that is not symmetric, and a wrong typed view", function()
    local m = lab.machine{ pes = 2 }
    local gm = m:alloc("int32", 1, "gm")
    local f = m:malloc("fp32", 1, "f")
    local e = H.err(m.launch, m, function(k) if k.pe == 0 then k:p(gm, 1, 1) end end, 1)
    H.contains(e, "bad argument #1 to 'p' (another PE's element must be a symmetric address)")
    e = H.err(m.launch, m, function(k) k:int32_g(f, 0) end, 1)
    H.contains(e, "bad argument #1 to 'int32_g' (int32 view expected, got fp32)")
  end)
end)

describe("atomic_add on the MTE path (every SoC)", function()
  for _, pes in ipairs({ 2, 8 }) do
    it("every block of every PE adds into PE 0, every MTE type (" .. pes .. " PEs)", function()
      local m = lab.machine{ pes = pes }
      local types = { "int8", "int16", "int32", "fp16", "bf16", "fp32" }
      local acc = {}
      for _, dt in ipairs(types) do acc[dt] = m:malloc(dt, 1, dt):fill("zero") end
      m:launch(function(k)
        for _, dt in ipairs(types) do
          k:atomic_add(acc[dt], 1, 0)
          -- the scratch UB is written again by the next add: MTE3 must have read it
          k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
        end
      end, 3)
      for _, dt in ipairs(types) do
        assert.same({ 3 * pes }, acc[dt]:on(0):read(0, 1), dt)
      end
    end)
  end

  it("is asynchronous: MTE3_MTE2 orders a read after it; typed names check the view",
     function()
    local m = lab.machine{ pes = 2 }
    local acc = m:malloc("fp32", 8, "acc"):fill("const", 1.5)
    local seen
    m:launch(function(k)
      if k.pe ~= 1 then return end
      k:float_atomic_add(acc, 2.25, 0)
      k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
      local ub = k:ub("fp32", 8)
      k:data_copy(ub, k:ptr(acc, 0), 8)
      k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
      seen = k:get_value(ub, 0)
    end, 1)
    assert.equals(3.75, seen)
    local e = H.err(m.launch, m, function(k) k:int32_atomic_add(acc, 1, 0) end, 1)
    H.contains(e, "bad argument #1 to 'int32_atomic_add' (int32 view expected, got fp32)")
  end)

  it("two adds through the scratch UB without MTE3_S race (racecheck), as the library warns",
     function()
    local m = lab.machine{ pes = 2, check = "racecheck" }
    local acc = m:malloc("int32", 1, "acc"):fill("zero")
    m:launch(function(k)
      k:atomic_add(acc, 1, 0)
      k:atomic_add(acc, 1, 0)
    end, 1)
    local reps = m:check_reports()
    assert.is_true(#reps > 0)
    assert.equals("race", reps[1].kind)
  end)

  it("the fetching and Ascend950 atomics need scalar_amo (off on Ascend910B)", function()
    local m = lab.machine{ pes = 2 }
    local x = m:malloc("int32", 1, "x"):fill("zero")
    local e = H.err(m.launch, m, function(k) k:atomic_fetch_add(x, 1, 1) end, 1)
    H.contains(e, "bad argument #1 to 'atomic_fetch_add' (atomic_fetch_add of int32 needs "
               .. "Ascend950's scalar atomics (the profile's scalar_amo is off))")
    assert.is_false(lab.soc("Ascend910B").scalar_amo)
    assert.is_true(lab.soc("Ascend950").scalar_amo)
  end)
end)

describe("Ascend950 atomics", function()
  for _, pes in ipairs({ 2, 8 }) do
    it("fetch_add from every PE hands out distinct old values (" .. pes .. " PEs)", function()
      local m = lab.machine{ soc = "Ascend950", pes = pes }
      local ctr = m:malloc("int64", 1, "ctr"):fill("const", 100)
      local got = {}
      m:launch(function(k) got[k.pe * 2 + k.block + 1] = k:atomic_fetch_add(ctr, 10, 0) end, 2)
      table.sort(got)
      for i = 1, 2 * pes do assert.equals(100 + 10 * (i - 1), got[i]) end
      assert.same({ 100 + 20 * pes }, ctr:on(0):read(0, 1))
    end)
  end

  it("inc, fetch_inc, set, swap, compare_swap, fetch on one PE and across servers",
     function()
    local m = lab.machine{ soc = "Ascend950", pes = 8 }   -- 4 per server: PE 4 is over RDMA
    local x = m:malloc("int32", 8, "x"):fill("const", 5)
    local f = m:malloc("fp32", 1, "f"):fill("const", 0.5)
    local r = {}
    m:launch(function(k)
      if k.pe ~= 0 then return end
      for _, pe in ipairs({ 1, 4 }) do
        local t = {}
        k:atomic_inc(x, pe)
        t.fetch_inc = k:int32_atomic_fetch_inc(x, pe)       -- 6, then 7
        t.swap = k:atomic_swap(x, 20, pe)                   -- 7, then 20
        t.cas_no = k:atomic_compare_swap(x, 19, 30, pe)     -- 20 stays
        t.cas_yes = k:atomic_compare_swap(x, 20, 30, pe)    -- 20, then 30
        k:atomic_set(x:sub(1, 1), -4, pe)
        k:quiet()
        t.fetch = k:atomic_fetch(x, pe)
        t.fswap = k:float_atomic_swap(f, 2.5, pe)
        r[pe] = t
      end
    end, 1)
    for _, pe in ipairs({ 1, 4 }) do
      assert.same({ fetch_inc = 6, swap = 7, cas_no = 20, cas_yes = 20, fetch = 30, fswap = 0.5 },
                  r[pe], "PE " .. pe)
      assert.same({ 30, -4 }, x:on(pe):read(0, 2))
      assert.same({ 2.5 }, f:on(pe):read(0, 1))
    end
  end)

  it("bitwise atomics take RoCE (every PE once the init names ROCE), never MTE", function()
    local m = lab.machine{ soc = "Ascend950", pes = 8 }       -- two servers: MTE|ROCE
    local x = m:malloc("int64", 1, "x"):fill("const", 12)     -- 0b1100
    local r = {}
    m:launch(function(k)
      if k.pe ~= 0 then return end
      k:atomic_and(x, 10, 4)                                  -- 8
      r.o = k:atomic_fetch_or(x, 3, 4)                        -- 8, then 11
      r.x = k:int64_atomic_fetch_xor(x, 1, 4)                 -- 11, then 10
      k:atomic_or(x, 16, 4)
      k:atomic_xor(x, 2, 4)
      r.a = k:atomic_fetch_and(x, -1, 4)                      -- 24
    end, 1)
    assert.same({ o = 8, x = 11, a = 24 }, r)
    -- one server, the library's default init (MTE only): nothing carries them to PE 1
    local one = lab.machine{ soc = "Ascend950", pes = 4 }
    local y = one:malloc("int64", 1, "y")
    local e = H.err(one.launch, one, function(k) if k.pe == 0 then k:atomic_and(y, 1, 1) end end, 1)
    H.contains(e, "atomic_and to PE 1: only the RoCE and UDMA transports carry it and "
               .. "data_op_engine_type gives neither to PE 1 (init with ROCE)")
  end)

  it("a fetch waits for the round trip: signal_ns + 2 alpha of its path", function()
    local m = lab.machine{ soc = "Ascend950", pes = 8 }
    local x = m:malloc("int32", 1, "x"):fill("zero")
    local t = {}
    m:launch(function(k)
      if k.pe ~= 0 then return end
      for _, pe in ipairs({ 0, 1, 4 }) do
        local c0 = k:system_cycle()
        k:atomic_fetch(x, pe)
        t[pe] = k:system_cycle() - c0
      end
    end, 1)
    local p = m:params()
    local function want(alpha) return (p.signal_ns + 2 * alpha + p.scalar_ns) / 1000 * p.cycle2us end
    assert.near(want(p.local_alpha_ns), t[0], 1)
    assert.near(want(p.hccs_alpha_ns), t[1], 1)
    assert.near(want(p.rdma_alpha_ns), t[4], 1)
  end)

  it("a fetch that observes an add acquires its writer's release (racecheck)", function()
    local m = lab.machine{ soc = "Ascend950", pes = 2, check = "all" }
    local data = m:malloc("int32", 8, "data"):fill("zero")
    local ctr = m:malloc("int32", 1, "ctr"):fill("zero")
    m:launch(function(k)
      if k.pe == 1 then
        local ub = k:ub("int32", 8)
        k:duplicate(ub, 7, 8)
        k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
        k:mte_put_nbi(data, ub, 8, 0)
        k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
        k:atomic_add(ctr, 1, 0)                             -- int32: the UB + MTE3 path
      else
        while k:atomic_fetch(ctr, 0) == 0 do end
        local ub = k:ub("int32", 8)
        k:data_copy(ub, data, 8)
        k:pipe_barrier()
      end
    end, 1)
    -- the MTE3 atomic copy is a plain write for the poller: its writer's thread is joined
    assert.same({}, m:check_reports())
  end)

  it("the engines' own atomics: roce through the NICs whatever the PEs, mte inside a server",
     function()
    local m = lab.machine{ soc = "Ascend950", pes = 8 }
    local x = m:malloc("int64", 1, "x"):fill("const", 6)
    local t, r = {}, {}
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local c0 = k:system_cycle()
      r.roce = k:roce_atomic_fetch_add(x, 1, 1)          -- PE 1 is in this server
      t.roce = k:system_cycle() - c0
      c0 = k:system_cycle()
      r.mte = k:mte_atomic_fetch_add(x, 1, 1)
      t.mte = k:system_cycle() - c0
      r.udma = k:udma_atomic_fetch_and(x, 12, 1)         -- 8 & 12
      k:udma_atomic_xor(x, 1, 1)
      k:quiet()
      r.after = k:atomic_fetch(x, 1)
    end, 1)
    local p = m:params()
    local function want(alpha) return (p.signal_ns + 2 * alpha + p.scalar_ns) / 1000 * p.cycle2us end
    assert.same({ roce = 6, mte = 7, udma = 8, after = 9 }, r)
    assert.near(want(p.rdma_alpha_ns), t.roce, 1)
    assert.near(want(p.hccs_alpha_ns), t.mte, 1)
    local e = H.err(m.launch, m, function(k) if k.pe == 0 then k:mte_atomic_inc(x, 4) end end, 1)
    H.contains(e, "bad argument #2 to 'mte_atomic_inc' (mte_atomic_inc: the MTE transport does "
               .. "not reach another server (roce_atomic_inc does))")
    assert.is_nil(lab.core.block_methods.mte_atomic_and)
    assert.is_function(lab.core.block_methods.roce_atomic_and)
  end)

  it("an asynchronous RDMA atomic is complete at roce_quiet (and quiet), as the library says",
     function()
    local m = lab.machine{ soc = "Ascend950", pes = 8 }
    local x = m:malloc("int32", 1, "x"):fill("zero")
    local t = {}
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local c0 = k:system_cycle()
      k:atomic_add(x, 5, 4)                                -- another server: the RDMA engine
      k:roce_quiet(4, k:ub("int32", 8), 0)
      t.q = k:system_cycle() - c0
      k:roce_atomic_inc(x, 1)
      k:quiet()
    end, 1)
    local p = m:params()
    assert.same({ 5 }, x:on(4):read(0, 1))
    assert.same({ 1 }, x:on(1):read(0, 1))
    -- roce_quiet waited for the landing: signal_ns + RDMA's alpha after the issue
    assert.is_true(t.q >= (p.signal_ns + p.rdma_alpha_ns) / 1000 * p.cycle2us)
  end)

  it("refuses what the library does not declare", function()
    local m = lab.machine{ soc = "Ascend950", pes = 2 }
    local h = m:malloc("fp16", 1, "h")
    local f = m:malloc("fp32", 1, "f")
    local e = H.err(m.launch, m, function(k) k:atomic_fetch_add(h, 1, 0) end, 1)
    H.contains(e, "atomic_fetch_add does not take fp16")
    e = H.err(m.launch, m, function(k) k:atomic_compare_swap(f, 1, 2, 0) end, 1)
    H.contains(e, "atomic_compare_swap does not take fp32")
    assert.is_nil(lab.core.block_methods.half_atomic_fetch_add)
    assert.is_function(lab.core.block_methods.half_atomic_add)
    assert.is_function(lab.core.block_methods.bfloat16_atomic_add)
    assert.is_function(lab.core.block_methods.char_p)
  end)
end)
