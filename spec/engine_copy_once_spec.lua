-- Bytes moved once (issue 11): an MTE put/get stages each chunk GM -> UB ->
-- GM, and the engine now moves each byte source -> destination once, keeping
-- the UB's content as a record that becomes real bytes whenever anything
-- else reads the UB or writes the source. These pin the cases where the
-- record must turn into bytes: what the kernel reads from the UB afterwards,
-- a source written after the put, overlapping source and destination, an
-- atomic put, and a vector op or a copy reading the staged UB.

local H = require("spec.helpers.engine")
local lab = H.lab

describe("bytes moved once", function()
  it("the UB holds the last chunk of a put, also after its source was overwritten", function()
    local m = lab.machine{ pes = 2 }
    local n, chunk = 40, 16                    -- chunks 16, 16, 8
    local src = m:malloc("int32", n, "src"):fill("iota")
    local dst = m:malloc("int32", n, "dst")
    local other = m:alloc("int32", n, "other"):fill("const", -7)
    local seen
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local ub = k:ub("int32", chunk)
      local tmp = k:ub("int32", n)
      k:mte_put_nbi(dst, src, ub, chunk * 4, n, 1, 0)
      k:quiet()
      H.overwrite(k, src, tmp, other, n)       -- then overwrite the put's source
      seen = H.ub_values(k, ub, chunk)
    end, 1)
    assert.same({ 32, 33, 34, 35, 36, 37, 38, 39, 24, 25, 26, 27, 28, 29, 30, 31 }, seen)
    local want = {}
    for i = 0, n - 1 do want[#want + 1] = i end
    assert.same(want, dst:on(1):read(0, n))
    assert.same({ -7, -7 }, src:on(0):read(0, 2))
  end)

  it("a put whose destination overlaps its source lands chunk after chunk, as staged", function()
    local m = lab.machine{ pes = 1 }
    local n, chunk, shift = 48, 16, 8
    local buf = m:malloc("int32", n + shift, "buf"):fill("iota")
    m:launch(function(k)
      local ub = k:ub("int32", chunk)
      k:mte_put_nbi(buf:sub(shift, n), buf:sub(0, n), ub, chunk * 4, n, 0, 0)
      k:quiet()
    end, 1)
    local cur = {}                             -- the chunked semantics, in Lua
    for i = 0, n + shift - 1 do cur[i] = i end
    for c = 0, n - 1, chunk do
      local staged = {}
      for i = 0, chunk - 1 do staged[i] = cur[c + i] end
      for i = 0, chunk - 1 do cur[shift + c + i] = staged[i] end
    end
    local want = {}
    for i = 0, n + shift - 1 do want[#want + 1] = cur[i] end
    assert.same(want, buf:on(0):read(0, n + shift))
  end)

  -- the first put's last chunk is still in flight when the second put stages
  -- its first chunk into the same UB (nothing orders them, as on hardware):
  -- it adds the second put's first bytes, exactly as the staged copies did
  it("an atomic-add put sums every chunk once, races on a reused UB as staged, and a get reads it back",
     function()
    local m = lab.machine{ pes = 2 }
    local n, chunk = 100, 32
    local src = m:malloc("int32", n, "src"):fill("iota")
    local acc = m:malloc("int32", n, "acc"):fill("const", 1000)
    local back = m:alloc("int32", n, "back")
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local ub = k:ub("int32", chunk)
      k:set_atomic("add", "int32")
      k:mte_put_nbi(acc, src, ub, chunk * 4, n, 1, 0)
      k:mte_put_nbi(acc, src, ub, chunk * 4, n, 1, 0)
      k:quiet()
      k:set_atomic_none()
      k:mte_get_nbi(back, acc, ub, chunk * 4, n, 1, 0)
      k:quiet()
    end, 1)
    local want = {}
    for i = 0, n - 1 do want[#want + 1] = i < 96 and 1000 + 2 * i or 1000 + i + (i - 96) end
    assert.same(want, acc:on(1):read(0, n))
    assert.same(want, back:on(0):read(0, n))
  end)

  it("a vector op and a copy that read the staged UB see the last chunk", function()
    local m = lab.machine{ pes = 2 }
    local n, chunk = 24, 8
    local src = m:malloc("int32", n, "src"):fill("iota")
    local dst = m:malloc("int32", n, "dst")
    local out = m:alloc("int32", chunk, "out")
    local sums
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local ub = k:ub("int32", chunk)
      local two = k:ub("int32", chunk)
      k:mte_get_nbi(dst, src, ub, chunk * 4, n, 1, 0)
      k:quiet()
      k:data_copy(out, ub, chunk)              -- UB -> GM of the staged bytes
      k:add(two, ub, ub, chunk)                -- V reads them too
      k:pipe_barrier()
      sums = H.ub_values(k, two, chunk)
    end, 1)
    assert.same({ 16, 17, 18, 19, 20, 21, 22, 23 }, out:on(0):read(0, chunk))
    assert.same({ 32, 34, 36, 38, 40, 42, 44, 46 }, sums)
  end)

  it("a signal written into a put's source after the put keeps the staged UB", function()
    local m = lab.machine{ pes = 2 }
    local n = 8
    local src = m:malloc("int32", n, "src"):fill("iota")
    local dst = m:malloc("int32", n, "dst")
    local seen
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local ub = k:ub("int32", n)
      k:mte_put_nbi(dst, src, ub, n * 4, n, 1, 0)
      k:quiet()
      k:signal_op(src, 99, lab.SIGNAL_SET, 0)
      k:signal_wait_until(src, lab.CMP_EQ, 99)
      seen = H.ub_values(k, ub, 2)
    end, 1)
    assert.same({ 0, 1 }, seen)
    assert.same({ 99, 1 }, src:on(0):read(0, 2))
  end)

  it("a large data_copy GM -> UB keeps its bytes when the source changes before the UB is read",
     function()
    local m = lab.machine{ pes = 1 }
    local n = 2048                             -- 8 KiB: it stages as a record
    local src = m:alloc("int32", n, "src"):fill("iota")
    local out = m:alloc("int32", n, "out")
    local other = m:alloc("int32", n, "other"):fill("const", 5)
    local seen
    m:launch(function(k)
      local ub = k:ub("int32", n)
      local tmp = k:ub("int32", n)
      k:data_copy(ub, src, n)
      H.sync(k, "MTE2_MTE3")
      k:data_copy(out, ub, n)                  -- reads the GM source itself
      k:data_copy(tmp, other, n)
      H.sync(k, "MTE2_MTE3")
      k:data_copy(src, tmp, n)                 -- the source changes
      k:pipe_barrier()
      seen = { k:get_value(ub, 0), k:get_value(ub, n - 1) }
    end, 1)
    assert.same({ 0, n - 1 }, seen)
    assert.same({ 0, 1, n - 1 }, { out:on(0):read(0, 1)[1], out:on(0):read(1, 1)[1],
                                   out:on(0):read(n - 1, 1)[1] })
    assert.same({ 5 }, src:on(0):read(0, 1))
  end)
end)

