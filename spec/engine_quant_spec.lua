-- The vector primitives of INT8 MoE dispatch (Abs, ReduceMax, Cast with
-- CAST_RINT, on the V pipe), ReinterpretCast of a view, and the host
-- reference of one token's INT8 quantisation (view:quant_int8).
local lab = require("shmemlab")

-- x rounded to fp32 (nearest even), as a Lua number
local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end

-- run body(k, ubs) on one block of a fresh 1-PE machine with src copied into
-- a UB of dtype sdt; returns the machine, the launch and the read-back of out
local function run1(sdt, values, odt, on, body, opts)
  local m = lab.machine{ pes = 1, check = opts and opts.check }
  local n = #values
  local src = m:alloc(sdt, n):fill(values)
  local out = m:alloc(odt, on):fill("const", 7)
  local r = m:launch(function(k)
    local a, o = k:ub(sdt, n), k:ub(odt, on)
    k:data_copy_pad(a, src, n)
    k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
    body(k, o, a, n)
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    k:data_copy_pad(out, o, on)
  end, 1)
  local got = {}
  for i = 0, on - 1 do got[i + 1] = out:on(0):read(i) end
  return m, r, got, out
end

-- the kernel time of one launch that runs op(k, dst, a, n) once on UB tensors
local function vec_time(op, sdt, ddt, n)
  local m = lab.machine{ pes = 1 }
  local r = m:launch(function(k)
    local a, d = k:ub(sdt, n), k:ub(ddt, n)
    k:duplicate(a, 1, n)
    k:pipe_barrier("V")
    op(k, d, a, n)
    k:pipe_barrier("V")
  end, 1)
  return r.kernel_us[1], m:params()
end

describe("abs", function()
  it("clears the sign of floats exactly, keeps NaN a NaN, every float dtype", function()
    for _, dt in ipairs({ "fp16", "bf16", "fp32" }) do
      local _, _, got = run1(dt, { -1.5, 2.5, -0.0, -math.huge, 0 / 0, -65504 }, dt, 6,
                             function(k, o, a, n) k:abs(o, a, n) end)
      assert.same({ 1.5, 2.5, 0, math.huge }, { got[1], got[2], got[3], got[4] })
      assert.is_true(got[5] ~= got[5])
      assert.equal(dt == "bf16" and 65536 or 65504, got[6])     -- bf16 rounds 65504 up
      assert.equal("0", tostring(got[3]):gsub("%.0$", ""))       -- +0, not -0
    end
  end)

  it("wraps at the minimum of a signed integer type, copies uint8", function()
    local _, _, g8 = run1("int8", { -128, -127, 5, 0 }, "int8", 4,
                          function(k, o, a, n) k:abs(o, a, n) end)
    assert.same({ -128, 127, 5, 0 }, g8)
    local _, _, g32 = run1("int32", { -2147483648, -7, 7 }, "int32", 3,
                           function(k, o, a, n) k:abs(o, a, n) end)
    assert.same({ -2147483648, 7, 7 }, g32)
    local _, _, gu = run1("uint8", { 255, 0 }, "uint8", 2, function(k, o, a, n) k:abs(o, a, n) end)
    assert.same({ 255, 0 }, gu)
  end)

  it("works in place", function()
    local _, _, got = run1("fp32", { -3, 4 }, "fp32", 2, function(k, o, a, n)
      k:abs(a, a, n); k:data_copy(o, a, n)
    end)
    assert.same({ 3, 4 }, got)
  end)
end)

describe("reduce_max", function()
  it("writes the max of n elements into dst[0] only", function()
    local _, _, got = run1("fp32", { -5, 3.25, -0.0, 2 }, "fp32", 2,
                           function(k, o, a, n) k:duplicate(o, 9, 2); k:reduce_max(o, a, n) end)
    assert.same({ 3.25, 9 }, got)
  end)

  it("follows the vector max: a NaN wins, +0 beats -0, integers and 16-bit floats", function()
    local _, _, g = run1("fp32", { 1, 0 / 0, 2 }, "fp32", 1,
                         function(k, o, a, n) k:reduce_max(o, a, n) end)
    assert.is_true(g[1] ~= g[1])
    _, _, g = run1("bf16", { -0.0, 0.0, -1 }, "bf16", 1, function(k, o, a, n) k:reduce_max(o, a, n) end)
    assert.equal("0", (tostring(g[1]):gsub("%.0$", "")))
    _, _, g = run1("int16", { -300, -2, -9 }, "int16", 1, function(k, o, a, n) k:reduce_max(o, a, n) end)
    assert.same({ -2 }, g)
    _, _, g = run1("uint8", { 3, 250, 9 }, "uint8", 1, function(k, o, a, n) k:reduce_max(o, a, n) end)
    assert.same({ 250 }, g)
  end)

  it("needs one element of dst, and all n of src in bounds", function()
    local m = lab.machine{ pes = 1 }
    m:launch(function(k)                         -- dst a one-element window: fine
      local a, d = k:ub("fp32", 8), k:ub("fp32", 8)
      k:duplicate(a, 1, 8)
      k:reduce_max(d:sub(7, 1), a, 8)
    end, 1)
    local ok, err = pcall(m.launch, m, function(k)
      local a, d = k:ub("fp32", 8), k:ub("fp32", 8)
      k:reduce_max(d, a, 9)
    end, 1)
    assert.is_false(ok)
    assert.matches("out of bounds: read vector op of 36 bytes", err, 1, true)
  end)
end)

