-- Issue 13's calls in checked runs: a kernel that uses the p2p_sync family,
-- p / g, the atomics and a team barrier correctly is clean in every mode on
-- 2 and 8 PEs; an access past a buffer is reported (and skipped), a g of
-- bytes never written is an initcheck report.

local H = require("spec.helpers.engine")
local lab = H.lab

-- every PE counts itself into PE 0 (fetch_add), PE 0 waits for them all and
-- raises a flag everywhere; each PE then reads PE 0's counter with g after a
-- team barrier of the odd PEs (or the world)
local function kernel(k, a)
  local old = k:atomic_fetch_add(a.ctr, 1, 0)
  k:p(a.slots:sub(k.pe, 1), old + 1, 0)
  if k.pe == 0 then
    k:wait_until_all(a.slots, k.n_pes, nil, lab.CMP_GT, 0)
    for p = 0, k.n_pes - 1 do k:signal_op(a.flag, 1, lab.SIGNAL_SET, p) end
  end
  k:int32_wait_until(a.flag, lab.CMP_EQ, 1)
  local t = k:team_my_pe(a.odd) >= 0 and a.odd or lab.TEAM_WORLD
  if t == a.odd then k:barrier(t) end
  a.seen[k.pe] = { k:g(a.ctr, 0), k:test_any(a.slots, k.n_pes, nil, lab.CMP_EQ, k.n_pes) }
end

describe("issue 13 calls in checked runs", function()
  for _, pes in ipairs({ 2, 8 }) do
    for _, mode in ipairs({ "none", "memcheck", "racecheck", "initcheck", "synccheck", "all" }) do
      it(mode .. " on " .. pes .. " PEs: a correct kernel is clean and right", function()
        local m = lab.machine{ soc = "Ascend950", pes = pes, check = mode }
        local a = { ctr = m:malloc("int32", 1, "ctr"):fill("zero"),
                    slots = m:malloc("int32", pes, "slots"):fill("zero"),
                    flag = m:malloc("int32", 1, "flag"):fill("zero"),
                    odd = m:team_split_strided(lab.TEAM_WORLD, 1, 2, pes // 2), seen = {} }
        m:launch(kernel, 1, a)
        if mode ~= "none" then assert.same({}, m:check_reports()) end
        local order = {}
        for p = 0, pes - 1 do
          assert.equals(pes, a.seen[p][1])
          order[#order + 1] = a.slots:on(0):read(p)
        end
        table.sort(order)
        for i = 1, pes do assert.equals(i, order[i]) end   -- every old value once
      end)
    end
  end

  it("memcheck reports (and skips) a p, g, test and atomic past the buffer", function()
    local m = lab.machine{ soc = "Ascend950", pes = 2, check = "memcheck" }
    local x = m:malloc("int32", 2, "x"):fill("zero")
    local r = {}
    m:launch(function(k)
      if k.pe ~= 0 then return end
      k:p(x:sub(2), 1, 1)
      r.g = k:g(x:sub(2), 1)
      r.t = k:test_all(x, 3, nil, lab.CMP_EQ, 0)
      r.f = k:atomic_fetch(x:sub(2), 1)
      k:atomic_add(x:sub(2), 1, 1)
    end, 1)
    local reps = m:check_reports()
    assert.equals(5, #reps)
    for _, rep in ipairs(reps) do assert.equals("out_of_bounds", rep.kind) end
    assert.same({ 0, 0 }, x:on(1):read(0, 2))      -- nothing outside was touched, nor inside
    assert.same({ t = 0 }, r)
  end)

  it("initcheck reports a g of bytes never written", function()
    local m = lab.machine{ pes = 2, check = "initcheck" }
    local x = m:malloc("int32", 1, "x")
    m:launch(function(k) if k.pe == 0 then k:g(x, 1) end end, 1)
    local reps = m:check_reports()
    assert.equals(1, #reps)
    assert.equals("uninitialized_read", reps[1].kind)
  end)
end)

describe("issue 13 calls in a timing-only machine", function()
  it("sets and atomics need backed buffers; p and g of unbacked bytes move no data", function()
    local m = lab.machine{ soc = "Ascend950", pes = 2, data = false }
    local flags = m:malloc("int32", 2, "flags", "backed"):fill("zero")
    local data = m:malloc("int32", 2, "data")
    local got = {}
    m:launch(function(k)
      k:p(data, 5, 1 - k.pe)
      got[k.pe] = k:g(data, 1 - k.pe)
      k:atomic_add(flags:sub(k.pe, 1), 1, 0)
      if k.pe == 0 then k:wait_until_all(flags, 2, nil, lab.CMP_EQ, 1) end
      k:atomic_fetch_add(flags, 1, 1)
    end, 1)
    assert.same({ [0] = 0, [1] = 0 }, got)
    local e = H.err(m.launch, m, function(k) k:test_any(data, 2, nil, lab.CMP_EQ, 0) end, 1)
    H.contains(e, "test_any: buffer 'data' holds no data in a timing-only run")
    e = H.err(m.launch, m, function(k) k:atomic_fetch(data, 0) end, 1)
    H.contains(e, "atomic_fetch: buffer 'data' holds no data in a timing-only run")
  end)
end)
