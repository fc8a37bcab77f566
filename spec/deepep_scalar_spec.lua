-- The scalar passes (core/lshmemlab_scalar.c) the DeepEP ports make their
-- GetValue / SetValue loops with: each leaves the UB and the block's clock as
-- the same accesses made one k:get_value / k:set_value at a time, and with
-- pipe work pending it does nothing and returns false (the Lua loop runs).

local lab = require("shmemlab")

-- run kernel(k, a, lua) on one block of a one-PE machine, the UB it fills
-- copied to out; the output and the kernel time
local function run(kernel, lua, n)
  local m = lab.machine{ pes = 1 }
  local out = m:alloc("int32", n, "out"):fill("zero")
  local r = m:launch({ name = "scalar", kernel = function(k, a)
    local ub = kernel(k, a, lua)
    k:pipe_barrier("ALL")
    k:data_copy(a.out, ub, n)
    k:pipe_barrier("ALL")
  end }, 1, { out = out })
  local got = {}
  for i = 0, n - 1 do got[i + 1] = out:read(i) end
  m:close()
  return got, r.kernel_us[1]
end

-- a UB tensor of int32 filled with values by scalar writes, then V idle
local function filled(k, values)
  local u = k:ub("int32", #values, "backed")
  for i, v in ipairs(values) do k:set_value(u, i - 1, v) end
  return u
end

local SRC = { 3, 1, 7, 3, -1, 3, 0, 9, 1, 1, 5, 2, 6, 7, 7, 4 }

describe("scalar passes", function()
  it("scalar_histogram numbers each bin's rows as the Lua loop, in the same time", function()
    local function kernel(k, _, lua)
      local src, cnt, idx = filled(k, SRC), k:ub("int32", 8, "backed"), k:ub("int32", 16, "backed")
      k:duplicate(cnt, 0, 8); k:duplicate(idx, 0, 16)
      k:pipe_barrier("V")
      if lua then
        for i = 0, 15 do
          local e = k:get_value(src, i)
          if e >= 0 and e < 8 then
            local v = k:get_value(cnt, e)
            k:set_value(idx, i, v); k:set_value(cnt, e, v + 1)
          end
        end
      else
        assert.is_true(k:scalar_histogram(src, 0, 16, 0, 8, cnt, idx))
      end
      return idx
    end
    local want, t_want = run(kernel, true, 16)
    local got, t_got = run(kernel, false, 16)
    assert.are.same(want, got)
    assert.are.same({ 0, 0, 0, 1, 0, 2, 0, 0, 1, 2, 0, 0, 0, 1, 2, 0 }, got)
    assert.are.equal(t_want, t_got)
  end)

  it("scalar_transpose with its prefix sum, and scalar_row_sums, as the Lua loops", function()
    local function kernel(k, _, lua)
      local src, dst = filled(k, SRC), k:ub("int32", 8, "backed")
      local sums = k:ub("int32", 8, "backed")
      k:pipe_barrier("V")
      local total = 0
      if lua then                                     -- rows 4, cols 2 of ld 4, from 1
        for c = 0, 1 do
          for r = 0, 3 do
            local v = k:get_value(src, 1 + r * 4 + c)
            k:set_value(dst, c * 4 + r, total); total = total + v
          end
        end
        for r = 0, 3 do
          local s = 0
          for c = 0, 1 do s = s + k:get_value(dst, r * 2 + c) end
          k:set_value(sums, 2 * r, s); k:set_value(sums, 2 * r + 1, 0)
        end
      else
        local ok
        ok, total = k:scalar_transpose(dst, src:sub(1, 15), 4, 2, 4, true)
        assert.is_true(ok)
        assert.is_true(k:scalar_row_sums(sums, dst, 4, 2, 2))
      end
      assert.are.equal(31, total)
      return sums
    end
    local want, t_want = run(kernel, true, 8)
    local got, t_got = run(kernel, false, 8)
    assert.are.same(want, got)
    assert.are.equal(t_want, t_got)
  end)

  it("scalar_topk_count and scalar_pair_scan as the Lua loops", function()
    local function kernel(k, _, lua)
      local tk = filled(k, { 5, 1, 4, -1, 7, 9, 0, 6 })
      local pe, seen, pr = k:ub("int32", 8, "backed"), k:ub("int32", 4, "backed"),
                           k:ub("int32", 4, "backed")
      local mk = k:ub("int32", 8, "backed")
      for _, u in ipairs({ pe, seen, pr, mk }) do k:duplicate(u, 0, #u) end
      k:pipe_barrier("V")
      local sum = 0
      if lua then
        for j = 0, 7 do
          local e = k:get_value(tk, j)
          if e >= 0 and e < 8 then
            k:set_value(pe, e, k:get_value(pe, e) + 1)
            local r = e // 2
            if k:get_value(seen, r) == 0 then
              local c = k:get_value(pr, r)
              k:set_value(mk, 4 + r, 1); k:set_value(seen, r, 1); k:set_value(pr, r, c + 1)
            end
          end
        end
        for j = 0, 3 do                              -- pairs at 0, 2, 4, 6 of tk
          local a = k:get_value(tk, 2 * j)
          if a ~= -1 then sum = sum + k:get_value(tk, 2 * j + 1) - a + 1 end
        end
      else
        assert.is_true(k:scalar_topk_count(tk, 0, 8, 8, 2, pe, seen, pr, mk, 4))
        local ok
        ok, sum = k:scalar_pair_scan(tk, 0, 4, 2, -1)
        assert.is_true(ok)
      end
      assert.are.equal(3, sum)
      return mk
    end
    local want, t_want = run(kernel, true, 8)
    local got, t_got = run(kernel, false, 8)
    assert.are.same(want, got)
    assert.are.same({ 0, 0, 0, 0, 1, 0, 1, 1 }, got)
    assert.are.equal(t_want, t_got)
  end)

  it("does nothing and returns false while the block's pipe work is pending", function()
    local m = lab.machine{ pes = 1 }
    local g = m:alloc("int32", 4096, "g"):fill("iota")
    local seen
    m:launch({ name = "pending", kernel = function(k, a)
      local src, cnt, idx = k:ub("int32", 4096, "backed"), k:ub("int32", 8, "backed"),
                            k:ub("int32", 8, "backed")
      k:pipe_barrier("ALL")
      k:data_copy(src, a.g, 4096)                   -- MTE2 in flight
      seen = k:scalar_histogram(src, 0, 8, 0, 8, cnt, idx)
      k:pipe_barrier("ALL")
    end }, 1, { g = g })
    m:close()
    assert.is_false(seen)
  end)

  it("refuses a GM tensor, a float one and an index past any UB in Lua's style", function()
    local m = lab.machine{ pes = 1 }
    local g = m:alloc("int32", 8, "g")
    local ok, err = pcall(m.launch, m, { name = "bad", kernel = function(k, a)
      local u = k:ub("int32", 8, "backed")
      k:scalar_histogram(a.g, 0, 8, 0, 8, u, u)
    end }, 1, { g = g })
    assert.is_false(ok)
    assert.matches("UB tensor expected, got GM", tostring(err))
    ok, err = pcall(m.launch, m, { name = "bad", kernel = function(k)
      local u, f = k:ub("int32", 8, "backed"), k:ub("fp32", 8, "backed")
      k:scalar_histogram(u, 0, 8, 0, 8, f, u)
    end }, 1, {})
    assert.is_false(ok)
    assert.matches("integer UB tensor expected", tostring(err))
    ok, err = pcall(m.launch, m, { name = "bad", kernel = function(k)
      local u = k:ub("int32", 8, "backed")
      k:scalar_transpose(u, u, 1 << 40, 1 << 40, 1 << 40)
    end }, 1, {})
    assert.is_false(ok)
    assert.matches("bad argument #3 to 'scalar_transpose' %(out of range%)", tostring(err))
    m:close()
  end)
end)
