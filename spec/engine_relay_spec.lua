-- A flag relayed through another pipe (issue 9, defect 12): work on pipe A,
-- set_flag(A_B) / wait_flag(A_B), set_flag(B_C) / wait_flag(B_C), then work on
-- pipe C. In-order hardware pipes run B's set_flag(B_C) only after B's
-- wait_flag(A_B) has passed, so C's work follows A's even through an idle B
-- (the engine once fired B_C at B's own, earlier, finish time and the MTE3
-- copy of an MTE2 -> V -> MTE3 relay read stale UB). Every two-hop relay of
-- the 12 AIV events (36 of them: 3 events into each of the 4 pipes, 3 out)
-- must leave the in-order result, in a plain run and under racecheck with no
-- report, and take the time of the direct flag A_C plus what the profile says
-- the extra hop costs; the same program with the first wait left out is a
-- race racecheck reports (none when C is A's own in-order pipe).

local H = require("spec.helpers.engine")
local lab = H.lab

local N = 4096                       -- 16 KiB of int32: a slow copy, so order shows
local PIPES = { "S", "V", "MTE2", "MTE3" }

-- the work of pipe A: writes 7 into UB u (S, V, MTE2) or into GM h (MTE3,
-- reading UB s, which holds 7 from the setup)
local function produce(k, A, b)
  if A == "MTE2" then k:data_copy(b.u, b.g7, N)
  elseif A == "V" then k:duplicate(b.u, 7, N)
  elseif A == "S" then k:set_value(b.u, N - 1, 7)
  else k:data_copy(b.h, b.s, N) end
end

-- the work of pipe C after the relay, touching what A wrote (read after write,
-- or write after write / read); it stores into b.seen what the in-order
-- result is checked on
local function consume(k, C, A, b)
  if A ~= "MTE3" then                 -- A wrote u
    if C == "MTE3" then k:data_copy(b.out, b.u, N)          -- out = u
    elseif C == "V" then k:data_copy(b.v, b.u, N)           -- v = u (UB -> UB)
    elseif C == "S" then b.seen = k:get_value(b.u, N - 1)
    else k:data_copy(b.u, b.g9, N) end                        -- u = 9 after 7
  else                                -- A wrote h from s
    if C == "MTE2" then k:data_copy(b.v, b.h, N)            -- v = h
    elseif C == "V" then k:duplicate(b.s, 9, N)              -- s = 9 after A read it
    elseif C == "S" then k:set_value(b.s, N - 1, 9)
    else k:data_copy(b.h, b.s9, N) end                        -- h = 9 after 7
  end
end

-- what the in-order run leaves at element N - 1 of the checked place
local function expected(C, A)
  if A ~= "MTE3" then return C == "MTE2" and 9 or 7 end
  return C == "MTE3" and 9 or 7
end

-- run A's work, the flags of chain (set then wait each; skip_first leaves the
-- first wait out until the end: a race), C's work; the value checked and the
-- machine, and the kernel's time
local function run(A, chain, C, mode, skip_first)
  local m = lab.machine{ pes = 1, check = mode }
  local g7, g9 = m:alloc("int32", N):fill("const", 7), m:alloc("int32", N):fill("const", 9)
  local out, h = m:alloc("int32", N):fill("const", 0), m:alloc("int32", N):fill("const", 0)
  local res = {}
  local r = m:launch(function(k)
    local b = { g7 = g7, g9 = g9, out = out, h = h }
    b.u, b.v, b.s, b.s9 = k:ub("int32", N), k:ub("int32", N), k:ub("int32", N), k:ub("int32", N)
    k:duplicate(b.u, 0, N); k:duplicate(b.v, 0, N)
    k:duplicate(b.s, 7, N); k:duplicate(b.s9, 9, N)
    k:pipe_barrier("ALL")
    produce(k, A, b)
    for i, e in ipairs(chain) do
      k:set_flag(e)
      if not (skip_first and i == 1) then k:wait_flag(e) end
    end
    consume(k, C, A, b)
    k:pipe_barrier("ALL")
    if skip_first then k:wait_flag(chain[1]) end
    if A ~= "MTE3" then
      if C == "MTE3" then res.v = nil
      elseif C == "V" then res.v = k:get_value(b.v, N - 1)
      elseif C == "S" then res.v = b.seen
      else res.v = k:get_value(b.u, N - 1) end
    elseif C == "MTE2" then res.v = k:get_value(b.v, N - 1)
    end
  end, 1)
  if res.v == nil then
    res.v = (A ~= "MTE3") and out:on(0):read(N - 1) or h:on(0):read(N - 1)
  end
  return res.v, m, r.max_kernel_us
