-- A large copy into GM leaves the leading blocks that already hold its bytes
-- unwritten and copies plainly from the first block that differs (issue 11
-- part 5: the iterations of a benchmark land the same bytes again). These
-- pin that every byte still lands whatever the destination held before:
-- the same bytes, a change in the first, a middle or the last block of a
-- chunk, in the part of a block past the last whole 4 KiB, and that the
-- virtual time does not depend on it.

local H = require("spec.helpers.engine")
local lab = H.lab

describe("a large copy into bytes it may hold already", function()
  it("lands every byte, and the same time, whatever the destination held", function()
    local m = lab.machine{ pes = 2 }
    local chunk = 20000                    -- 80000 bytes a chunk: 19 blocks and 2176 bytes
    local n = 2 * chunk + 37               -- two large chunks and a small one
    local src = m:malloc("int32", n, "src"):fill("iota_pe", 5, 3)
    local dst = m:malloc("int32", n, "dst")
    local function get()
      return m:launch(function(k)
        if k.pe ~= 0 then return end
        local ub = k:ub("int32", chunk)
        k:mte_get_nbi(dst, src, ub, chunk * 4, n, 1, 0)
        k:quiet()
      end, 1).max_kernel_us
    end
    -- PE 0's dst must equal PE 1's src
    local function landed(what)
      assert.same(src:on(1):read(0, n), dst:on(0):read(0, n), what)
    end
    local t0 = get()
    landed("into zeros")
    assert.equal(t0, get())
    landed("the same bytes again")
    local cases = {
      { 0, "the first element" },
      { 1024 * 7 + 3, "a middle block of the first chunk" },
      { 19 * 1024, "the bytes past the last whole block" },
      { chunk - 1, "the last element of a chunk" },
      { chunk + 1024 * 18, "a block of the second chunk" },
      { 2 * chunk + 36, "the small chunk" },
    }
    for _, c in ipairs(cases) do
      local at, what = c[1], c[2]
      src:on(1):sub(at, 1):fill("const", -1 - at)
      assert.equal(t0, get())
      landed(what)
      assert.equal(-1 - at, dst:on(0):read(at))
    end
    src:on(1):sub(1024 * 2, 1):fill("const", 7)           -- two blocks of a chunk at once
    src:on(1):sub(1024 * 15, 1):fill("const", 8)
    assert.equal(t0, get())
    landed("two blocks of a chunk")
    dst:on(0):sub(chunk // 2, 4):fill("const", 99)        -- the destination changed instead
    assert.equal(t0, get())
    landed("a destination written since")
  end)
end)