describe("cast with round 'rint'", function()
  local x = { 0.5, 1.5, 2.5, -0.5, -1.5, 126.6, 300, -300, 0 / 0, math.huge, -2.5 }

  it("rounds to nearest even and saturates to the int8 range, NaN -> 0", function()
    local _, _, got = run1("fp32", x, "int8", #x, function(k, o, a, n) k:cast(o, a, n, "rint") end)
    assert.same({ 0, 2, 2, 0, -2, 127, 127, -128, 0, 127, -2 }, got)
  end)

  it("saturates to each integer type's range, from fp16 and bf16 too", function()
    local _, _, g = run1("fp16", { 40000, -40000, 2.5 }, "int16", 3,
                         function(k, o, a, n) k:cast(o, a, n, "rint") end)
    assert.same({ 32767, -32768, 2 }, g)
    _, _, g = run1("bf16", { 300, -1, 3.5 }, "uint8", 3, function(k, o, a, n) k:cast(o, a, n, "rint") end)
    assert.same({ 255, 0, 4 }, g)
  end)

  it("leaves the default cast as it was: truncation toward zero", function()
    local _, _, got = run1("fp32", { 2.5, -1.5, 1.9 }, "int8", 3,
                           function(k, o, a, n) k:cast(o, a, n) end)
    assert.same({ 2, -1, 1 }, got)
  end)

  it("names a bad round mode in Lua's style", function()
    local ok, err = pcall(run1, "fp32", { 1 }, "int8", 1, function(k, o, a, n) k:cast(o, a, n, "up") end)
    assert.is_false(ok)
    assert.matches("bad argument #4 to 'cast' (invalid option 'up')", err, 1, true)
  end)
end)

describe("the new vector ops' timing and errors", function()
  it("cost vec_setup_ns + max(bytes read, written) / (vec_bytes_per_cycle x core_ghz)", function()
    local n = 4096
    local function t(op, s, d) return (vec_time(op, s, d, n)) end
    local ref = t(function(k, d, a, c) k:muls(d, a, 1, c) end, "fp32", "fp32")
    assert.equal(ref, t(function(k, d, a, c) k:abs(d, a, c) end, "fp32", "fp32"))
    assert.equal(ref, t(function(k, d, a, c) k:reduce_max(d, a, c) end, "fp32", "fp32"))
    assert.equal(ref, t(function(k, d, a, c) k:cast(d, a, c, "rint") end, "fp32", "int8"))
    assert.equal(ref, t(function(k, d, a, c) k:cast(d, a, c) end, "fp32", "int8"))
    local half = t(function(k, d, a, c) k:abs(d, a, c) end, "bf16", "bf16")
    assert.is_true(half < ref)                        -- half the bytes
    local m = lab.machine{ pes = 1 }
    local p = m:params()
    local c0, c1
    m:launch(function(k)
      local a, d = k:ub("fp32", n), k:ub("fp32", 1)
      k:duplicate(a, 1, n)
      k:pipe_barrier("V")
      c0 = k:system_cycle()
      k:reduce_max(d, a, n)
      k:pipe_barrier("V")
      c1 = k:system_cycle()
    end, 1)
    local ns = p.vec_setup_ns + n * 4 / (p.vec_bytes_per_cycle * p.core_ghz)
    assert.is_true((c1 - c0) / p.cycle2us * 1000 >= ns - 1)  -- a one-element dst: still n reads
  end)

  it("reject a dtype mismatch and a count <= 0 in Lua's style", function()
    local calls = { abs = function(k, d, a, n) k:abs(d, a, n) end,
                    reduce_max = function(k, d, a, n) k:reduce_max(d, a, n) end }
    for name, call in pairs(calls) do
      local m = lab.machine{ pes = 1 }
      local ok, err = pcall(m.launch, m, function(k)
        local a, d = k:ub("fp32", 8), k:ub("int8", 32)
        call(k, d, a, 8)
      end, 1)
      assert.is_false(ok)
      assert.matches("bad argument #2 to '" .. name .. "' (dtype mismatch)", err, 1, true)
      ok, err = pcall(m.launch, m, function(k)
        local a, d = k:ub("fp32", 8), k:ub("fp32", 8)
        call(k, d, a, 0)
      end, 1)
      assert.is_false(ok)
      assert.matches("bad argument #3 to '" .. name .. "' (count must be positive)", err, 1, true)
    end
  end)

  it("are clean under initcheck and racecheck when synchronised", function()
    local m = run1("fp32", { 1, -2, 3, -4 }, "fp32", 1, function(k, o, a, n)
      local t = k:ub("fp32", n)
      k:abs(t, a, n)
      k:pipe_barrier("V")
      k:reduce_max(o, t, n)
    end, { check = "all" })
    assert.same({}, m:check_reports())
  end)
end)

describe("view:reinterpret", function()
  it("shows the same bytes as another dtype, whole elements of it", function()
    local m = lab.machine{ pes = 1 }
    local h = m:host("int8", 10):fill("zero")
    local f = h:sub(4, 6):reinterpret("fp32")
    assert.same({ "fp32", 1 }, { f.dtype, #f })
    f:fill({ 1.0 })
    assert.same({ 0, 0, 0x80, 0x3f }, { h:read(4), h:read(5), h:read(6) & 0xff, h:read(7) })
    local ok, err = pcall(function() return h:sub(2, 4):reinterpret("fp32") end)
    assert.is_false(ok)
    assert.matches("does not start on a whole element", err, 1, true)
  end)
end)

describe("view:quant_int8 (host reference of one token)", function()
  -- the Lua mirror of the definition: inv = fp32(127 / absmax), q = rint(x * inv)
  local function model(x)
    local amax = 0
    for _, v in ipairs(x) do amax = math.max(amax, math.abs(v)) end
    local inv = f32(127 / amax)
    local q = {}
    for i, v in ipairs(x) do
      local p = f32(v * inv)
      local r = math.floor(p + 0.5)
      if r - p == 0.5 and r % 2 == 1 then r = r - 1 end        -- ties to even
      q[i] = math.max(-127, math.min(127, r))
    end
    return q, f32(1 / inv)
  end

  it("matches the definition bit for bit and dequantises within half a step", function()
    local m = lab.machine{ pes = 1 }
    local x = m:host("bf16", 64):fill("random", -128, 128, 5)
    x:sub(3, 1):fill({ 0.375 }); x:sub(4, 1):fill({ -91.5 })
    local q, s = m:host("int8", 64), m:host("fp32", 1)
    q:quant_int8(x, s)
    local vals = {}
    for i = 0, 63 do vals[i + 1] = x:read(i) end
    local wq, ws = model(vals)
    local got = {}
    for i = 0, 63 do got[i + 1] = q:read(i) end
    assert.same(wq, got)
    assert.equal(ws, s:read(0))
    for i, v in ipairs(vals) do     -- half a step + fp32 roundings (< 2^-15 of a step)
      assert.is_true(math.abs(got[i] * ws - v) <= (0.5 + 2 ^ -15) * ws)
    end
  end)

  it("gives q = 0 and scale 0 for an all-zero token, and checks its arguments", function()
    local m = lab.machine{ pes = 1 }
    local x = m:host("fp32", 8):fill("zero")
    local q, s = m:host("int8", 8):fill("const", 5), m:host("fp32", 1)
    q:quant_int8(x, s)
    assert.same({ 0, 0 }, { q:read(0), s:read(0) })
    assert.has_error(function() q:quant_int8(m:host("int32", 8), s) end,
                     "bad argument #1 to 'quant_int8' (fp16, bf16 or fp32 view expected)")
    assert.has_error(function() m:host("int16", 8):quant_int8(x, s) end,
                     "calling 'quant_int8' on bad self (int8 view expected)")
    assert.has_error(function() q:quant_int8(m:host("fp32", 9), s) end,
                     "bad argument #1 to 'quant_int8' (size mismatch)")
  end)
end)
