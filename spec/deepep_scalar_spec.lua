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

-- SRC numbered per bin (8 bins) into a UB: by the Lua loop of get_value /
-- set_value (lua) or by k:scalar_histogram; the numbers' UB
local function histogram(k, _, lua)
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

describe("scalar passes", function()
  it("scalar_histogram numbers each bin's rows as the Lua loop, in the same time", function()
    local kernel = histogram
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
  -- get_dispatch_layout's count loop on `blocks` blocks of two PEs, the tokens'
  -- ids from GM; how: "lua" (the primitives one call each), "pass" (the loop's
  -- k:scalar_layout_count); pending: an MTE2 copy in flight over the first
  -- counts, which the passes refuse. Returns the per-expert, per-rank
  -- and mark rows of every block, the kernel time, the events and the runaway
  -- counts
  local function layout_run(how, data, blocks, pending, check)
    local n, E, K, tt = 4, 16, 3, 5
    local per = E // n
    local m = lab.machine{ pes = 2, data = data, check = check }
    local ids = {}
    for i = 1, blocks * tt * K do ids[i] = (i * 7 + (i // 5) * 3) % (E + 2) - 1 end
    local topk = m:alloc("int64", #ids, "topk", "backed")
    for p = 0, 1 do topk:on(p):fill(ids) end
    local w = E + n + tt * n
    local out = m:alloc("int32", blocks * w, "out", "backed"):fill("zero")
    local big = m:alloc("int32", 4096, "big", "backed"):fill("zero")
    local r = m:launch({ name = "count", kernel = function(k, a)
      local u = { topk = k:ub("int64", tt * K, "backed"), pe = k:ub("int32", E, "backed"),
                  seen = k:ub("int32", n, "backed"), pr = k:ub("int32", n, "backed"),
                  mk = k:ub("int32", tt * n, "backed"), big = k:ub("int32", 4096, "backed") }
      k:data_copy_pad(u.topk, a.topk:sub(k.block * tt * K, tt * K), tt * K)
      k:sync_func("MTE2_S", 0)
      k:duplicate(u.pe, 0, E); k:duplicate(u.pr, 0, n); k:duplicate(u.mk, 0, tt * n)
      k:sync_func("V_S", 0)
      if pending then k:data_copy(u.big, a.big, 4096) end
      local function token(i)
        for j = 0, K - 1 do
          local e = k:get_value(u.topk, i * K + j)
          if e >= 0 and e < E then
            k:set_value(u.pe, e, k:get_value(u.pe, e) + 1)
            local rr = e // per
            if k:get_value(u.seen, rr) == 0 then
              local c = k:get_value(u.pr, rr)
              k:set_value(u.mk, i * n + rr, 1); k:set_value(u.seen, rr, 1)
              k:set_value(u.pr, rr, c + 1)
            end
          end
        end
      end
      if how == "lua" then                           -- deepep.lua's loop before the pass
        for i = 0, tt - 1 do
          k:sync_func("S_V", 0); k:duplicate(u.seen, 0, n); k:sync_func("V_S", 0)
          if not k:scalar_topk_count(u.topk, i * K, K, E, per, u.pe, u.seen, u.pr, u.mk,
                                     i * n) then
            token(i)
          end
        end
      else
        local i, refused = 0, 0
        while i < tt do
          i = k:scalar_layout_count(u.topk, i, tt, K, E, per, u.pe, u.seen, u.pr, u.mk, n)
          assert.are.equal(check == nil, i ~= nil)    -- a checked run: none made
          if i == nil then return end
          if i < tt then token(i); i = i + 1; refused = refused + 1 end
        end
        assert.are.equal(pending, refused > 0)
      end
      k:sync_func("S_MTE3", 0)
      k:data_copy_pad(a.out:sub(k.block * w, E), u.pe, E)
      k:data_copy_pad(a.out:sub(k.block * w + E, n), u.pr, n)
      k:data_copy_pad(a.out:sub(k.block * w + E + n, tt * n), u.mk, tt * n)
      k:pipe_barrier("ALL")
    end }, blocks, { topk = topk, out = out, big = big })
    local got = {}
    for p = 0, 1 do
      for i = 0, blocks * w - 1 do got[#got + 1] = out:on(p):read(i) end
    end
    local rc = m:runaway_counts()
    local ev = m:events()
    m:close()
    return got, r.kernel_us, ev, rc
  end

  it("scalar_layout_count makes the Lua loop's primitives: UB, times, events, guard", function()
    for _, data in ipairs({ true, false }) do
      for _, blocks in ipairs({ 1, 3 }) do
        local want, t_want, ev_want, rc_want = layout_run("lua", data, blocks, false)
        local got, t_got, ev_got, rc_got = layout_run("pass", data, blocks, false)
        assert.are.same(want, got)
        assert.are.same(t_want, t_got)
        assert.are.equal(ev_want, ev_got)
        assert.are.same(rc_want, rc_got)
        local marks = 0
        for _, v in ipairs(got) do marks = marks + v end
        assert.is_true(marks > 0)
      end
    end
  end)

  it("scalar_layout_count makes nothing in a checked run (the calls name their lines)",
     function()
    for _, check in ipairs({ "synccheck", "all" }) do   -- it returns nil there (asserted inside)
      local got = layout_run("pass", true, 1, false, check)
      assert.are.equal(0, #got - #layout_run("lua", true, 1, false, check))
    end
  end)

  it("scalar_layout_count hands a refused token's count back (work pending)", function()
    local want, t_want, ev_want, rc_want = layout_run("lua", true, 2, true)
    local got, t_got, ev_got, rc_got = layout_run("pass", true, 2, true)
    assert.are.same(want, got)
    assert.are.same(t_want, t_got)
    assert.are.equal(ev_want, ev_got)
    assert.are.same(rc_want, rc_got)
  end)

  it("the passes in a timing-only run (backed UB ranges) as the Lua loops", function()
    local kernel = histogram
    local function run_t(lua)
      local m = lab.machine{ pes = 1, data = false }
      local out = m:alloc("int32", 16, "out", "backed"):fill("zero")
      local r = m:launch({ name = "scalar", kernel = function(k, a)
        local ub = kernel(k, a, lua)
        k:pipe_barrier("ALL")
        k:data_copy(a.out, ub, 16)
        k:pipe_barrier("ALL")
      end }, 1, { out = out })
      local got = {}
      for i = 0, 15 do got[i + 1] = out:read(i) end
      m:close()
      return got, r.kernel_us[1]
    end
    local want, t_want = run_t(true)
    local got, t_got = run_t(false)
    assert.are.same({ 0, 0, 0, 1, 0, 2, 0, 0, 1, 2, 0, 0, 0, 1, 2, 0 }, got)
    assert.are.same(want, got)
    assert.are.equal(t_want, t_got)
  end)
end)
