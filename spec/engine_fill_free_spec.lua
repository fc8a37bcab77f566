-- Host fills and frees that used to corrupt silently (issue 9, defect 9):
-- fill("const"/"pe") saturates a value the integer dtype cannot hold instead
-- of wrapping it (int32 inf was -1); m:free of a sub-view is refused and the
-- buffer stays whole.
local lab = require("shmemlab")

describe("host fill and free", function()
  it("saturate a constant an integer dtype cannot hold instead of wrapping it", function()
    local m = lab.machine{ pes = 2 }
    local a = m:malloc("int32", 4, "a")
    local cases = { { math.huge, 2147483647 }, { -math.huge, -2147483648 }, { 0 / 0, 0 },
                    { 2 ^ 31, 2147483647 }, { -2 ^ 31 - 1, -2147483648 }, { 2 ^ 40, 2147483647 },
                    { 2 ^ 31 - 1, 2147483647 }, { -7.9, -7 } }
    for _, c in ipairs(cases) do
      a:fill("const", c[1])
      assert.same({ c[2], c[2] }, { a:on(0):read(0), a:on(1):read(3) }, tostring(c[1]))
    end
    local u = m:malloc("uint8", 4, "u")
    assert.same({ 0, 255, 255 }, { u:fill("const", -1):on(0):read(0),
                                   u:fill("const", 256):on(0):read(0),
                                   u:fill("const", 255):on(1):read(0) })
    local w = m:malloc("int64", 4, "w")
    assert.same({ math.maxinteger, math.mininteger },
                { w:fill("const", math.maxinteger):on(0):read(0),
                  w:fill("const", -math.huge):on(1):read(0) })
  end)

  it("saturate every PE's value of the 'pe' pattern", function()
    local m = lab.machine{ pes = 2 }
    local b = m:malloc("int8", 4, "b")
    b:fill("pe", 127)                                  -- PE 1's 128 used to wrap to -128
    assert.same({ 127, 127 }, { b:on(0):read(0), b:on(1):read(0) })
  end)

  it("let float dtypes round and overflow to infinity", function()
    local m = lab.machine{ pes = 1 }
    local f = m:malloc("fp16", 4, "f"):fill("const", 1e9)
    assert.equal(math.huge, f:on(0):read(0))
  end)

  it("refuse to free a sub-view and leave the buffer and the heap intact", function()
    local m = lab.machine{ pes = 2 }
    local a = m:malloc("int32", 16, "a"):fill("iota")
    local used = m:heap_used()
    local ok, err = pcall(function() m:free(a:sub(4, 8)) end)
    assert.is_false(ok)
    assert.matches("bad argument #1 to 'free' (a sub-view (byte offset 16, 32 of 64 bytes) of "
                   .. "buffer 'a': free the buffer itself)", err, 1, true)
    assert.is_false(pcall(function() m:free(a:sub(0, 8)) end))
    assert.same({ 0, 1, 2, 3 }, a:on(1):read(0, 4))
    assert.equal(used, m:heap_used())
    m:free(a:sub(0, 16))                               -- the whole buffer is the buffer
    assert.matches("freed", tostring(a), 1, true)
    assert.is_true(m:heap_used() < used)
  end)
end)
