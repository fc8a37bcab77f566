-- Engine memory: GM, symmetric heap, host buffers, UB, views and the
-- host-side element loops (fill, read, compare, checksum, copy).

local H = require("spec.helpers.engine")
local lab = H.lab

describe("engine memory", function()
  describe("allocation", function()
    it("m:alloc gives a zeroed GM buffer on every PE, one copy per PE", function()
      local m = lab.machine{ pes = 2 }
      local g = m:alloc("int32", 5, "g")
      assert.equals("GM", g.space)
      assert.same({ 0, 0, 0, 0, 0 }, g:on(0):read(0, 5))
      assert.same({ 0, 0, 0, 0, 0 }, g:on(1):read(0, 5))
      g:on(1):fill("const", 9)
      assert.same({ 0, 0, 0, 0, 0 }, g:on(0):read(0, 5))
      assert.same({ 9, 9, 9, 9, 9 }, g:on(1):read(0, 5))
      assert.equals(0, m:heap_used())          -- GM is not the symmetric heap
    end)

    it("m:malloc rounds every symmetric allocation up to 16 bytes", function()
      local m = lab.machine{ pes = 2 }
      local used = 0
      -- (dtype, n) -> bytes = n * size, heap use grows by ceil(bytes / 16) * 16
      for _, c in ipairs({ { "int8", 1 }, { "int32", 4 }, { "fp16", 9 }, { "int64", 3 },
                           { "uint8", 16 }, { "bf16", 1 } }) do
        local v = m:malloc(c[1], c[2])
        assert.equals("symmetric heap", v.space)
        local bytes = c[2] * H.SIZE[c[1]]
        used = used + math.ceil(bytes / 16) * 16
        assert.equals(used, m:heap_used())
      end
      assert.equals(16 + 16 + 32 + 32 + 16 + 16, used)
    end)

    it("accepts the dtype aliases half float16 bfloat16 float float32", function()
      local m = lab.machine{ pes = 1 }
      for alias, dt in pairs({ half = "fp16", float16 = "fp16", bfloat16 = "bf16",
                               float = "fp32", float32 = "fp32" }) do
        assert.equals(dt, m:alloc(alias, 2).dtype)
      end
    end)

    it("m:host gives one host copy, not one per PE", function()
      local m = lab.machine{ pes = 4 }
      local h = m:host("fp32", 3, "h"):fill({ 1.5, 2.5, 3.5 })
      assert.equals("host", h.space)
      assert.is_nil(h.pe)
      assert.same({ 1.5, 2.5, 3.5 }, h:read(0, 3))   -- no :on(pe) needed
      assert.equals(0, m:heap_used())
    end)

    it("reports heap exhaustion with the size asked, the use and the option", function()
      local m = lab.machine{ pes = 2, sym_heap_bytes = 1024 }
      m:malloc("int8", 1000)                  -- 1000 rounds to 1008
      assert.equals(1008, m:heap_used())
      local msg = H.err(function() return m:malloc("int8", 100) end)
      assert.equals("symmetric heap exhausted: 112 bytes asked, 1008 of 1024 in use "
                    .. "(machine option sym_heap_bytes)", H.strip(msg))
      assert.equals(1008, m:heap_used())      -- the failed malloc took nothing
      m:malloc("int8", 16)                    -- exactly what is left still fits
      assert.equals(1024, m:heap_used())
    end)

    it("m:free gives the space back and a later malloc reuses it", function()
      local m = lab.machine{ pes = 2, sym_heap_bytes = 1024 }
      local a = m:malloc("int32", 256, "a"):fill("const", 7)   -- the whole heap
      assert.equals(1024, m:heap_used())
      assert.has_error(function() m:malloc("int8", 1) end)
      m:free(a)
      assert.equals(0, m:heap_used())
      local b = m:malloc("int32", 256, "b")
      assert.equals(1024, m:heap_used())
      assert.same({ 0, 0 }, b:on(1):read(254, 2))   -- new space starts zeroed
      -- a hole in the middle is reused by an allocation that fits in it
      m:free(b)
      m:malloc("int8", 16)
      local y = m:malloc("int8", 32)
      m:malloc("int8", 16)
      m:free(y)
      assert.equals(32, m:heap_used())
      m:malloc("int8", 1024 - 64)             -- the tail after the last buffer
      m:malloc("int8", 32)                    -- goes into y's hole
      assert.equals(1024, m:heap_used())
    end)

    it("freeing twice is an error naming the buffer; a freed buffer is unusable", function()
      local m = lab.machine{ pes = 2 }
      local a = m:malloc("int32", 6, "act")
      m:free(a)
      assert.equals("buffer 'act' freed twice", H.strip(H.err(m.free, m, a)))
      assert.equals("int32[6] act (freed) (symmetric heap, every PE) +0", tostring(a))
      H.contains(H.err(function() return a:on(0):read(0) end), "freed buffer 'act'")
      local g = m:alloc("int32", 4, "g")
      m:free(g)                               -- GM buffers can be freed too
      assert.equals("buffer 'g' freed twice", H.strip(H.err(m.free, m, g)))
    end)
  end)

  describe("UB", function()
    it("k:ub allocations are 32-byte aligned", function()
      local m = lab.machine{ pes = 1 }
      local s = {}
      m:launch(function(k)
        local a = k:ub("int8", 1)        -- 1 byte   -> [0, 32)
        local b = k:ub("int32", 3)       -- 12 bytes -> [32, 64)
        local c = k:ub("fp16", 17)       -- 34 bytes -> [64, 128)
        local d = k:ub("int64", 1)       -- at 128
        s = { tostring(a), tostring(b), tostring(c), tostring(d), b.space, b.name, #c }
      end, 1)
      assert.same({ "int8[1] in UB of PE 0 core 0 (+0 bytes)",
                    "int32[3] in UB of PE 0 core 0 (+32 bytes)",
                    "fp16[17] in UB of PE 0 core 0 (+64 bytes)",
                    "int64[1] in UB of PE 0 core 0 (+128 bytes)",
                    "UB", "ub", 17 }, s)
    end)

    it("UB overflow is an argument error naming the used and free bytes", function()
      local m = lab.machine{ pes = 1 }
      local ub = m:params().ub_bytes
      local msg, full
      m:launch(function(k)
        k:ub("int8", 1)                  -- takes 32 bytes
        msg = H.err(function() return k:ub("int8", ub) end)
        full = tostring(k:ub("int8", ub - 32))   -- exactly the rest fits
      end, 1)
      assert.equals(string.format("bad argument #2 to 'ub' (UB overflow: %d bytes asked, "
                                  .. "32 of %d bytes used, %d free)", ub, ub, ub - 32),
                    H.strip(msg))
      assert.equals(string.format("int8[%d] in UB of PE 0 core 0 (+32 bytes)", ub - 32), full)
    end)

    it("each launch starts with an empty UB on every core", function()
      local m = lab.machine{ pes = 2 }
      local ub = m:params().ub_bytes
      for _ = 1, 2 do
        local n = 0
        m:launch(function(k) k:ub("int8", ub); n = n + 1 end, 3)
        assert.equals(6, n)
      end
    end)
  end)

  describe("views", function()
    it("have the fields n dtype pe offset space name bytes and a length", function()
      local m = lab.machine{ pes = 2 }
      local a = m:malloc("fp16", 10, "a")
      assert.equals(10, a.n)
      assert.equals(10, #a)
      assert.equals("fp16", a.dtype)
      assert.is_nil(a.pe)
      assert.equals(0, a.offset)
      assert.equals("symmetric heap", a.space)
      assert.equals("a", a.name)
      assert.is_nil(a.no_such_field)
    end)

    it("sub(offset [, n]) is a window further on; sub of a sub adds up", function()
      local m = lab.machine{ pes = 2 }
      local a = m:alloc("int32", 10, "a")
      local s = a:sub(2)
      assert.equals(2, s.offset)
      assert.equals(8, #s)
      local t = s:sub(3, 2)
      assert.equals(5, t.offset)
      assert.equals(2, t.n)
      t:fill({ 50, 60 })                -- lands at elements 5 and 6 of a
      assert.same({ 0, 0, 0, 0, 0, 50, 60, 0, 0, 0 }, a:on(1):read(0, 10))
      assert.same({ 60 }, a:on(0):sub(6, 1):read(0, 1))
      assert.equals(1, a:on(1):sub(4).pe)  -- sub keeps the PE
      H.contains(H.err(function() return a:sub(-1) end), "offset must be >= 0")
    end)

    it("on(pe) names one PE's copy; out of range is an argument error", function()
      local m = lab.machine{ pes = 2 }
      local a = m:malloc("int32", 4, "a")
      assert.equals(1, a:on(1).pe)
      assert.equals(0, a:on(0).pe)
      assert.equals("bad argument #1 to 'on' (PE out of range)",
                    H.strip(H.err(function() return a:on(2) end)))
    end)

    it("k:ptr(buf, pe) names a symmetric buffer on another PE, only symmetric", function()
      local m = lab.machine{ pes = 4 }
      local sym = m:malloc("int64", 3, "sym")
      local g = m:alloc("int64", 3, "g")
      local got = {}
      m:launch(function(k)
        if k.pe ~= 1 then return end
        local p = k:ptr(sym, 3)
        got.pe, got.name, got.n, got.space = p.pe, p.name, #p, p.space
        got.str = tostring(p)
        got.sub = k:ptr(sym:sub(1), 2).offset
        got.gm = H.err(function() return k:ptr(g, 2) end)
        got.ub = H.err(function() return k:ptr(k:ub("int64", 4), 2) end)
        got.pe_range = H.err(function() return k:ptr(sym, 4) end)
      end, 1)
      assert.same({ 3, "sym", 3, "symmetric heap" }, { got.pe, got.name, got.n, got.space })
      assert.equals("int64[3] sym (symmetric heap, PE 3) +0", got.str)
      assert.equals(1, got.sub)
      assert.equals("bad argument #1 to 'ptr' (not a symmetric buffer (allocate it with "
                    .. "m:malloc))", H.strip(got.gm))
      assert.equals("bad argument #1 to 'ptr' (not a symmetric buffer (allocate it with "
                    .. "m:malloc))", H.strip(got.ub))
      assert.equals("bad argument #2 to 'ptr' (PE 4 out of range 0..3)", H.strip(got.pe_range))
    end)

    it("__tostring of a machine gives SoC, PEs, cores, UB, heap and time", function()
      local m = lab.machine{ pes = 2 }
      local p = m:params()
      local function expect()
        return string.format("shmemlab machine Ascend910B: %d PEs (%d per server), %d AIV "
                             .. "cores of %d KiB UB, heap %d of %d KiB used, t = %s us",
                             p.pes, p.pes_per_server, p.aiv_cores, p.ub_bytes // 1024,
                             m:heap_used() // 1024, p.sym_heap_bytes // 1024,
                             tostring(m:now()))
      end
      assert.equals("shmemlab machine Ascend910B: 2 PEs (8 per server), 48 AIV cores of "
                    .. "192 KiB UB, heap 0 of 1048576 KiB used, t = 0.0 us", tostring(m))
      m:malloc("int8", 16 * 1024)
      m:launch(function() end, 1)
      assert.equals(expect(), tostring(m))
      assert.truthy(H.has(tostring(m), "heap 16 of"))
      local m2 = lab.machine{ soc = "Ascend950", pes = 4 }
      assert.truthy(tostring(m2):find("^shmemlab machine Ascend950: 4 PEs %(4 per server%), "
                                      .. "56 AIV cores of 248 KiB UB"))
    end)

    it("__tostring of a view gives dtype, size, name, space, PE and offset", function()
      local m = lab.machine{ pes = 2 }
      local a = m:malloc("int32", 3, "a")
      local h = m:host("fp16", 8, "h")
      local g = m:alloc("fp32", 8)
      assert.equals("int32[3] a (symmetric heap, every PE) +0", tostring(a))
      assert.equals("int32[3] a (symmetric heap, PE 1) +0", tostring(a:on(1)))
      assert.equals("int32[2] a (symmetric heap, every PE) +1", tostring(a:sub(1)))
      assert.equals("fp16[8] h (host, host) +0", tostring(h))
      assert.equals("fp32[8] " .. g.name .. " (GM, every PE) +0", tostring(g))
      assert.truthy(g.name:find("^gm#%d+$"))            -- default names
      assert.truthy(m:malloc("int8", 1).name:find("^sym#%d+$"))
      assert.truthy(m:host("int8", 1).name:find("^host#%d+$"))
    end)
  end)

  describe("fill", function()
    it("const, zero, iota, iota_pe and pe patterns", function()
      local m = lab.machine{ pes = 2 }
      local a = m:malloc("int32", 6, "a")
      a:fill("const", 7)
      assert.same({ 7, 7, 7, 7, 7, 7 }, a:on(1):read(0, 6))
      a:fill("zero")
      assert.same({ 0, 0, 0, 0, 0, 0 }, a:on(1):read(0, 6))
      a:fill("iota")                          -- 0, 1, 2, ... on every PE
      assert.same({ 0, 1, 2, 3, 4, 5 }, a:on(1):read(0, 6))
      a:fill("iota", 10, 2)                   -- v[i] = 10 + i * 2
      assert.same({ 10, 12, 14, 16, 18, 20 }, a:on(0):read(0, 6))
      assert.same({ 10, 12, 14, 16, 18, 20 }, a:on(1):read(0, 6))
      a:fill("iota_pe", 10, 2)                -- v[i] = 10 + (pe * n + i) * 2
      assert.same({ 10, 12, 14, 16, 18, 20 }, a:on(0):read(0, 6))
      assert.same({ 22, 24, 26, 28, 30, 32 }, a:on(1):read(0, 6))
      a:fill("pe", 5)                         -- v[i] = 5 + pe
      assert.same({ 5, 5, 5, 5, 5, 5 }, a:on(0):read(0, 6))
      assert.same({ 6, 6, 6, 6, 6, 6 }, a:on(1):read(0, 6))
      local f = m:host("fp16", 4):fill("iota", 0.5, 0.25)
      assert.same({ 0.5, 0.75, 1.0, 1.25 }, f:read(0, 4))
      local r = m:host("fp16", 1):fill("const", 0.1)   -- stored as the nearest fp16
      assert.equals(0.0999755859375, r:read(0))
    end)

    it("fill on a window or on one PE touches only that", function()
      local m = lab.machine{ pes = 2 }
      local a = m:alloc("int16", 6)
      a:on(1):sub(2, 2):fill("const", -3)
      assert.same({ 0, 0, 0, 0, 0, 0 }, a:on(0):read(0, 6))
      assert.same({ 0, 0, -3, -3, 0, 0 }, a:on(1):read(0, 6))
      a:sub(4):fill("iota", 1)                -- the pattern starts at the window
      assert.same({ 0, 0, -3, -3, 1, 2 }, a:on(1):read(0, 6))
    end)

    it("random is reproducible, seeded, per PE, within [lo, hi] and integral", function()
      local function draw(seed)
        local m = lab.machine{ pes = 2 }
        return m:alloc("int16", 64):fill("random", -5, 5, seed)
      end
      local r1, r2, r3 = draw(42), draw(42), draw(43)
      assert.same(r1:on(0):read(0, 64), r2:on(0):read(0, 64))
      assert.same(r1:on(1):read(0, 64), r2:on(1):read(0, 64))
      assert.equals(r1:checksum(), r2:checksum())
      assert.are_not.same(r1:on(0):read(0, 64), r3:on(0):read(0, 64))
      assert.are_not.same(r1:on(0):read(0, 64), r1:on(1):read(0, 64))   -- seed + pe
      local seen = {}
      for _, v in ipairs(r1:on(0):read(0, 64)) do
        assert.is_true(v >= -5 and v <= 5)
        seen[v] = true
      end
      assert.truthy(seen[-5] or seen[5])      -- the bounds are included
      local m = lab.machine{ pes = 1 }
      for _, v in ipairs(m:host("fp32", 32):fill("random", 0, 3, 7):read(0, 32)) do
        assert.equals(math.floor(v), v)
        assert.is_true(v >= 0 and v <= 3)
      end
    end)

    it("a table sets the first elements; \"bytes\" and a string set the bytes", function()
      local m = lab.machine{ pes = 2 }
      local f = m:alloc("fp32", 4):fill({ 1.5, 2, 3 })
      assert.same({ 1.5, 2.0, 3.0, 0.0 }, f:on(1):read(0, 4))
      H.contains(H.err(function() return f:fill({ 1, 2, 3, 4, 5 }) end),
                 "table longer than the view")
      H.contains(H.err(function() return f:fill({ 1, "x" }) end), "table of numbers expected")
      local s = m:host("int32", 3):fill("bytes", string.pack("<i4i4", 5, -6))
      assert.same({ 5, -6, 0 }, s:read(0, 3))
      H.contains(H.err(function() return s:fill("bytes", string.rep("x", 16)) end),
                 "string longer than the view")
      H.contains(H.err(function() return s:fill("bytes", "abcdefg") end),
                 "7 bytes are not whole int32 elements")
      H.contains(H.err(function() return s:fill("iotaX") end), "invalid option 'iotaX'")
      assert.equals(string.pack("<i4i4i4", 5, -6, 0), s:raw())
    end)

    it("returns the view, so it chains", function()
      local m = lab.machine{ pes = 1 }
      local a = m:alloc("int8", 2)
      assert.equals(a, a:fill("const", 1))
    end)
  end)

  describe("read", function()
    it("reads one element or a table; integers stay integers", function()
      local m = lab.machine{ pes = 2 }
      local a = m:alloc("int64", 4):fill("iota", 100)
      local x = a:on(1):read(2)
      assert.equals(102, x)
      assert.equals("integer", math.type(x))
      assert.same({ 101, 102 }, a:on(1):read(1, 2))
      assert.same({}, a:on(1):read(1, 0))
      local f = m:alloc("fp32", 1):fill("const", 2)
      assert.equals("float", math.type(f:on(0):read(0)))
      local big = m:host("int64", 1):fill({ math.maxinteger })
      assert.equals(math.maxinteger, big:read(0))     -- int64 exact
    end)

    it("a buffer on every PE must name the PE (unless there is one PE)", function()
      local m = lab.machine{ pes = 2 }
      local g = m:alloc("int32", 3, "g")
      assert.equals("buffer 'g' is on every PE: read from buf:on(pe)",
                    H.strip(H.err(function() return g:read(0) end)))
      local one = lab.machine{ pes = 1 }
      assert.equals(0, one:alloc("int32", 3):read(0))
    end)

    it("reading past the view is an argument error", function()
      local m = lab.machine{ pes = 1 }
      local x = m:host("int32", 3)
      assert.equals("bad argument #1 to 'read' (reads past the view (3 elements))",
                    H.strip(H.err(function() return x:read(3) end)))
      assert.equals("bad argument #2 to 'read' (reads past the view (3 elements))",
                    H.strip(H.err(function() return x:read(1, 3) end)))
      H.contains(H.err(function() return x:read(-1) end), "index must be >= 0")
    end)
  end)

  describe("compare", function()
    it("returns 0 when equal", function()
      local m = lab.machine{ pes = 2 }
      local e = m:host("int32", 6):fill("const", 7)
      local act = m:malloc("int32", 6):fill("const", 7)
      local r = { act:compare(e) }
      assert.same({ 0 }, r)
    end)

    it("returns wrong count, first index, PE, expected and actual", function()
      local m = lab.machine{ pes = 3 }
      local e = m:host("int32", 6):fill("const", 7)
      local act = m:malloc("int32", 6):fill("const", 7)
      act:on(1):sub(4, 1):fill({ 8 })
      act:on(1):sub(2, 1):fill({ 9 })
      act:on(2):sub(0, 1):fill({ -1 })
      -- 3 wrong in all; the first is element 2 of PE 1 (lowest PE, then index)
      assert.same({ 3, 2, 1, 7, 9 }, { act:compare(e) })
      assert.same({ 1, 0, 2, 7, -1 }, { act:on(2):compare(e) })
      assert.same({ 0 }, { act:on(0):compare(e) })
      -- per-PE expectations: a buffer on every PE against another one
      local e2 = m:alloc("int32", 6):fill("pe", 7)   -- 7, 8, 9 per PE
      local a2 = m:alloc("int32", 6):fill("pe", 7)
      assert.same({ 0 }, { a2:compare(e2) })
      a2:on(2):sub(5, 1):fill({ 0 })
      assert.same({ 1, 5, 2, 9, 0 }, { a2:compare(e2) })
    end)

    it("compares floats bitwise, except NaN == NaN and -0 == +0", function()
      local m = lab.machine{ pes = 1 }
      for _, dt in ipairs({ "fp16", "bf16", "fp32" }) do
        local e = m:host(dt, 3):fill({ 0 / 0, 0.0, 1.0 })
        local a = m:host(dt, 3):fill({ 0 / 0, -0.0, 1.0 })
        assert.same({ 0 }, { a:compare(e) })
        a:sub(2, 1):fill({ 1.0 + 2 ^ -6 })    -- the next value up in every type
        assert.same({ 1, 2, 0, 1.0, 1.0 + 2 ^ -6 }, { a:compare(e) })
      end
    end)

    it("rejects another size or dtype", function()
      local m = lab.machine{ pes = 2 }
      local act = m:malloc("int32", 6)
      H.contains(H.err(function() return act:compare(m:host("int32", 5)) end), "size mismatch")
      H.contains(H.err(function() return act:compare(m:host("fp32", 6)) end), "dtype mismatch")
    end)
  end)

  describe("checksum", function()
    it("is a 16-digit hex digest that changes when one element changes", function()
      local m = lab.machine{ pes = 2 }
      local a = m:alloc("int32", 1000):fill("iota")
      local b = m:alloc("int32", 1000):fill("iota")
      local c0 = a:checksum()
      assert.truthy(c0:find("^%x+$"))
      assert.equals(16, #c0)
      assert.equals(c0, b:checksum())
      a:on(1):sub(777, 1):fill({ 778 })       -- one element of one PE
      assert.are_not.equal(c0, a:checksum())
      assert.equals(b:on(0):checksum(), a:on(0):checksum())
      assert.are_not.equal(b:on(1):checksum(), a:on(1):checksum())
      a:on(1):sub(777, 1):fill({ 777 })
      assert.equals(c0, a:checksum())
      assert.are_not.equal(a:on(0):checksum(), a:checksum())   -- covers every PE
    end)

    it("depends on the dtype, not only on the bytes", function()
      local m = lab.machine{ pes = 1 }
      local i = m:host("int32", 4)
      local f = m:host("fp32", 4)
      assert.are_not.equal(i:checksum(), f:checksum())   -- both all zero bytes
    end)
  end)

  describe("copy (host side, untimed)", function()
    it("copies, or reduces with add, max and min", function()
      local m = lab.machine{ pes = 1 }
      local x = m:host("int32", 3):fill({ 1, 5, 3 })
      local y = m:host("int32", 3):fill({ 4, 2, 3 })
      x:copy(y, "max"); assert.same({ 4, 5, 3 }, x:read(0, 3))
      x:copy(y, "add"); assert.same({ 8, 7, 6 }, x:read(0, 3))
      x:copy(y, "min"); assert.same({ 4, 2, 3 }, x:read(0, 3))
      x:fill({ 9, 9, 9 }):copy(y); assert.same({ 4, 2, 3 }, x:read(0, 3))
      local now = m:now()
      assert.equals(now, m:now())             -- no virtual time passes
    end)

    it("a one-PE source goes to every PE of the destination", function()
      local m = lab.machine{ pes = 3 }
      local d = m:alloc("fp32", 2)
      local s = m:host("fp32", 2):fill({ 0.5, -1 })
      d:copy(s)
      assert.same({ 0.5, -1.0 }, d:on(2):read(0, 2))
      d:copy(d:on(2), "add")                  -- adds PE 2's copy into every PE
      assert.same({ 1.0, -2.0 }, d:on(0):read(0, 2))
    end)

    it("rejects another dtype or size and unknown operations", function()
      local m = lab.machine{ pes = 1 }
      local x = m:host("int32", 3)
      H.contains(H.err(function() return x:copy(m:host("fp32", 3)) end), "dtype mismatch")
      H.contains(H.err(function() return x:copy(m:host("int32", 4)) end), "size mismatch")
      H.contains(H.err(function() return x:copy(x, "mul") end), "invalid option 'mul'")
    end)
  end)

  describe("m:memcpy (data)", function()
    it("moves bytes between host and one PE's device memory", function()
      local m = lab.machine{ pes = 2 }
      local h = m:host("int32", 4):fill("iota", 1)
      local g = m:alloc("int32", 4)
      m:memcpy(g:on(1), h)
      assert.same({ 1, 2, 3, 4 }, g:on(1):read(0, 4))
      assert.same({ 0, 0, 0, 0 }, g:on(0):read(0, 4))
      local back = m:host("int32", 4)
      m:memcpy(back, g:on(1), 2)              -- n elements
      assert.same({ 1, 2, 0, 0 }, back:read(0, 4))
      H.contains(H.err(function() return m:memcpy(g, h) end),
                 "memcpy names one PE: use buf:on(pe)")
    end)
  end)
end)
