-- A large copy into GM that left its destination holding its source's bytes
-- is remembered with both buffers' write generations, and the same copy again
-- while neither buffer was written lands nothing (issue 24: no compare of
-- bytes that cannot have changed). These pin that every kind of write in
-- between, by a kernel or the host, into the destination or the source,
-- makes the next copy land its bytes again, at the same virtual time; and
-- that a buffer mapped in huge pages (64 MiB or more, 256 KiB or more a PE)
-- reads as zeros.

local H = require("spec.helpers.engine")
local lab = H.lab

describe("a copy known to have landed its bytes", function()
  local m, src, dst, other, n, chunk, t0

  -- PE 0 puts src into PE 1's dst in chunks of 80000 bytes (the known copies)
  local function put()
    return m:launch(function(k)
      if k.pe ~= 0 then return end
      local ub = k:ub("int32", chunk)
      k:mte_put_nbi(dst, src, ub, chunk * 4, n, 1, 0)
      k:quiet()
    end, 1).max_kernel_us
  end

  -- one launch of PE 0 running f(k, ub)
  local function kernel(f)
    m:launch(function(k)
      if k.pe ~= 0 then return end
      f(k, k:ub("int32", chunk))
      k:quiet()
    end, 1)
  end

  local function landed(what)
    assert.same(src:on(0):read(0, n), dst:on(1):read(0, n), what)
  end

  before_each(function()
    m = lab.machine{ pes = 2 }
    chunk, n = 20000, 40000
    src = m:malloc("int32", n, "src"):fill("iota_pe", 5, 3)
    dst = m:malloc("int32", n, "dst")
    other = m:malloc("int32", n, "other"):fill("const", -4)
    t0 = put()
    assert.equal(t0, put())
    landed("the same bytes again")
  end)
  after_each(function() m:close() end)

  it("lands again after a kernel wrote its destination", function()
    local writes = {
      { "a signal", function(k) k:signal_op(dst:sub(5, 1), 77, lab.SIGNAL_SET, 1) end },
      { "a p", function(k) k:p(dst:sub(30000, 1), 55, 1) end },
      { "an atomic add", function(k) k:atomic_add(dst:sub(3, 1), 1, 1) end },
      { "a small put", function(k, ub) k:mte_put_nbi(dst:sub(100, 8), other, ub, 32, 8, 1, 0) end },
      { "a large put of other bytes", function(k, ub)
          k:mte_put_nbi(dst:sub(0, chunk), other:sub(0, chunk), ub, chunk * 4, chunk, 1, 0)
        end },
      { "an atomic-add put", function(k, ub)
          k:set_atomic("add", "int32")
          k:mte_put_nbi(dst, other, ub, chunk * 4, n, 1, 0)
          k:quiet()
          k:set_atomic_none()
        end },
    }
    for _, w in ipairs(writes) do
      kernel(w[2])
      assert.are_not.same(src:on(0):read(0, n), dst:on(1):read(0, n), w[1] .. " wrote")
      assert.equal(t0, put())
      landed("after " .. w[1])
    end
  end)

  it("lands again after a kernel wrote its source", function()
    kernel(function(k) k:signal_op(src:sub(chunk + 7, 1), -9, lab.SIGNAL_SET, 0) end)
    assert.equal(t0, put())
    landed("after a signal into the source")
    assert.equal(-9, dst:on(1):read(chunk + 7))
    kernel(function(k, ub) k:mte_put_nbi(src:sub(0, 8), other, ub, 32, 8, 0, 0) end)
    assert.equal(t0, put())
    landed("after a put into the source")
    assert.equal(-4, dst:on(1):read(0))
  end)

  it("lands again after the host wrote either side", function()
    m:memcpy(dst:on(1):sub(10, 4), other:on(0):sub(0, 4))
    assert.equal(t0, put())
    landed("after a host memcpy into the destination")
    src:on(0):sub(n - 1, 1):fill("const", 123)
    assert.equal(t0, put())
    landed("after a host fill of the source")
    assert.equal(123, dst:on(1):read(n - 1))
  end)
end)

describe("a buffer of 64 MiB or more, 256 KiB or more a PE", function()
  it("holds zeros, takes bytes and is freed", function()
    local m = lab.machine{ pes = 2 }
    local n = 8 * 1024 * 1024 + 8                       -- 32 MiB and 32 bytes a PE
    local big = m:malloc("int32", n, "big")
    assert.equal(0, big:on(1):read(n - 1))
    assert.equal(0, big:on(0):read(0))
    big:on(1):sub(4, 2):fill("const", 6)
    assert.same({ 0, 6, 6, 0 }, big:on(1):read(3, 4))
    assert.same({ 0, 0 }, big:on(0):read(4, 2))
    m:free(big)
    m:close()
  end)
end)