end

-- the relay A -> B -> C
local function relay(A, B, C, mode, skip_first)
  return run(A, { A .. "_" .. B, B .. "_" .. C }, C, mode, skip_first)
end

-- every two-hop relay: f(A, B, C) for each legal pair of events A_B, B_C
local function each_relay(f)
  for _, A in ipairs(PIPES) do
    for _, B in ipairs(PIPES) do
      for _, C in ipairs(PIPES) do
        if A ~= B and B ~= C then f(A, B, C) end
      end
    end
  end
end

describe("a flag relayed through a second pipe orders as in-order pipes do", function()
  local n = 0
  each_relay(function(A, B, C)
    n = n + 1
    local name = A .. "_" .. B .. " then " .. B .. "_" .. C
    it(name .. ": the in-order result, and no racecheck report", function()
      assert.equal(expected(C, A), (relay(A, B, C, "none")))
      local v, m = relay(A, B, C, "racecheck")
      assert.equal(expected(C, A), v)
      assert.same({}, m:check_reports())
    end)
  end)
  it("covers the 36 relays", function() assert.equal(36, n) end)
end)

-- what the relay A -> B -> C costs over the direct flag A_C (no flag when
-- A = C: the pipe's own order), from the profile: every flag primitive is an
-- issue_ns instruction of S, so the two extra ones count when S's clock is on
-- the path (S does A's work, relays, or waits for its own flag to come
-- back); a copy that waits for the same pipe's earlier copy to land, where
-- without the flags it would queue behind it, pays that copy's latency
-- (mte_setup_ns + local_alpha_ns) again
local function extra_us(p, A, B, C)
  local s = (A == "S" and 1 or 0) + (B == "S" and 1 or 0) + ((A == "S" and C == "S") and 1 or 0)
  local us = s * 2 * p.issue_ns / 1000
  if A == C and A ~= "S" and A ~= "V" then us = us + (p.mte_setup_ns + p.local_alpha_ns) / 1000 end
  return us
end

describe("the relay's virtual time follows from the profile", function()
  local p = lab.machine{ pes = 1 }:params()
  each_relay(function(A, B, C)
    it(A .. "_" .. B .. " then " .. B .. "_" .. C, function()
      local _, _, t = relay(A, B, C, "none")
      local _, _, d = run(A, A ~= C and { A .. "_" .. C } or {}, C, "none")
      assert.near(d + extra_us(p, A, B, C), t, 1e-9)
    end)
  end)
end)

describe("racecheck on a broken relay", function()
  -- the same programs with wait_flag(A_B) left out: B sets B_C at once, so C's
  -- work is not ordered after A's; racecheck must report it (the relay may
  -- not hide a real race), except where C is A's own pipe: that pipe runs
  -- its work in order, so there is no race to report (nor a false one)
  each_relay(function(A, B, C)
    local what = A == C and "no report (one pipe, in order)" or "a race"
    it(A .. "_" .. B .. " not waited, then " .. B .. "_" .. C .. ": " .. what, function()
      local _, m = relay(A, B, C, "racecheck", true)
      local kinds = {}
      for _, r in ipairs(m:check_reports()) do kinds[#kinds + 1] = r.kind end
      assert.same(A == C and {} or { "race" }, kinds)
    end)
  end)
end)
