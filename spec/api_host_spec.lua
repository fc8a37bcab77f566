-- CANN SHMEM's host side as the library documents it (include/host/mem/
-- shmem_host_heap.h, data_plane/shmem_host_so.h, shmem_host_p2p_sync.h,
-- shmem_host_rma.h): calloc, align, free (free(nil) does nothing, a view that
-- is not an allocation is refused and leaves the heap intact), and the
-- signal and put calls a host makes on a stream, on 2 and 8 PEs.

local H = require("spec.helpers.engine")
local lab = H.lab

-- the reports of a checked machine, as "kind" strings
local function kinds(m)
  local out = {}
  for _, r in ipairs(m:check_reports()) do out[#out + 1] = r.kind end
  return out
end

describe("host heap calls", function()
  it("calloc: symmetric and zeroed, and initcheck counts it as written", function()
    for _, alloc in ipairs({ "calloc", "malloc" }) do
      local m = lab.machine{ pes = 2, check = "initcheck" }
      local z = m[alloc](m, "int32", 64, "z")
      assert.equal("symmetric heap", z.space)
      assert.same({ 0, 0 }, { z:on(0):read(0), z:on(1):read(63) })
      m:launch(function(k)
        local ub = k:ub("int32", 64)
        k:mte_get_nbi(ub, z, 64, 1 - k.pe, 0)
        k:quiet()
      end, 1)
      assert.same(alloc == "calloc" and {} or { "uninitialized_read" }, kinds(m), alloc)
    end
  end)

  it("align: the heap offset is a multiple of the alignment, and the gap stays free", function()
    local m = lab.machine{ pes = 8 }
    local a = m:malloc("int8", 5, "a")                -- 16 bytes of the heap at 0
    for _, al in ipairs({ 1, 16, 64, 4096, 1 << 20 }) do
      local b = m:align(al, "fp32", 3, "b")
      assert.equal(0, b.heap_offset % al)
      assert.is_true(b.heap_offset >= 16)
      m:free(b)
    end
    local big = m:align(4096, "int32", 4)
    assert.equal(4096, big.heap_offset)
    local small = m:malloc("int32", 4)                -- first fit: the gap before it
    assert.equal(16, small.heap_offset)
    assert.equal(0, a.heap_offset)
    assert.is_nil(m:alloc("int32", 4).heap_offset)    -- GM is not on the heap
  end)

  it("align: refuse an alignment that is not a power of two", function()
    local m = lab.machine{ pes = 2 }
    for _, al in ipairs({ 0, 3, 48, -16 }) do
      local msg = H.err(function() m:align(al, "int32", 4) end)
      H.contains(msg, "bad argument #1 to 'align' (alignment must be a power of two up to 2^40)")
    end
    assert.equal(0, m:heap_used())
  end)

  it("free(nil) does nothing", function()
    local m = lab.machine{ pes = 2 }
    local a = m:malloc("int32", 16, "a")
    local used = m:heap_used()
    m:free(nil)
    m:free()
    assert.equal(used, m:heap_used())
    m:free(a)
    assert.equal(0, m:heap_used())
  end)

  -- before the fix m:free(a:on(1)) and m:free(a:reinterpret("int8")) freed a
  it("refuse a view of one PE's copy or of another dtype, leaving the heap intact", function()
    local m = lab.machine{ pes = 2 }
    local a = m:malloc("int32", 16, "a"):fill("iota")
    local used = m:heap_used()
    local msg = H.err(function() m:free(a:on(1)) end)
    H.contains(msg, "bad argument #1 to 'free' (a view of PE 1's copy of buffer 'a' (freeing it "
               .. "would free every PE's): free the buffer itself)")
    msg = H.err(function() m:free(a:reinterpret("int8")) end)
    H.contains(msg, "bad argument #1 to 'free' (a view as int8 of buffer 'a' (int32): free the "
               .. "buffer itself)")
    assert.equal(used, m:heap_used())
    assert.same({ 0, 1, 2 }, a:on(1):read(0, 3))
    m:free(a)
    assert.equal(0, m:heap_used())
  end)
end)

describe("host calls on a stream", function()
  for _, pes in ipairs({ 2, 8 }) do
    it("signal_op_on_stream: SET and ADD from every PE's host (" .. pes .. " PEs)", function()
      local m = lab.machine{ pes = pes }
      local sig = m:calloc("int32", 8, "sig")
      m:signal_op_on_stream(sig, 5, lab.SIGNAL_SET, function(me) return (me + 1) % pes end)
      m:signal_op_on_stream(sig:sub(1), 1, lab.SIGNAL_ADD, 0)           -- all to PE 0
      for p = 0, pes - 1 do assert.equal(5, sig:on(p):read(0)) end
      assert.equal(pes, sig:on(0):read(1))
      local rows = m:tasks(0)
      assert.equal("aclshmemx_signal_op_on_stream", rows[#rows].name)
    end)

    for _, mode in ipairs({ "memcheck", "racecheck", "initcheck" }) do
      it("putmem_signal and _nbi: the data, then the signal the peer waits for (" .. pes
         .. " PEs, " .. mode .. ")", function()
        for _, call in ipairs({ "putmem_signal", "putmem_signal_nbi" }) do
          local m = lab.machine{ pes = pes, check = mode }
          local x = m:malloc("int32", 5000, "x"):fill("iota_pe")
          local y = m:calloc("int32", 5000, "y")
          local sig = m:calloc("int32", 8, "sig")
          m[call](m, y, x, 5000, sig, 3, lab.SIGNAL_SET, function(me) return (me + 1) % pes end)
          m:signal_wait_until_on_stream(sig, lab.CMP_EQ, 3)
          for p = 0, pes - 1 do
            local src = (p - 1) % pes
            assert.same({ src * 5000, src * 5000 + 4999 }, { y:on(p):read(0), y:on(p):read(4999) })
          end
          assert.same({}, kinds(m))
        end
      end)
    end

    it("putmem_on_stream and getmem_on_stream (" .. pes .. " PEs)", function()
      local m = lab.machine{ pes = pes }
      local x = m:malloc("int32", 100, "x"):fill("iota_pe")
      local y = m:calloc("int32", 100, "y")
      local r = m:putmem_on_stream(y, x, 100, function(me) return me == 0 and pes - 1 or nil end)
      assert.equal(0, y:on(pes - 1):read(0) - 0)
      assert.equal(99, y:on(pes - 1):read(99))
      assert.equal(0, y:on(0):read(99))                 -- only PE 0's host called
      assert.is_true(r.e2e_us > r.kernel_us[1])         -- a launch: its cost is end to end
      m:getmem_on_stream(y, x, 100, 1)
      for p = 0, pes - 1 do assert.equal(100 + 99, y:on(p):read(99)) end
    end)
  end

  it("signal_wait_until_on_stream that no one satisfies is a deadlock error", function()
    local m = lab.machine{ pes = 2 }
    local sig = m:calloc("int32", 8, "sig")
    local msg = H.err(function() m:signal_wait_until_on_stream(sig, lab.CMP_EQ, 1) end)
    H.contains(msg, "deadlock", "signal_wait_until")
    m:signal_op_on_stream(sig, 1, lab.SIGNAL_SET, function(me) return me end)
    m:signal_wait_until_on_stream(sig, lab.CMP_EQ, 1)  -- the machine goes on
  end)

  it("refuse a target PE out of range before anything runs", function()
    local m = lab.machine{ pes = 2 }
    local sig = m:calloc("int32", 8, "sig")
    local msg = H.err(function() m:signal_op_on_stream(sig, 1, lab.SIGNAL_SET, 2) end)
    H.contains(msg, "bad argument #4 to 'signal_op_on_stream' (PE 2 out of range 0..1)")
    msg = H.err(function() m:putmem_signal(sig, sig, 1, sig, 1, 0, -1) end)
    H.contains(msg, "bad argument #7 to 'putmem_signal' (PE -1 out of range 0..1)")
    assert.same({}, m:tasks(0))
  end)
end)
