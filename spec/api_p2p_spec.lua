-- CANN SHMEM's point-to-point synchronisation family
-- (include/device/gm2gm/shmem_device_p2p_sync.h): wait_until, wait,
-- wait_until_all / _any / _some and their _vector forms, test, test_all,
-- test_any, test_some and theirs, untyped and under every type name.

local H = require("spec.helpers.engine")
local lab = H.lab

-- PE q writes 1 into flags[q] on every PE after `delay` issues of its own
local function raise_flags(k, flags, delay)
  for _ = 1, delay or 0 do k:system_cycle() end
  for p = 0, k.n_pes - 1 do k:signal_op(flags:sub(k.pe, 1), 1, lab.SIGNAL_SET, p) end
end

describe("p2p_sync", function()
  for _, pes in ipairs({ 2, 8 }) do
    it("wait_until_all returns once every element holds, on " .. pes .. " PEs", function()
      local m = lab.machine{ pes = pes }
      local flags = m:malloc("int32", pes, "flags"):fill("zero")
      local after = m:malloc("int32", 1, "after")
      m:launch(function(k)
        raise_flags(k, flags, k.pe * 10)
        assert.is_nil(k:wait_until_all(flags, pes, nil, lab.CMP_EQ, 1))
        local ok = k:test_all(flags, pes, nil, lab.CMP_EQ, 1)
        local ub = k:ub("int32", 8)
        k:set_value(ub, 0, ok)
        k:mte_put_nbi(after, ub, 1, k.pe)
      end, 1)
      for p = 0, pes - 1 do assert.same({ 1 }, after:on(p):read(0, 1)) end
    end)

    it("wait_until_any gives the lowest index that holds, on " .. pes .. " PEs", function()
      local m = lab.machine{ pes = pes }
      local flags = m:malloc("int32", pes, "flags"):fill("zero")
      local got = {}
      m:launch(function(k)
        if k.pe == pes - 1 then raise_flags(k, flags) end
        got[k.pe] = k:wait_until_any(flags, pes, nil, lab.CMP_NE, 0)
      end, 1)
      for p = 0, pes - 1 do assert.equals(pes - 1, got[p]) end
    end)
  end

  it("status excludes elements (nonzero), and an empty set returns at once", function()
    local m = lab.machine{ pes = 2 }
    local flags = m:malloc("int32", 4, "flags"):fill({ 1, 0, 1, 0 })
    local status = m:alloc("int32", 4, "status"):fill({ 0, 1, 0, 1 })
    local none = m:alloc("int32", 4, "none"):fill("const", 7)
    local r = {}
    m:launch(function(k)
      if k.pe ~= 0 then return end
      k:wait_until_all(flags, 4, status, lab.CMP_EQ, 1)       -- 1 and 3 excluded
      r.any = k:wait_until_any(flags, 4, none, lab.CMP_EQ, 1)  -- all excluded
      r.empty = k:wait_until_any(flags, 0, nil, lab.CMP_EQ, 1)
      r.some0 = k:wait_until_some(flags, 0, status, nil, lab.CMP_EQ, 1)
      r.test_any = k:test_any(flags, 4, status, lab.CMP_EQ, 0)
      r.test_all = k:test_all(flags, 4, nil, lab.CMP_EQ, 1)
    end, 1)
    assert.same({ any = lab.SIZE_MAX, empty = lab.SIZE_MAX, some0 = 0, test_any = lab.SIZE_MAX,
                  test_all = 0 }, r)
    assert.equals(-1, lab.SIZE_MAX)             -- C's SIZE_MAX: all 64 bits set
  end)

  it("wait_until_some returns at the first write that satisfies one element", function()
    local m = lab.machine{ pes = 2 }
    local flags = m:malloc("int64", 6, "flags"):fill("zero")
    local idx = m:alloc("int64", 6, "idx"):fill("const", -5)
    local count
    m:launch(function(k)
      if k.pe == 1 then
        k:signal_op(flags:sub(4, 1), 9, lab.SIGNAL_SET, 0)
        k:signal_op(flags:sub(1, 1), 9, lab.SIGNAL_SET, 0)
      else
        count = k:wait_until_some(flags, 6, idx, nil, lab.CMP_EQ, 9)
      end
    end, 1)
    assert.equals(1, count)
    assert.same({ 4, -5 }, idx:on(0):read(0, 2))
  end)

  it("wait_until_some writes every index that holds, ascending, and counts them", function()
    local m = lab.machine{ pes = 1 }
    local flags = m:alloc("int32", 6, "flags"):fill({ 9, 0, 9, 0, 0, 9 })
    local idx = m:alloc("int32", 6, "idx"):fill("const", -5)
    local count
    m:launch(function(k) count = k:int32_wait_until_some(flags, 6, idx, nil, lab.CMP_EQ, 9) end, 1)
    assert.equals(3, count)
    assert.same({ 0, 2, 5, -5 }, idx:on(0):read(0, 4))
  end)

  it("the _vector forms compare element i with cmp_values[i]", function()
    local m = lab.machine{ pes = 2 }
    local ivars = m:malloc("int32", 4, "iv"):fill({ 5, 6, 7, 8 })
    local vals = m:alloc("int32", 4, "vals"):fill({ 5, 0, 7, 0 })
    local idx = m:alloc("int32", 4, "idx"):fill("zero")
    local r = {}
    m:launch(function(k)
      if k.pe ~= 0 then return end
      r.all = k:test_all_vector(ivars, 4, nil, lab.CMP_EQ, vals)
      r.any = k:test_any_vector(ivars, 4, nil, lab.CMP_NE, vals)
      r.some = k:test_some_vector(ivars, 4, idx, nil, lab.CMP_EQ, vals)
      r.wany = k:wait_until_any_vector(ivars, 4, nil, lab.CMP_EQ, vals)
      r.wsome = k:wait_until_some_vector(ivars, 4, idx, nil, lab.CMP_GE, vals)
      k:wait_until_all_vector(ivars, 4, nil, lab.CMP_GE, vals)
    end, 1)
    assert.same({ all = 0, any = 1, some = 2, wany = 0, wsome = 4 }, r)
    assert.same({ 0, 1, 2, 3 }, idx:on(0):read(0, 4))
  end)

  it("test is 1 or 0 (an integer: 0 is true in Lua) for every comparison", function()
    local m = lab.machine{ pes = 1 }
    local x = m:alloc("int16", 1, "x"):fill("const", 10)
    local want = { CMP_EQ = { 10, 1 }, CMP_NE = { 10, 0 }, CMP_GT = { 9, 1 },
                   CMP_GE = { 11, 0 }, CMP_LT = { 11, 1 }, CMP_LE = { 9, 0 } }
    local got = {}
    m:launch(function(k)
      for name, w in pairs(want) do got[name] = { w[1], k:test(x, lab[name], w[1]) } end
    end, 1)
    assert.same(want, got)
  end)

  it("float_wait_until waits on a float element written by a remote put", function()
    local m = lab.machine{ pes = 2 }
    local x = m:malloc("fp32", 1, "x"):fill("zero")
    local seen = {}
    m:launch(function(k)
      if k.pe == 1 then
        local ub = k:ub("fp32", 8)
        k:set_value(ub, 0, 2.5)
        k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
        k:mte_put_nbi(x, ub, 1, 0)
      else
        k:float_wait_until(x, lab.CMP_GT, 2.25)
        seen.test = k:float_test(x, lab.CMP_EQ, 2.5)
        seen.idx = k:float_wait_until_any(x, 1, nil, lab.CMP_GE, 2.5)
      end
    end, 1)
    assert.same({ test = 1, idx = 0 }, seen)
  end)

  it("wait(ivar, value) waits until the element differs from value", function()
    local m = lab.machine{ pes = 2 }
    local x = m:malloc("int32", 1, "x"):fill("const", 3)
    local done = false
    m:launch(function(k)
      if k.pe == 1 then k:signal_op(x, 4, lab.SIGNAL_SET, 0)
      else k:int32_wait(x, 3); done = k:int32_test(x, lab.CMP_EQ, 4) == 1 end
    end, 1)
    assert.is_true(done)
  end)

  it("names every type the library declares, and checks the view's dtype", function()
    local B = lab.core.block_methods
    for _, t in ipairs({ "float", "int8", "int16", "int32", "int64", "uint8", "char" }) do
      for _, f in ipairs({ "wait_until", "wait", "wait_until_all", "wait_until_any",
                           "wait_until_some", "wait_until_all_vector", "wait_until_any_vector",
                           "wait_until_some_vector", "test", "test_all", "test_any", "test_some",
                           "test_all_vector", "test_any_vector", "test_some_vector" }) do
        assert.is_function(B[t .. "_" .. f], t .. "_" .. f)
      end
    end
    local m = lab.machine{ pes = 1 }
    local f = m:alloc("fp32", 1, "f"):fill("zero")
    local h = m:alloc("fp16", 1, "h"):fill("zero")
    local e1 = H.err(m.launch, m, function(k) k:int32_test(f, lab.CMP_EQ, 0) end, 1)
    H.contains(e1, "bad argument #1 to 'int32_test' (int32 view expected, got fp32)")
    local e2 = H.err(m.launch, m, function(k) k:test(h, lab.CMP_EQ, 0) end, 1)
    H.contains(e2, "bad argument #1 to 'test' (fp16 is not a type the p2p_sync calls take")
    local e3 = H.err(m.launch, m, function(k) k:test_all(f, 2, nil, lab.CMP_EQ, 0) end, 1)
    H.contains(e3, "out of bounds: read test_all of 8 bytes at byte offset 0 of GM buffer 'f'")
    local e4 = H.err(m.launch, m, function(k) k:test_any(f, 1, nil, 9, 0) end, 1)
    H.contains(e4, "bad argument #4 to 'test_any' (comparison must be one of")
    local e5 = H.err(m.launch, m, function(k) k:test_some(f, 1, f, nil, lab.CMP_EQ, 0) end, 1)
    H.contains(e5, "bad argument #3 to 'test_some' (must be an integer array, got fp32)")
  end)

  it("a set that never holds is a deadlock naming the set and its element", function()
    local m = lab.machine{ pes = 2 }
    local flags = m:malloc("int32", 3, "flags"):fill({ 1, 0, 1 })
    local e = H.err(m.launch, m, function(k)
      if k.pe == 0 then k:wait_until_all(flags, 3, nil, lab.CMP_EQ, 1) end
    end, 1)
    H.contains(e, "deadlock", "wait_until_all(flags[0..3) on PE 0, CMP_EQ, 1): flags[1] holds 0")
  end)

  it("a test costs one poll, and scalar_ns per further element", function()
    local function run(n)
      local m = lab.machine{ pes = 1 }
      local x = m:alloc("int32", 8, "x"):fill("zero")
      return m:launch(function(k) k:test_all(x, n, nil, lab.CMP_EQ, 0) end, 1).kernel_us[1],
             m:params()
    end
    local t1, p = run(1)
    local t8 = run(8)
    assert.near(7 * p.scalar_ns / 1000, t8 - t1, 1e-9)
  end)

  describe("racecheck", function()
    -- each PE puts its block of data into every PE, then raises its flag
    -- there; a PE reading every block after the wait has no race
    local function kernel(k, a)
      local ub = k:ub("int32", 8)
      k:duplicate(ub, k.pe, 8)
      k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
      for p = 0, k.n_pes - 1 do k:mte_put_nbi(a.data:sub(k.pe * 8, 8), ub, 8, p) end
      k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
      for p = 0, k.n_pes - 1 do k:signal_op(a.flags:sub(k.pe, 1), 1, lab.SIGNAL_SET, p) end
      if a.any then k:wait_until_any(a.flags, k.n_pes, nil, lab.CMP_EQ, 1)
      else k:wait_until_all(a.flags, k.n_pes, nil, lab.CMP_EQ, 1) end
      local dst = k:ub("int32", 8 * k.n_pes)
      k:data_copy(dst, a.data, 8 * k.n_pes)
      k:pipe_barrier()
    end

    for _, pes in ipairs({ 2, 8 }) do
      it("wait_until_all orders every writer before the reads (" .. pes .. " PEs, all checks)",
         function()
        local m = lab.machine{ pes = pes, check = "all" }
        local a = { data = m:malloc("int32", 8 * pes, "data"):fill("zero"),
                    flags = m:malloc("int32", pes, "flags"):fill("zero") }
        m:launch(kernel, 1, a)
        assert.same({}, m:check_reports())
        a.any = true                              -- one flag is not all of them
        a.flags:fill("zero")
        m:launch(kernel, 1, a)
        local reps = m:check_reports()
        assert.is_true(#reps > 0)
        assert.equals("race", reps[1].kind)
      end)
    end
  end)
end)
