-- Cheap primitives (issue 11 part 3): sub-views a kernel makes over and over
-- are kept by their view (the whole window is the view itself), hard event
-- names are remembered by their string, and the running block's own k is told
-- by its pointer; what each of them answers stays what it was.

local H = require("spec.helpers.engine")
local lab = H.lab

-- bytes the Lua heap grew by over 2000 calls of step(i) (the collector stopped),
-- after step has run once for each of its first four values
local function bytes_made(step)
  for i = 1, 4 do step(i) end
  collectgarbage("collect"); collectgarbage("stop")
  local before = collectgarbage("count")
  for i = 1, 2000 do step(i) end
  local grown = (collectgarbage("count") - before) * 1024
  collectgarbage("restart")
  return grown
end

describe("sub-views", function()
  it("the whole window is the view itself; the last sub-views made are made once", function()
    local m = lab.machine{ pes = 1 }
    local v = m:alloc("int32", 16, "v"):fill("iota")
    assert.is_true(rawequal(v, v:sub(0)))
    assert.is_true(rawequal(v, v:sub(0, 16)))
    local a, b = v:sub(0, 8), v:sub(8, 8)
    assert.is_true(rawequal(a, v:sub(0, 8)))
    assert.is_true(rawequal(b, v:sub(8, 8)))
    assert.is_false(rawequal(a, b))
    m:close()
  end)

  it("windows stay right however the kept ones churn", function()
    local m = lab.machine{ pes = 1 }
    local v = m:alloc("int32", 64, "v"):fill("iota")
    for round = 1, 3 do
      for _, w in ipairs({ { 0, 8 }, { 8, 8 }, { 0, 8 }, { 4, 2 }, { 60, 4 }, { 8, 8 }, { 5, nil } }) do
        local s = v:sub(w[1], w[2])
        local n = w[2] or 64 - w[1]
        assert.equals(n, #s, "round " .. round)
        assert.equals(w[1], s.offset)
        assert.equals(w[1], s:read(0))
        assert.equals(w[1] + n - 1, s:read(n - 1))
        local ss = s:sub(1, 1)                       -- a sub-view of a sub-view
        assert.equals(w[1] + 1, ss:read(0))
        assert.equals(w[1] + 1, ss.offset)
      end
    end
    m:close()
  end)

  it("every window a view made is made once while it lives, keyed by offset and size", function()
    local m = lab.machine{ pes = 1 }
    local v = m:alloc("int32", 64, "v"):fill("iota")
    local made = {}
    for off = 0, 31 do made[off] = v:sub(off, 4) end   -- more than a few, all alive
    for off = 0, 31 do assert.is_true(rawequal(made[off], v:sub(off, 4)), "offset " .. off) end
    local short = v:sub(8, 2)                            -- the same offset, another size
    assert.is_false(rawequal(short, made[8]))
    assert.equals(2, #short)
    assert.equals(4, #v:sub(8, 4))
    assert.is_true(rawequal(short, v:sub(8, 2)))
    collectgarbage()                                     -- kept weakly: the live ones stay
    assert.is_true(rawequal(made[31], v:sub(31, 4)))
    assert.equals(31, v:sub(31, 4):read(0))
    local big = m:alloc("int8", (1 << 23) + 64, "big")   -- a size past the packed key
    local w = big:sub(16, 1 << 23)
    assert.is_true(rawequal(w, big:sub(16, 1 << 23)))
    assert.equals(1 << 23, #big:sub(16, 1 << 23))
    assert.equals(16, big:sub(16, 1 << 23).offset)
    assert.equals((1 << 23) - 1, #big:sub(16, (1 << 23) - 1))
    m:close()
  end)

  it("a kernel's repeated sub-views of a UB tensor and a buffer allocate nothing", function()
    local m = lab.machine{ pes = 1 }
    local src = m:alloc("int32", 64, "src"):fill("iota")
    local grown
    m:launch(function(k)
      local ub = k:ub("int32", 16)
      local sub = ub.sub
      grown = bytes_made(function() sub(ub, 0, 8); sub(ub, 8, 8); src:sub(8, 8); src:sub(0, 64) end)
    end, 1)
    assert.is_true(grown < 2048, "grew " .. grown .. " bytes")   -- not one view per call
    m:close()
  end)

  it("a launch keeps the windows of a buffer's own-PE view through collections, not past it", function()
    local m = lab.machine{ pes = 2 }
    local buf = m:malloc("int32", 64, "buf")
    local seen = setmetatable({}, { __mode = "v" })      -- what a collection leaves
    local function kernel(k)
      if k.pe ~= 0 then return end
      seen.own = buf:sub(8, 4)                           -- every PE's window: kept
      seen.remote = k:ptr(buf, 1):sub(8, 4)              -- one PE's: not kept
      collectgarbage(); collectgarbage()
      seen.after = seen.own ~= nil and seen.remote == nil
      assert.is_true(rawequal(seen.own, buf:sub(8, 4)))
    end
    m:launch(kernel, 1)
    assert.is_true(seen.after)
    collectgarbage(); collectgarbage()
    assert.is_nil(seen.own)                              -- the launch's end let it go
    local ok = pcall(m.launch, m, function()
      seen.own = buf:sub(16, 4)
      error("fault")
    end, 1)
    assert.is_false(ok)
    collectgarbage(); collectgarbage()
    assert.is_nil(seen.own)                              -- a failed launch's too
    m:close()
  end)

  it("a kept sub-view of an earlier launch's UB tensor is still of that launch", function()
    local m = lab.machine{ pes = 1 }
    local old
    m:launch(function(k) old = k:ub("int32", 16); old:sub(0, 8) end, 1)
    local e
    m:launch(function(k) e = H.strip(H.err(function() k:get_value(old:sub(0, 8), 0) end)) end, 1)
    assert.equals("bad argument #1 to 'get_value' (UB tensor of an earlier launch)", e)
    m:close()
  end)
end)

describe("sub-views of sub-views", function()
  -- the fields and first element of view x, to compare a kept view with what a fresh
  -- one would be
  local function fields(x)
    return { #x, x.n, x.offset, x.dtype, x.pe, x.bytes, x.space, x.name, tostring(x) }
  end

  it("are their root's sub-views of the same window, fields as a fresh one's", function()
    local m = lab.machine{ pes = 2 }
    local v = m:alloc("int32", 64, "v"):fill("iota")
    local s = v:sub(8, 16)
    local ss = s:sub(4, 4)
    assert.is_true(rawequal(ss, v:sub(12, 4)))          -- the root's window 12..15
    assert.is_true(rawequal(ss, s:sub(4, 4)))
    assert.is_true(rawequal(ss, v:sub(10, 30):sub(2, 4)))  -- through another sub-view
    assert.is_true(rawequal(s, s:sub(0, 16)))            -- the whole window: itself
    assert.same({ 4, 4, 12, "int32", nil, 16, "GM", "v", "int32[4] v (GM, every PE) +12" },
                fields(ss))
    assert.equals(13, ss:on(1):read(1))
    local on = v:on(1)                                   -- another root: its own windows
    assert.is_false(rawequal(on:sub(12, 4), ss))
    assert.equals(1, on:sub(8, 16):sub(4, 4).pe)
    assert.is_true(rawequal(on:sub(12, 4), on:sub(8, 16):sub(4, 4)))
    local f32 = v:reinterpret("fp32")
    assert.equals("fp32", f32:sub(8, 16):sub(4, 4).dtype)
    m:close()
  end)

  it("keep their root alive and stay right however the kept ones churn", function()
    local m = lab.machine{ pes = 1 }
    local s = m:alloc("int32", 64, "v"):fill("iota"):sub(16, 32)  -- the root: no name kept
    collectgarbage(); collectgarbage()
    for round = 1, 3 do
      for _, w in ipairs({ { 0, 8 }, { 8, 8 }, { 4, 2 }, { 30, 2 }, { 5, nil } }) do
        local x = s:sub(w[1], w[2])
        assert.equals(w[2] or 32 - w[1], #x, "round " .. round)
        assert.equals(16 + w[1], x.offset)
        assert.equals(16 + w[1], x:read(0))
        assert.equals(16 + w[1] + 1, x:sub(1, 1):read(0))
      end
      collectgarbage()
    end
    m:close()
  end)

  it("make the window at the largest offset without a packed key (2^40, 2^40 - 1)", function()
    -- (the key of offset 2^40 overflowed a 64-bit integer: UBSan's fuzz run caught it)
    local m = lab.machine{ pes = 1 }
    local v = m:alloc("int32", 64, "v")
    for _, off in ipairs({ (1 << 40) - 1, 1 << 40 }) do
      local a, b = v:sub(off, 2), v:sub(off, 2)
      assert.equals(off, a.offset)
      assert.equals(2, #a)
      assert.equals(off < (1 << 40), rawequal(a, b))     -- kept below 2^40, made at it
      assert.equals(off + 1, a:sub(1, 1).offset)
    end
    m:close()
  end)

  it("raise what a direct window raises: bad arguments, reads and copies past the end", function()
    local m = lab.machine{ pes = 1 }
    local v = m:alloc("int32", 64, "v"):fill("iota")
    local s = v:sub(8, 16)
    assert.equals("bad argument #1 to 'sub' (offset must be >= 0)", H.strip(H.err(function()
      s:sub(-1) end)))
    assert.equals("bad argument #2 to 'sub' (size must be in 0..2^40)", H.strip(H.err(function()
      s:sub(1, -1) end)))
    local e1 = H.strip(H.err(function() s:sub(4, 4):read(5) end))
    assert.equals("bad argument #1 to 'read' (reads past the view (4 elements))", e1)
    local direct, nested
    m:launch(function(k)
      local ub = k:ub("int32", 16)
      direct = H.strip(H.err(function() k:data_copy(ub, v:sub(58, 16), 16) end))
      nested = H.strip(H.err(function() k:data_copy(ub, s:sub(50, 16), 16) end))
    end, 1)
    assert.matches("^out of bounds: read data_copy of 64 bytes at byte offset 232 of GM buffer 'v'",
                   direct)
    assert.equals(direct, nested)
    local old
    m:launch(function(k) old = k:ub("int32", 16):sub(0, 8) end, 1)
    local e
    m:launch(function(k) e = H.strip(H.err(function() k:get_value(old:sub(2, 2), 0) end)) end, 1)
    assert.equals("bad argument #1 to 'get_value' (UB tensor of an earlier launch)", e)
    m:close()
  end)

  it("a chunk loop over a sub-view allocates nothing once its chunks are made", function()
    local m = lab.machine{ pes = 1 }
    local src = m:alloc("int32", 4096, "src"):fill("iota")
    local grown
    m:launch(function()
      local part = src:sub(1024, 2048)                 -- a sub-view, cut in chunks
      local sub, kept = part.sub, {}
      for off = 0, 2047, 64 do kept[#kept + 1] = sub(part, off, 64) end   -- made once
      collectgarbage("collect"); collectgarbage("stop")
      local before = collectgarbage("count")
      for _ = 1, 50 do for off = 0, 2047, 64 do sub(part, off, 64) end end
      grown = (collectgarbage("count") - before) * 1024
      collectgarbage("restart")
    end, 1)
    assert.is_true(grown < 2048, "grew " .. grown .. " bytes")  -- not one view a chunk
    m:close()
  end)
end)

describe("reinterpreted views", function()
  it("are kept by their root like its windows: one view a (window, dtype), fields as fresh", function()
    local m = lab.machine{ pes = 1 }
    local v = m:alloc("int32", 64, "v"):fill("iota")
    local f = v:reinterpret("fp32")
    assert.is_true(rawequal(f, v:reinterpret("fp32")))
    assert.is_false(rawequal(f, v:reinterpret("uint32")))       -- another dtype, another view
    local s = v:sub(8, 16)
    local h = s:reinterpret("int16")
    assert.is_true(rawequal(h, v:sub(8, 16):reinterpret("int16")))
    assert.is_true(rawequal(h, v:sub(4, 30):sub(4, 16):reinterpret("int16")))  -- the same window
    assert.same({ 32, "int16", 16, "int32" }, { #h, h.dtype, h.offset, s.dtype })
    assert.is_true(rawequal(h:sub(2, 2), s:reinterpret("int16"):sub(2, 2)))  -- and its windows
    assert.equals(9, h:sub(2, 2):reinterpret("int32"):read(0))
    assert.equals(8, v:reinterpret("int32"):sub(8, 1):read(0))
    local short = v:sub(8, 2):reinterpret("int16")              -- the same start, another size
    assert.is_false(rawequal(short, h))
    assert.same({ 4, 32, 4 }, { #short, #v:sub(8, 16):reinterpret("int16"),
                                #v:sub(8, 2):reinterpret("int16") })
    m:close()
  end)

  it("know a dtype name they saw before, and refuse a bad one as the first time", function()
    local m = lab.machine{ pes = 1 }
    local v = m:alloc("int32", 64, "v"):fill("iota")
    local hint = "(int8 int16 int32 int64 uint8 fp16 bf16 fp32 uint16 uint32 uint64 fp64)"
    local function bad(dt) return H.strip(H.err(function() return v:reinterpret(dt) end)) end
    local first = bad("int33")
    for _ = 1, 3 do
      assert.equals("fp32", v:reinterpret("fp32").dtype)
      assert.equals("fp32", v:reinterpret("float").dtype)         -- an alias: its dtype
      assert.equals(first, bad("int33"))                           -- never remembered
      assert.equals("bad argument #1 to 'reinterpret' (unknown dtype 'int33' " .. hint .. ")",
                    first)
      assert.matches("bad argument #1 to 'reinterpret' %(string expected, got table%)", bad({}))
      assert.matches("bad argument #1 to 'reinterpret' %(unknown dtype '3' ", bad(3))
      assert.matches("bad argument #1 to 'reinterpret' %(string expected, got nil%)", bad(nil))
    end
    assert.equals(3, v:reinterpret("uint8"):read(12))                -- the bytes, as before
    m:close()
  end)

  it("a loop that reinterprets the same UB row allocates nothing once made", function()
    local m = lab.machine{ pes = 1 }
    local grown
    m:launch(function(k)
      local q = k:ub("bf16", 64)
      local rows = { q:sub(0, 32), q:sub(32, 32) }
      grown = bytes_made(function(j) rows[j % 2 + 1]:reinterpret("int32"):sub(12, 3) end)
    end, 1)
    assert.is_true(grown < 2048, "grew " .. grown .. " bytes")   -- not three objects a row
    m:close()
  end)

  it("of an earlier launch's UB tensor are still of that launch", function()
    local m = lab.machine{ pes = 1 }
    local old
    m:launch(function(k) old = k:ub("int32", 16); old:sub(0, 8):reinterpret("fp32") end, 1)
    local e
    m:launch(function(k)
      e = H.strip(H.err(function() k:get_value(old:sub(0, 8):reinterpret("fp32"), 0) end))
    end, 1)
    assert.equals("bad argument #1 to 'get_value' (UB tensor of an earlier launch)", e)
    m:close()
  end)
end)

describe("a buffer's copy on one PE", function()
  it("is kept by the buffer's view: v:on(pe) and k:ptr(v, pe) are one view a PE", function()
    local m = lab.machine{ pes = 4 }
    local v = m:malloc("int32", 64, "v"):fill("iota_pe")
    local on2 = v:on(2)
    assert.is_true(rawequal(on2, v:on(2)))
    assert.is_false(rawequal(on2, v:on(3)))
    assert.same({ 2, 64, 0, "v" }, { on2.pe, #on2, on2.offset, on2.name })
    assert.equals(2 * 64 + 5, on2:read(5))
    local same, fields, of_sub
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local p = k:ptr(v, 2)
      same = rawequal(p, on2) and rawequal(p, k:ptr(v, 2))
      fields = { p.pe, #p, rawequal(p:sub(8, 8), on2:sub(8, 8)) }
      local w = v:sub(8, 8)                            -- a sub-view's copy: made each time
      of_sub = { k:ptr(w, 3).pe, k:ptr(w, 3).offset, #k:ptr(w, 3) }
    end, 1)
    assert.is_true(same)
    assert.same({ 2, 64, true }, fields)
    assert.same({ 3, 8, 8 }, of_sub)
    assert.equals("bad argument #1 to 'on' (PE out of range)", H.strip(H.err(function()
      v:on(4) end)))
    m:close()
  end)
end)

describe("hard event names", function()
  it("names made at run time, freed and made again, and numbers all name their event", function()
    local m = lab.machine{ pes = 1 }
    local pipes = { "S", "V", "MTE2", "MTE3" }
    local seen = 0
    m:launch(function(k)
      for round = 1, 3 do
        for _, a in ipairs(pipes) do
          for _, b in ipairs(pipes) do
            local name = a .. "_" .. b
            if a ~= b and (a ~= "S" or b ~= "S") and lab.EVENT[name] then
              k:set_flag(table.concat({ a, b }, "_"), round % 8)
              if round == 2 then k:wait_flag(lab.EVENT[name], round % 8)
              else k:wait_flag(string.format("%s_%s", a, b), round % 8) end
              seen = seen + 1
            end
          end
          collectgarbage("collect")
        end
      end
    end, 1)
    assert.equals(3 * 12, seen)
    m:close()
  end)
end)

describe("the running block's k", function()
  it("a kernel that wrote over k's machine gets the stale-k error, not a crash", function()
    local m = lab.machine{ pes = 1 }
    local e1, e2
    m:launch(function(k)
      k[2] = {}
      e1 = H.strip(H.err(function() k:ub("int32", 8) end))
      k[2] = io.stdout
      e2 = H.strip(H.err(function() k:set_flag(table.concat({ "MTE3", "S" }, "_"), 3) end))
    end, 1)
    local stale = "primitive called outside its block's run (a stale k, another block's k, "
                  .. "after the launch, or from a coroutine inside the kernel)"
    assert.equals(stale, e1)
    assert.equals(stale, e2)
    m:close()
  end)
end)

describe("coroutines of ended blocks", function()
  it("serve the next launch's blocks fresh: no hook, no values, the arguments of that launch", function()
    local m = lab.machine{ pes = 2 }
    local seen = {}
    m:launch(function(k, a, b)
      debug.sethook(function() end, "", 1000000)       -- left set when the block ends
      seen[#seen + 1] = { k.pe, k.block, a, b, coroutine.running() }
      k:sync_all()                                       -- the 4 blocks of a PE live at once
      return 1, 2, 3
    end, 4, "x", "y")
    local again = {}
    m:launch(function(k, a, ...)
      again[#again + 1] = { k.pe, k.block, a, select("#", ...), debug.gethook(), coroutine.running() }
      k:sync_all()
    end, 3, "z")
    assert.equals(8, #seen)
    assert.equals(6, #again)
    local reused = 0
    for _, r in ipairs(again) do
      assert.equals("z", r[3])
      assert.equals(0, r[4])                             -- only the launch's own arguments
      assert.is_nil(r[5])                                -- the earlier kernel's hook is gone
      local kept = false
      for _, s in ipairs(seen) do kept = kept or rawequal(s[5], r[6]) end
      reused = reused + (kept and 1 or 0)
    end
    assert.equals(6, reused)                 -- every block ran on a coroutine an ended one left
    m:close()
  end)
end)
