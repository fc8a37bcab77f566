-- Engine data movement: DataCopy / DataCopyPad between GM and UB, when copies
-- land, flags between pipes, atomic accumulation, vector ops, scalar UB access,
-- and the SHMEM puts and gets staged through UB.

local H = require("spec.helpers.engine")
local lab = H.lab

-- a value range every dtype holds exactly
local function range(dt)
  if dt == "uint8" then return 0, 200 end
  return -100, 100
end

-- fp32 rounding of a Lua number
local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end

describe("engine copies", function()
  describe("data_copy GM -> UB -> GM", function()
    for _, dt in ipairs(H.DTYPES) do
      it("round-trips " .. dt .. " exactly", function()
        local m = lab.machine{ pes = 2 }
        local n = 64                            -- 64 * size: whole 32-byte blocks
        local lo, hi = range(dt)
        local src = m:alloc(dt, n, "src"):fill("random", lo, hi, 5)
        local dst = m:alloc(dt, n, "dst")
        assert.are_not.same({ 0 }, { dst:compare(src) })   -- a real difference first
        m:launch(function(k)
          local u = k:ub(dt, n)
          k:data_copy(u, src, n)
          H.sync(k, "MTE2_MTE3")
          k:data_copy(dst, u, n)
        end, 1)
        assert.same({ 0 }, { dst:compare(src) })
        assert.equals(src:checksum(), dst:checksum())
      end)
    end

    it("rejects a count that is not whole 32-byte blocks, pointing at data_copy_pad", function()
      local m = lab.machine{ pes = 1 }
      local g = m:alloc("int32", 16)
      local msg
      m:launch(function(k)
        local u = k:ub("int32", 16)
        msg = H.err(function() k:data_copy(u, g, 9) end)
      end, 1)
      assert.equals("bad argument #3 to 'data_copy' (data_copy moves whole 32-byte blocks: "
                    .. "9 int32 are 36 bytes (hardware would round down to 32); use "
                    .. "data_copy_pad)", H.strip(msg))
    end)

    it("data_copy_pad moves any number of elements and nothing more", function()
      local m = lab.machine{ pes = 1 }
      local src = m:alloc("int32", 16):fill("iota", 1)
      local dst = m:alloc("int32", 16):fill("const", -1)
      local src8 = m:alloc("int8", 4):fill({ 42, 43 })
      local dst8 = m:alloc("int8", 4):fill("const", -1)
      local ub = {}
      m:launch(function(k)
        local u = k:ub("int32", 16)
        for i = 0, 15 do k:set_value(u, i, 55) end
        k:data_copy_pad(u, src, 7)              -- 28 bytes
        H.sync(k, "MTE2_MTE3")
        k:data_copy_pad(dst, u, 7)
        H.sync(k, "MTE2_S")
        ub = { k:get_value(u, 6), k:get_value(u, 7) }
        local b = k:ub("int8", 4)
        k:data_copy_pad(b, src8, 1)             -- one element, one byte
        H.sync(k, "MTE2_MTE3")
        k:data_copy_pad(dst8, b, 1)
      end, 1)
      assert.same({ 1, 2, 3, 4, 5, 6, 7, -1, -1 }, dst:read(0, 9))
      assert.same({ 7, 55 }, ub)                -- UB past the 7 elements untouched
      assert.same({ 42, -1, -1, -1 }, dst8:read(0, 4))
    end)

    it("rejects GM -> GM, another dtype, another core's UB (UB -> UB goes to V)", function()
      local m = lab.machine{ pes = 1 }
      local g = m:alloc("int32", 8)
      local f = m:alloc("fp32", 8)
      local e, shared = {}, nil
      m:launch(function(k)
        local u = k:ub("int32", 8)
        if k.block == 0 then
          shared = u
          e.gm = H.err(function() k:data_copy(g, g, 8) end)
          local u2 = k:ub("int32", 8)
          k:data_copy(u2, u, 8)                 -- LocalTensor -> LocalTensor: fine
          e.gm_pad = H.err(function() k:data_copy_pad(g, g, 8) end)
          e.ub_dtype = H.err(function() k:data_copy(k:ub("fp32", 8), u, 8) end)
          e.dtype = H.err(function() k:data_copy(u, f, 8) end)
          e.count = H.err(function() k:data_copy(u, g, 0) end)
          k:sync_all()
        else
          k:sync_all()
          e.other = H.err(function() k:data_copy(shared, g, 8) end)
        end
      end, 2)
      assert.equals("bad argument #1 to 'data_copy' (GM to GM copies stage through UB "
                    .. "(data_copy GM->UB, then UB->GM))", H.strip(e.gm))
      assert.equals("bad argument #1 to 'data_copy_pad' (GM to GM copies stage through UB "
                    .. "(data_copy_pad GM->UB, then UB->GM))", H.strip(e.gm_pad))
      assert.equals("bad argument #2 to 'data_copy' (dtype mismatch)", H.strip(e.ub_dtype))
      assert.equals("bad argument #2 to 'data_copy' (dtype mismatch: fp32 to int32)",
                    H.strip(e.dtype))
      assert.equals("bad argument #3 to 'data_copy' (count must be positive)", H.strip(e.count))
      assert.equals("bad argument #1 to 'data_copy' (UB of PE 0 core 0 is not reachable "
                    .. "from PE 0 block 1)", H.strip(e.other))
    end)
  end)

  describe("when a copy lands", function()
    local function landing(opts)
      local m = lab.machine(opts)
      local g = m:alloc("int32", 8):fill("iota", 100)
      local got = {}
      m:launch(function(k)
        local u = k:ub("int32", 8)
        for i = 0, 7 do k:set_value(u, i, 77) end
        k:data_copy(u, g, 8)
        got.before = k:get_value(u, 3)        -- the copy is still in flight
        H.sync(k, "MTE2_S")
        got.after = k:get_value(u, 3)
      end, 1)
      return got
    end

    it("a get_value right after a GM -> UB copy reads the old value; after MTE2_S the new",
       function()
      assert.same({ before = 77, after = 103 }, landing{ pes = 1 })
    end)

    it("the same when issuing and scalar access cost no time at all", function()
      assert.same({ before = 77, after = 103 }, landing{ pes = 1, issue_ns = 0, scalar_ns = 0 })
    end)

    it("without MTE2_MTE3 the UB -> GM copy carries what the UB held before", function()
      local n = 1024    -- 4 KiB: MTE3 (64 B/cycle) overtakes MTE2 (32 B/cycle)
      local function run(flag)
        local m = lab.machine{ pes = 1 }
        local old = m:alloc("int32", n):fill("const", 77)
        local src = m:alloc("int32", n):fill("iota", 1)
        local dst = m:alloc("int32", n)
        m:launch(function(k)
          local u = k:ub("int32", n)
          k:data_copy(u, old, n)
          H.sync(k, "MTE2_S")                 -- the UB holds 77s
          k:data_copy(u, src, n)
          if flag then H.sync(k, "MTE2_MTE3") end
          k:data_copy(dst, u, n)
        end, 1)
        return dst, src, old
      end
      local stale, _, old = run(false)
      assert.same({ 0 }, { stale:compare(old) })
      local fresh, src = run(true)
      assert.same({ 0 }, { fresh:compare(src) })
    end)

    it("set_value, then S_MTE3, then data_copy carries the values to GM", function()
      local m = lab.machine{ pes = 1 }
      local g = m:alloc("int32", 8):fill("const", -1)
      local h = m:alloc("fp16", 16)
      local back = {}
      m:launch(function(k)
        local u = k:ub("int32", 8)
        for i = 0, 7 do k:set_value(u, i, i * i) end
        H.sync(k, "S_MTE3")
        k:data_copy(g, u, 8)
        local f = k:ub("fp16", 16)
        k:set_value(f, 0, 0.1)                -- stored as the nearest fp16
        k:set_value(f, 1, 3)                  -- an integer into a float type
        back = { k:get_value(f, 0), k:get_value(f, 1) }
        H.sync(k, "S_MTE3")
        k:data_copy(h, f, 16)
      end, 1)
      assert.same({ 0, 1, 4, 9, 16, 25, 36, 49 }, g:read(0, 8))
      assert.same({ 0.0999755859375, 3.0 }, back)
      assert.same({ 0.0999755859375, 3.0 }, h:read(0, 2))
    end)
  end)

  describe("atomic accumulation on UB -> GM copies", function()
    -- GM starts at gm, the UB holds ub; one atomic copy of 4 elements
    local function atomic(dt, op, gm, ub, plain_op)
      local m = lab.machine{ pes = 1 }
      local g = m:alloc(dt, 16):fill(gm)
      local s = m:alloc(dt, 16):fill(ub)
      m:launch(function(k)
        local u = k:ub(dt, 16)
        k:data_copy_pad(u, s, 4)
        H.sync(k, "MTE2_MTE3")
        if plain_op then k:set_atomic(op) else k:set_atomic(op, dt) end
        k:data_copy_pad(g, u, 4)
      end, 1)
      return g:read(0, 4)
    end

    for _, dt in ipairs(H.DTYPES) do
      it("add, max and min for " .. dt, function()
        local gm, ub = { 10, -3, 7, 0 }, { 5, 4, 7, -2 }
        if dt == "uint8" then gm, ub = { 10, 3, 7, 0 }, { 5, 4, 7, 2 } end
        local add, mx, mn = {}, {}, {}
        for i = 1, 4 do
          add[i] = gm[i] + ub[i]
          mx[i] = math.max(gm[i], ub[i])
          mn[i] = math.min(gm[i], ub[i])
        end
        assert.same(add, atomic(dt, "add", gm, ub))
        assert.same(mx, atomic(dt, "max", gm, ub))
        assert.same(mn, atomic(dt, "min", gm, ub))
        assert.same(add, atomic(dt, "add", gm, ub, true))   -- no dtype given
      end)
    end

    it("integer add wraps around", function()
      assert.same({ -128, 0, 0, 0 }, atomic("int8", "add", { 127 }, { 1 }))
      assert.same({ 0, 0, 0, 0 }, atomic("uint8", "add", { 255 }, { 1 }))
      assert.same({ -32768, 0, 0, 0 }, atomic("int16", "add", { 32767 }, { 1 }))
    end)

    it("fp16 accumulates in fp32 and rounds once to nearest even", function()
      -- fp16 steps by 2 between 2048 and 4096: 2049 ties to 2048, 2051 to 2052
      assert.same({ 2048.0, 2050.0, 2052.0, 0.0 },
                  atomic("fp16", "add", { 2048, 2048, 2048 }, { 1, 2, 3 }))
    end)

    it("bf16 accumulates in fp32 and rounds once to nearest even", function()
      -- bf16 steps by 2 between 256 and 512: 257 ties to 256, 259 to 260
      assert.same({ 256.0, 258.0, 260.0, 0.0 },
                  atomic("bf16", "add", { 256, 256, 256 }, { 1, 2, 3 }))
    end)

    it("set_atomic_none (and set_atomic 'none') restore plain copies", function()
      local m = lab.machine{ pes = 1 }
      local g = m:alloc("int32", 8):fill("const", 10)
      local s = m:alloc("int32", 8):fill("const", 1)
      m:launch(function(k)
        local u = k:ub("int32", 8)
        k:data_copy(u, s, 8)
        H.sync(k, "MTE2_MTE3")
        k:set_atomic("add", "int32")
        k:data_copy(g, u, 8)
        H.sync(k, "MTE3_S")
        k:set_atomic_none()
        k:data_copy_pad(g:sub(4), u, 4)       -- plain again: overwrites
      end, 1)
      assert.same({ 11, 11, 11, 11, 1, 1, 1, 1 }, g:read(0, 8))
      local m2 = lab.machine{ pes = 1 }
      local g2 = m2:alloc("int32", 8):fill("const", 10)
      local s2 = m2:alloc("int32", 8):fill("const", 1)
      m2:launch(function(k)
        local u = k:ub("int32", 8)
        k:data_copy(u, s2, 8)
        H.sync(k, "MTE2_MTE3")
        k:set_atomic("max", "int32")
        k:set_atomic("none")
        k:data_copy(g2, u, 8)
      end, 1)
      assert.same({ 1, 1, 1, 1, 1, 1, 1, 1 }, g2:read(0, 8))
    end)

    it("several blocks adding into one GM buffer give the sum", function()
      local m = lab.machine{ pes = 1 }
      local g = m:alloc("int32", 16)
      local f = m:alloc("fp32", 16)
      m:launch(function(k)
        local u = k:ub("int32", 16)
        local v = k:ub("fp32", 16)
        for i = 0, 15 do
          k:set_value(u, i, k.block + 1)
          k:set_value(v, i, 0.5)
        end
        H.sync(k, "S_MTE3")
        k:set_atomic("add", "int32")
        k:data_copy(g, u, 16)
        k:set_atomic("add", "fp32")
        k:data_copy(f, v, 16)
      end, 8)
      local want, half = {}, {}
      for i = 1, 16 do want[i] = 8 * 9 // 2; half[i] = 8 * 0.5 end   -- 1 + ... + 8
      assert.same(want, g:read(0, 16))
      assert.same(half, f:read(0, 16))
    end)

    it("blocks of every PE adding into PE 0's symmetric buffer give the sum there", function()
      local m = lab.machine{ pes = 2 }
      local sym = m:malloc("int64", 8)
      m:launch(function(k)
        local u = k:ub("int64", 8)
        for i = 0, 7 do k:set_value(u, i, 1) end
        H.sync(k, "S_MTE3")
        k:set_atomic("add", "int64")
        k:data_copy(k:ptr(sym, 0), u, 8)
      end, 4)
      assert.same({ 8, 8, 8, 8, 8, 8, 8, 8 }, sym:on(0):read(0, 8))
      assert.same({ 0, 0, 0, 0, 0, 0, 0, 0 }, sym:on(1):read(0, 8))
    end)

    it("applies to the UB -> GM leg of mte_put_nbi too", function()
      local m = lab.machine{ pes = 2 }
      local src = m:alloc("int32", 8):fill("const", 3)
      local dst = m:malloc("int32", 8):fill("const", 100)
      m:launch(function(k)
        if k.pe ~= 0 then return end
        local u = k:ub("int32", 8)
        k:set_atomic("add", "int32")
        k:mte_put_nbi(dst, src, u, 32, 8, 1, 0)
      end, 2)
      assert.same({ 106, 106 }, dst:on(1):read(0, 2))   -- both blocks of PE 0 added 3
      assert.same({ 106, 106 }, dst:on(1):read(6, 2))
      assert.same({ 100 }, dst:on(0):read(0, 1))
    end)

    it("an atomic mode for one dtype rejects a copy of another", function()
      local m = lab.machine{ pes = 1 }
      local g = m:alloc("fp32", 8)
      local msg
      m:launch(function(k)
        local u = k:ub("fp32", 8)
        k:set_atomic("add", "int32")
        msg = H.err(function() k:data_copy(g, u, 8) end)
      end, 1)
      assert.equals("bad argument #1 to 'data_copy' (atomic mode set for int32, copy of fp32)",
                    H.strip(msg))
    end)
  end)

  describe("vector ops on UB", function()
    it("add, max, min, muls and cast; results visible after V_S", function()
      local m = lab.machine{ pes = 1 }
      local vals = { 1.5, -2, 3, 4, -2.75, 0.5, 8, -8.25 }
      local g = m:alloc("fp32", 8):fill(vals)
      local got = {}
      m:launch(function(k)
        local a, b, c = k:ub("fp32", 8), k:ub("fp32", 8), k:ub("fp32", 8)
        local mx, mn, i = k:ub("fp32", 8), k:ub("fp32", 8), k:ub("int32", 8)
        k:set_value(c, 0, 99.0)
        k:data_copy(a, g, 8)
        H.sync(k, "MTE2_V")
        k:muls(b, a, 2, 8)                    -- b = 2a
        k:add(c, a, b, 8)                     -- c = 3a
        k:max(mx, a, b, 8)
        k:min(mn, a, b, 8)
        k:cast(i, c, 8)                       -- toward zero
        got.before = k:get_value(c, 0)
        H.sync(k, "V_S")
        got.c, got.mx, got.mn, got.i = {}, {}, {}, {}
        for j = 0, 7 do
          got.c[j + 1] = k:get_value(c, j)
          got.mx[j + 1] = k:get_value(mx, j)
          got.mn[j + 1] = k:get_value(mn, j)
          got.i[j + 1] = k:get_value(i, j)
        end
      end, 1)
      assert.equals(99.0, got.before)
      local c, mx, mn, i = {}, {}, {}, {}
      for j, v in ipairs(vals) do
        c[j] = f32(v + f32(2 * v))
        mx[j] = math.max(v, 2 * v)
        mn[j] = math.min(v, 2 * v)
        i[j] = math.tointeger(c[j] < 0 and math.ceil(c[j]) or math.floor(c[j]))
      end
      assert.same(c, got.c)
      assert.same({ 4, -6, 9, 12, -8, 1, 24, -24 }, i)
      assert.same(i, got.i)
      assert.same(mx, got.mx)
      assert.same(mn, got.mn)
    end)

    it("fp16 add rounds to fp16; int32 muls; pipe_barrier('V') also waits", function()
      local m = lab.machine{ pes = 1 }
      local got = {}
      m:launch(function(k)
        local a, b, c = k:ub("fp16", 16), k:ub("fp16", 16), k:ub("fp16", 16)
        local x, y = k:ub("int32", 8), k:ub("int32", 8)
        k:set_value(a, 0, 2048.0)
        k:set_value(b, 0, 1.0)
        k:set_value(x, 0, 7)
        H.sync(k, "S_V")
        k:add(c, a, b, 16)
        k:muls(y, x, 3, 8)
        k:pipe_barrier("V")
        got = { k:get_value(c, 0), k:get_value(y, 0) }
      end, 1)
      assert.same({ 2048.0, 21 }, got)
    end)
  end)

  describe("SHMEM mte_put_nbi / mte_get_nbi through UB", function()
    local CHUNK = 64                            -- int32 elements of the staging UB
    -- sizes: one element, 52 bytes, exactly one chunk, three chunks and a tail
    local SIZES = { 1, 13, CHUNK, 3 * CHUNK + 5 }

    local function last_chunk(n) return n - ((n - 1) // CHUNK) * CHUNK end

    for _, to in ipairs({ 0, 1 }) do
      for _, n in ipairs(SIZES) do
        it(string.format("put of %d int32 from PE 0 to PE %d lands; the UB keeps the "
                         .. "last chunk", n, to), function()
          local m = lab.machine{ pes = 2 }
          local src = m:alloc("int32", 200, "src"):fill("iota_pe", 1)
          local dst = m:malloc("int32", 200, "dst"):fill("const", -1)
          local before, after = {}, {}
          m:launch(function(k)
            if k.pe ~= 0 then return end
            local u = k:ub("int32", CHUNK)
            for i = 0, CHUNK - 1 do k:set_value(u, i, -7) end
            k:mte_put_nbi(dst, src, u, CHUNK * 4, n, to, 0)
            before = { k:get_value(u, 0), k:get_value(u, last_chunk(n) - 1) }
            k:quiet()
            for i = 0, CHUNK - 1 do after[i + 1] = k:get_value(u, i) end
          end, 1)
          local want = src:on(0):read(0, n)
          assert.same(want, dst:on(to):read(0, n))
          assert.same({ -1 }, dst:on(to):read(n, 1))        -- nothing past n
          assert.same({ -1, -1 }, dst:on(1 - to):read(0, 2))  -- the other PE untouched
          assert.same({ -7, -7 }, before)                   -- still in flight
          -- UB[i] holds the last chunk, past it what the chunk before left there
          local tail = last_chunk(n)
          for i = 1, CHUNK do
            local expect = -7
            if i <= tail then expect = want[n - tail + i]
            elseif n > CHUNK then expect = want[n - tail - CHUNK + i] end
            assert.equals(expect, after[i])
          end
        end)

        it(string.format("get of %d int32 from PE %d to PE 0 lands", n, to), function()
          local m = lab.machine{ pes = 2 }
          local src = m:malloc("int32", 200, "src"):fill("iota_pe", 1)
          local dst = m:alloc("int32", 200, "dst"):fill("const", -1)
          local after = {}
          m:launch(function(k)
            if k.pe ~= 0 then return end
            local u = k:ub("int32", CHUNK)
            k:mte_get_nbi(dst, src, u, CHUNK * 4, n, to, 1)
            k:quiet()
            after = { k:get_value(u, 0) }
          end, 1)
          local want = src:on(to):read(0, n)
          assert.same(want, dst:on(0):read(0, n))
          assert.same({ -1 }, dst:on(0):read(n, 1))
          assert.same({ -1 }, dst:on(1):read(0, 1))
          assert.same({ want[n - last_chunk(n) + 1] }, after)
        end)
      end
    end

    it("takes the chunk size from ub_bytes, not from the UB tensor", function()
      local m = lab.machine{ pes = 2 }
      local src = m:alloc("int32", 16):fill("iota", 1)
      local dst = m:malloc("int32", 16)
      local after
      m:launch(function(k)
        if k.pe ~= 0 then return end
        local u = k:ub("int32", 16)
        k:mte_put_nbi(dst, src, u, 20, 16, 1, 0)   -- 20 bytes: chunks of 5 elements
        k:quiet()
        after = { k:get_value(u, 0), k:get_value(u, 1) }  -- the last chunk is one element
      end, 1)
      assert.same(src:on(0):read(0, 16), dst:on(1):read(0, 16))
      -- chunks of 5, 5, 5, 1: the last puts element 15 (16) at 0; 1 keeps the
      -- third chunk's second element (element 11, value 12)
      assert.same({ 16, 12 }, after)
    end)
  end)

  describe("putmem / getmem", function()
    it("move data of any size (chunked through the block's scratch UB)", function()
      local m = lab.machine{ pes = 2 }
      local n = 5000                            -- 20000 bytes: more than one scratch
      assert.is_true(n * 4 > lab.core.SCRATCH_BYTES)
      local src = m:alloc("int32", n):fill("iota_pe")
      local sym = m:malloc("int32", n)
      local back = m:alloc("int32", n)
      m:launch(function(k)
        if k.pe == 0 then
          k:putmem(sym, src, n, 1)
          k:getmem(back, sym, n, 1)           -- reads what the put left on PE 1
        end
      end, 1)
      assert.same({ 0 }, { sym:on(1):compare(src:on(0)) })
      assert.same({ 0 }, { back:on(0):compare(src:on(0)) })
    end)

    it("the scratch UB is carved once per launch", function()
      local m = lab.machine{ pes = 2 }
      local ub = m:params().ub_bytes
      local src = m:alloc("int8", 64)
      local sym = m:malloc("int8", 64)
      local fits, over
      m:launch(function(k)
        if k.pe ~= 0 then return end
        k:putmem(sym, src, 64, 1)
        k:putmem(sym, src, 64, 1)
        fits = pcall(k.ub, k, "int8", ub - lab.core.SCRATCH_BYTES)
        over = pcall(k.ub, k, "int8", 1)
      end, 1)
      assert.is_true(fits)
      assert.is_false(over)
    end)
  end)
end)
