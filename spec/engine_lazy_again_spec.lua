-- A put that stages through the same UB range again and again (the small put
-- of a loop) replaces its block's staging record in place (mte.c lazy_again)
-- instead of dropping it and making a new one. These pin what the UB and the
-- destinations hold when the sources alternate between buffers and are
-- written after the puts: the record follows the last source only.

local H = require("spec.helpers.engine")
local lab = H.lab

-- a machine of 2 PEs and its buffers of 8 int32: sources a (0..7) and b (5s),
-- destinations da and db, and other (-3s) to overwrite a source with
local function two_sources()
  local m, n = lab.machine{ pes = 2 }, 8
  return m, n, m:malloc("int32", n, "a"):fill("iota"), m:malloc("int32", n, "b"):fill("const", 5),
         m:malloc("int32", n, "da"), m:malloc("int32", n, "db"),
         m:alloc("int32", n, "other"):fill("const", -3)
end

describe("a staging record replaced in place", function()
  it("follows the last source: the UB holds its bytes, an earlier source's writes do not reach it", function()
    local m, n, a, b, da, db, other = two_sources()
    local seen
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local ub = k:ub("int32", n)
      local tmp = k:ub("int32", n)
      for _ = 1, 3 do
        k:mte_put_nbi(da, a, ub, n * 4, n, 1, 0)
        k:quiet()                              -- (else the next staging may overtake it)
        k:mte_put_nbi(db, b, ub, n * 4, n, 1, 0)
        k:quiet()
      end
      H.overwrite(k, a, tmp, other, n)         -- overwrite the first source
      seen = H.ub_values(k, ub, n)
    end, 1)
    assert.same({ 5, 5, 5, 5, 5, 5, 5, 5 }, seen)
    assert.same({ 0, 1, 2, 3, 4, 5, 6, 7 }, da:on(1):read(0, n))
    assert.same({ 5, 5, 5, 5, 5, 5, 5, 5 }, db:on(1):read(0, n))
  end)

  it("turns into bytes when its source is written after the puts", function()
    local m, n, a, b, da, _, other = two_sources()
    local seen
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local ub = k:ub("int32", n)
      local tmp = k:ub("int32", n)
      k:mte_put_nbi(da, b, ub, n * 4, n, 1, 0)
      k:quiet()
      k:mte_put_nbi(da, a, ub, n * 4, n, 1, 0)
      k:quiet()
      H.overwrite(k, a, tmp, other, n)         -- overwrite the last source
      seen = H.ub_values(k, ub, n)
    end, 1)
    assert.same({ 0, 1, 2, 3, 4, 5, 6, 7 }, seen)
    assert.same({ 0, 1, 2, 3, 4, 5, 6, 7 }, da:on(1):read(0, n))
    assert.same({ -3, -3 }, a:on(0):read(0, 2))
  end)

  -- the puts of the first test, their sources as they were (the UB, da, db)
  local function alternate(k, a, b, da, db, n)
    local ub = k:ub("int32", n)
    for _ = 1, 3 do
      k:mte_put_nbi(da, a, ub, n * 4, n, 1, 0)
      k:quiet()
      k:mte_put_nbi(db, b, ub, n * 4, n, 1, 0)
      k:quiet()
    end
    return ub
  end

  it("is the same under check = 'all' and after a launch that failed with records held", function()
    local m = lab.machine{ pes = 2, check = "all" }
    local n = 8
    local a = m:malloc("int32", n, "a"):fill("iota")
    local b = m:malloc("int32", n, "b"):fill("const", 5)
    local da = m:malloc("int32", n, "da")
    local db = m:malloc("int32", n, "db")
    local ok, err = pcall(m.launch, m, function(k)
      if k.pe ~= 0 then return end
      alternate(k, a, b, da, db, n)
      error("boom")                            -- records held: the launch is abandoned
    end, 1)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("boom", 1, true))
    a:fill("const", 9)                         -- the host writes a source between launches
    local seen
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local ub = alternate(k, b, a, db, da, n)   -- the last source is now a
      k:pipe_barrier()
      seen = H.ub_values(k, ub, n)
    end, 1)
    assert.same({ 9, 9, 9, 9, 9, 9, 9, 9 }, seen)
    assert.same({ 9, 9, 9, 9, 9, 9, 9, 9 }, da:on(1):read(0, n))
    assert.same({ 5, 5, 5, 5, 5, 5, 5, 5 }, db:on(1):read(0, n))
  end)

  it("follows a put of several chunks: each chunk's record takes the last one's place", function()
    local m = lab.machine{ pes = 2 }
    local n = 8
    local a = m:malloc("int32", n, "a"):fill("iota")
    local da = m:malloc("int32", n, "da")
    local seen
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local ub = k:ub("int32", 3)
      k:mte_put_nbi(da, a, ub, 12, n, 1, 0)  -- chunks of 3, 3, 2 elements
      k:quiet()
      k:pipe_barrier()
      seen = H.ub_values(k, ub, 3)
    end, 1)
    assert.same({ 6, 7, 5 }, seen)           -- the last chunk, then the one before's tail
    assert.same({ 0, 1, 2, 3, 4, 5, 6, 7 }, da:on(1):read(0, n))
  end)
end)
