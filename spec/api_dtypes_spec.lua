-- The types of issue 13 part 9: uint16, uint32, uint64 and fp64 (double) in
-- buffers, copies, the MTE atomic accumulate and vector ops where the
-- hardware has them (fp64 has neither), signals and waits, p / g and the
-- atomics, under the library's type names.

local H = require("spec.helpers.engine")
local lab = H.lab

local NEW = { uint16 = 2, uint32 = 4, uint64 = 8, fp64 = 8 }

describe("dtypes uint16 uint32 uint64 fp64", function()
  it("are in the table with their sizes; an unknown dtype names them", function()
    for dt, size in pairs(NEW) do assert.equals(size, lab.core.dtype_size(dt)) end
    assert.equals(8, lab.core.dtype_size("double"))
    local e = H.err(lab.core.dtype_size, "uint128")
    H.contains(e, "uint8 fp16 bf16 fp32 uint16 uint32 uint64 fp64)")
  end)

  it("hold their whole range: fill, read, compare, checksum", function()
    local m = lab.machine{ pes = 1 }
    local u16 = m:alloc("uint16", 3):fill({ 0, 65535, 40000 })
    local u32 = m:alloc("uint32", 2):fill({ 4294967295, 3000000000 })
    local u64 = m:alloc("uint64", 2):fill("const", math.huge)   -- saturates to 2^64 - 1
    local d = m:alloc("fp64", 3):fill({ 0.1, -1e300, 2 ^ 60 + 1 })
    assert.same({ 0, 65535, 40000 }, u16:read(0, 3))
    assert.same({ 4294967295, 3000000000 }, u32:read(0, 2))
    assert.same({ -1, -1 }, u64:read(0, 2))                      -- all 64 bits set
    assert.same({ 0.1, -1e300, 2 ^ 60 }, d:read(0, 3))           -- doubles, exactly
    local d2 = m:alloc("fp64", 3):fill({ 0.1, -1e300, 2 ^ 60 })
    assert.equals(0, d:compare(d2))
    assert.equals(d:checksum(), d2:checksum())
    assert.same({ 0 }, m:alloc("uint16", 1):fill("const", -5):read(0, 1))   -- saturates
  end)

  for _, pes in ipairs({ 2, 8 }) do
    it("move through UB and between PEs (" .. pes .. " PEs)", function()
      local m = lab.machine{ pes = pes }
      local src, dst = {}, {}
      for dt in pairs(NEW) do
        src[dt] = m:malloc(dt, 64, dt):fill("iota_pe", 1, 3)
        dst[dt] = m:malloc(dt, 64, dt .. "_out"):fill("zero")
      end
      m:launch(function(k)
        for dt in pairs(NEW) do
          local ub = k:ub(dt, 64)
          k:mte_get_nbi(dst[dt], src[dt], ub, 64 * NEW[dt], 64, (k.pe + 1) % k.n_pes, 0)
          k:quiet()
        end
      end, 1)
      for dt in pairs(NEW) do
        for pe = 0, pes - 1 do
          local from = (pe + 1) % pes
          assert.same(src[dt]:on(from):read(0, 64), dst[dt]:on(pe):read(0, 64), dt)
        end
      end
    end)
  end

  it("accumulate atomically as unsigned integers; fp64 has no atomic accumulate", function()
    local m = lab.machine{ pes = 1 }
    local g = m:alloc("uint32", 8):fill({ 4000000000, 5, 0, 0, 0, 0, 0, 0 })
    local s = m:alloc("uint32", 8):fill({ 4000000000, 3000000000, 0, 0, 0, 0, 0, 0 })
    local gd = m:alloc("fp64", 4):fill("zero")
    m:launch(function(k)
      local u = k:ub("uint32", 8)
      k:data_copy(u, s, 8)
      k:set_flag("MTE2_MTE3", 0); k:wait_flag("MTE2_MTE3", 0)
      k:set_atomic("max")
      k:data_copy(g, u, 8)                        -- unsigned order: 3e9 > 5
      k:set_atomic_none()
    end, 1)
    assert.same({ 4000000000, 3000000000 }, g:read(0, 2))
    local e = H.err(m.launch, m, function(k)
      local u = k:ub("fp64", 4)
      k:data_copy(u, gd, 4)
      k:set_flag("MTE2_MTE3", 0); k:wait_flag("MTE2_MTE3", 0)
      k:set_atomic("add")
      k:data_copy(gd, u, 4)
    end, 1)
    H.contains(e, "fp64: the MTE atomic unit has no double accumulate")
  end)

  it("take vector ops as unsigned integers; fp64 only moves (no vector unit)", function()
    local m = lab.machine{ pes = 1 }
    local out = m:alloc("uint16", 16)
    m:launch(function(k)
      local a, b = k:ub("uint16", 16), k:ub("uint16", 16)
      k:duplicate(a, 65000, 16)
      k:duplicate(b, 1000, 16)
      k:add(b, a, b, 16)                          -- wraps: 66000 - 65536
      k:max(a, a, b, 16)
      k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
      k:data_copy(out, a, 16)
    end, 1)
    assert.same({ 65000 }, out:read(0, 1))
    local e = H.err(m.launch, m, function(k)
      local d = k:ub("fp64", 4)
      k:duplicate(d, 1, 4)
    end, 1)
    H.contains(e, "fp64: the AIV vector unit has no double arithmetic")
  end)

  it("cast to and from them on the V pipe", function()
    local m = lab.machine{ pes = 1 }
    local f = m:alloc("fp32", 8):fill({ 1.5, 3e9, 1e20, -2, 0, 0, 0, 0 })
    local u = m:alloc("uint32", 8)
    local big = m:alloc("uint64", 8):fill("const", 2 ^ 63)
    local fb = m:alloc("fp32", 8)
    m:launch(function(k)
      local fu, uu = k:ub("fp32", 8), k:ub("uint32", 8)
      local bu, bf = k:ub("uint64", 8), k:ub("fp32", 8)
      k:data_copy(fu, f, 8)
      k:data_copy(bu, big, 8)
      k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
      k:cast(uu, fu, 8, "rint")                   -- nearest even, saturated to [0, 2^32 - 1]
      k:cast(bf, bu, 8)                           -- 2^63, not a negative int64
      k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
      k:data_copy(u, uu, 8)
      k:data_copy(fb, bf, 8)
    end, 1)
    assert.same({ 2, 3000000000, 4294967295, 0 }, u:read(0, 4))
    assert.same({ 2 ^ 63 }, fb:read(0, 1))
  end)

  it("signals, waits, p / g and the atomics under the library's names", function()
    local B = lab.core.block_methods
    for _, n in ipairs({ "uint16_wait_until", "uint32_test_any", "uint64_wait_until_some_vector",
                         "uint16_p", "uint64_g", "double_p", "double_g", "uint32_atomic_add",
                         "uint64_atomic_fetch_add", "uint32_atomic_compare_swap",
                         "uint64_atomic_fetch_xor", "uint32_atomic_swap" }) do
      assert.is_function(B[n], n)
    end
    assert.is_nil(B.double_wait_until)            -- the library declares no double wait
    local m = lab.machine{ soc = "Ascend950", pes = 8 }
    local ctr = m:malloc("uint64", 1, "ctr"):fill("const", 2 ^ 63)
    local flag = m:malloc("uint32", 1, "flag"):fill("zero")
    local dbl = m:malloc("fp64", 1, "dbl"):fill("zero")
    local r = {}
    m:launch(function(k)
      if k.pe == 4 then                           -- another server: RDMA
        r.old = k:uint64_atomic_fetch_add(ctr, 3, 0)
        k:double_p(dbl, 0.1, 0)
        k:uint32_atomic_set(flag, 4000000000, 0)
      elseif k.pe == 0 then
        k:uint32_wait_until(flag, lab.CMP_GT, 3999999999)
        r.ctr = k:uint64_g(ctr, 0)
        r.dbl = k:double_g(dbl, 0)
      end
    end, 1)
    -- uint64 values are Lua integers with the same 64 bits: 2^63 reads as math.mininteger
    assert.same({ old = math.mininteger, ctr = math.mininteger + 3, dbl = 0.1 }, r)
  end)
end)

describe("the operators on the unsigned dtypes", function()
  local O = require("spec.helpers.ops")
  for _, name in ipairs({ "allgather", "allreduce", "alltoall", "broadcast", "p2p",
                          "reduce_scatter" }) do
    for _, pes in ipairs({ 2, 8 }) do
      it(name .. " and its baseline are exact on uint16, uint32, uint64 (" .. pes .. " PEs)",
         function()
        for _, dt in ipairs({ "uint16", "uint32", "uint64" }) do
          O.assert_exact(O.run(name, { pes = pes, dtype = dt, count = 1003 }), dt)
        end
      end)
    end
  end
end)
