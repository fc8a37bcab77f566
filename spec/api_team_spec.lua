-- Teams (include/host/team/shmem_host_team.h, include/device/team/
-- shmem_device_team.h) and their barrier and sync (shmem_device_cc.h):
-- split_strided, split_2d, destroy on the host; team_my_pe, team_n_pes,
-- team_translate_pe, team_pe_mapping on both sides; teams of odd size.

local H = require("spec.helpers.engine")
local lab = H.lab

-- every PE's {team_my_pe, team_n_pes} of team t, host side
local function host_view(m, t)
  local out = {}
  for pe = 0, m:params().pes - 1 do out[pe + 1] = { m:team_my_pe(t, pe), m:team_n_pes(t, pe) } end
  return out
end

-- the same, seen by the kernels
local function device_view(m, t)
  local out = {}
  m:launch(function(k) out[k.pe + 1] = { k:team_my_pe(t), k:team_n_pes(t) } end, 1)
  return out
end

describe("teams", function()
  it("TEAM_WORLD is every PE; TEAM_INVALID is -1 everywhere", function()
    local m = lab.machine{ pes = 2 }
    assert.equals(0, lab.TEAM_WORLD)
    assert.equals(-1, lab.TEAM_INVALID)
    assert.same({ { 0, 2 }, { 1, 2 } }, device_view(m, lab.TEAM_WORLD))
    assert.same({ { -1, -1 }, { -1, -1 } }, device_view(m, lab.TEAM_INVALID))
  end)

  it("split_strided(WORLD, 1, 2, 3) on 8 PEs is PEs 1, 3, 5 (the library's example)", function()
    local m = lab.machine{ pes = 8 }
    local t = m:team_split_strided(lab.TEAM_WORLD, 1, 2, 3)
    local want = { { -1, -1 }, { 0, 3 }, { -1, -1 }, { 1, 3 }, { -1, -1 }, { 2, 3 },
                   { -1, -1 }, { -1, -1 } }
    assert.same(want, host_view(m, t))
    assert.same(want, device_view(m, t))
  end)

  it("split_2d(WORLD, 3) on 8 PEs: rows of 3 (the last of 2), columns of 3, 3 and 2", function()
    local m = lab.machine{ pes = 8 }
    local x, y = m:team_split_2d(lab.TEAM_WORLD, 3)
    assert.same({ { 0, 3 }, { 1, 3 }, { 2, 3 }, { 0, 3 }, { 1, 3 }, { 2, 3 }, { 0, 2 }, { 1, 2 } },
                device_view(m, x))
    assert.same({ { 0, 3 }, { 0, 3 }, { 0, 2 }, { 1, 3 }, { 1, 3 }, { 1, 2 }, { 2, 3 }, { 2, 3 } },
                device_view(m, y))
    local x2, y2 = m:team_split_2d(lab.TEAM_WORLD, 20)   -- x_range beyond the team: all of it
    assert.same({ 0, 8 }, host_view(m, x2)[1])
    assert.same({ 0, 1 }, host_view(m, y2)[1])
  end)

  it("translate_pe and pe_mapping go between a PE's own groups", function()
    local m = lab.machine{ pes = 8 }
    local x, y = m:team_split_2d(lab.TEAM_WORLD, 4)       -- rows {0..3} {4..7}, columns {0,4} ...
    local odd = m:team_split_strided(lab.TEAM_WORLD, 1, 2, 4)
    local r = {}
    m:launch(function(k)
      r[k.pe + 1] = { k:team_translate_pe(x, 1, lab.TEAM_WORLD),  -- global PE of my row's 1
                      k:team_translate_pe(lab.TEAM_WORLD, 5, x),  -- 5 in my row?
                      k:team_translate_pe(x, 0, y),               -- my row's first, in my column?
                      k:team_pe_mapping(odd, 3), k:team_translate_pe(odd, 9, lab.TEAM_WORLD) }
    end, 1)
    assert.same({ 1, -1, 0, -1, -1 }, r[1])
    assert.same({ 5, 1, -1, 7, -1 }, r[6])
    assert.same({ 5, 1, 1, -1, -1 }, r[5])   -- PE 4: its row's first is itself, number 1 of {0, 4}
    assert.equals(5, m:team_translate_pe(x, 1, lab.TEAM_WORLD, 6))
  end)

  it("a split of a split is a split of each of its groups", function()
    local m = lab.machine{ pes = 8 }
    local odd = m:team_split_strided(lab.TEAM_WORLD, 1, 2, 4)   -- 1 3 5 7
    local t = m:team_split_strided(odd, 1, 2, 2)                 -- 3 7
    assert.same({ { -1, -1 }, { -1, -1 }, { -1, -1 }, { 0, 2 }, { -1, -1 }, { -1, -1 },
                  { -1, -1 }, { 1, 2 } }, host_view(m, t))
    local x = m:team_split_2d(lab.TEAM_WORLD, 4)                 -- {0..3} {4..7}
    local ends = m:team_split_strided(x, 3, 1, 1)                -- 3 and 7, each alone
    assert.same({ 0, 1 }, host_view(m, ends)[4])
    assert.same({ 0, 1 }, host_view(m, ends)[8])
    assert.same({ -1, -1 }, host_view(m, ends)[1])
  end)

  it("destroy frees the handle for the next split; bad splits are refused", function()
    local m = lab.machine{ pes = 8 }
    local t = m:team_split_strided(lab.TEAM_WORLD, 0, 1, 2)
    m:team_destroy(t)
    assert.same({ -1, -1 }, host_view(m, t)[1])
    m:team_destroy(t)                                    -- a destroyed team: nothing
    m:team_destroy(lab.TEAM_INVALID)                     -- as the library: nothing
    assert.equals(t, m:team_split_strided(lab.TEAM_WORLD, 2, 1, 2))
    H.contains(H.err(function() m:team_destroy(lab.TEAM_WORLD) end),
               "bad argument #1 to 'team_destroy' (TEAM_WORLD cannot be destroyed)")
    H.contains(H.err(function() m:team_split_strided(lab.TEAM_WORLD, 1, 2, 5) end),
               "bad argument #4 to 'team_split_strided' (PE 9 of the new team is not in the "
               .. "parent team (8 PEs))")
    H.contains(H.err(function() m:team_split_strided(lab.TEAM_WORLD, 0, 0, 2) end),
               "bad argument #3 to 'team_split_strided' (stride must be positive, got 0)")
    H.contains(H.err(function() m:team_split_strided(77, 0, 1, 2) end),
               "bad argument #1 to 'team_split_strided' (not a team (77))")
    H.contains(H.err(function() m:team_split_2d(lab.TEAM_WORLD, 0) end),
               "bad argument #2 to 'team_split_2d' (x_range must be positive, got 0)")
  end)

  describe("barrier(team) and sync(team)", function()
    for _, pes in ipairs({ 2, 8 }) do
      it("a barrier of a team of odd size holds only its members (" .. pes .. " PEs)", function()
        local m = lab.machine{ soc = "Ascend950", pes = pes }
        local size = pes == 2 and 1 or 3
        local t = m:team_split_strided(lab.TEAM_WORLD, 1, 2, size)   -- 1 (3 5)
        local last = 1 + 2 * (size - 1)
        local c = {}
        m:launch(function(k)
          if k:team_my_pe(t) < 0 then c[k.pe] = k:system_cycle(); return end
          if k.pe == last then for _ = 1, 100 do k:system_cycle() end end
          c[k.pe] = k:system_cycle()
          k:barrier(t)
          c[k.pe + 100] = k:system_cycle()
        end, 2)
        local p = m:params()
        local stages = size == 1 and 0 or 2                           -- ceil(log2 3)
        local alpha = pes == 8 and p.rdma_alpha_ns or p.hccs_alpha_ns   -- 4 PEs per server
        local want = (p.barrier_base_ns + stages * 2 * alpha + p.scalar_ns)
                     / 1000 * p.cycle2us
        for r = 0, size - 1 do
          assert.near(want, c[1 + 2 * r + 100] - c[last], 1)
        end
        assert.is_true(c[0] < c[last])                                -- PE 0 did not wait
      end)

      it("barrier orders a put before the peer's read; racecheck and all checks (" .. pes
         .. " PEs)", function()
        local m = lab.machine{ pes = pes, check = "all" }
        local t = m:team_split_strided(lab.TEAM_WORLD, 0, 1, pes)
        local data = m:malloc("int32", 8, "data"):fill("zero")
        local function kernel(k, use_sync)
          local ub = k:ub("int32", 8)
          if k:team_my_pe(t) == 0 then
            k:duplicate(ub, 5, 8)
            k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
            k:mte_put_nbi(data, ub, 8, k:team_translate_pe(t, k:team_n_pes(t) - 1,
                                                           lab.TEAM_WORLD))
          end
          if use_sync then k:sync(t) else k:barrier(t) end
          if k:team_my_pe(t) == k:team_n_pes(t) - 1 then
            k:data_copy(ub, data, 8)
            k:pipe_barrier()
          end
        end
        m:launch(kernel, 1, false)
        assert.same({}, m:check_reports())
        assert.same({ 5 }, data:on(pes - 1):read(0, 1))
        m:launch(kernel, 1, true)                 -- sync leaves the put in flight: a race
        local reps = m:check_reports()
        assert.is_true(#reps > 0)
        assert.equals("race", reps[1].kind)
      end)
    end

    it("refuses a PE outside the team; a member that never comes is a deadlock", function()
      local m = lab.machine{ pes = 4 }
      local t = m:team_split_strided(lab.TEAM_WORLD, 0, 1, 3)
      local e = H.err(m.launch, m, function(k) k:barrier(t) end, 1)
      H.contains(e, "bad argument #1 to 'barrier' (PE 3 is not a member of team " .. t .. ")")
      e = H.err(m.launch, m, function(k) if k.pe < 2 then k:sync(t) end end, 1)
      H.contains(e, "deadlock", "sync(team " .. t .. ") (2 of 3 blocks of its 3 PEs arrived)")
    end)
  end)
end)
