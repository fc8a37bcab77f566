-- The transport engines of CANN SHMEM besides MTE, as include/device/gm2gm/
-- engine/ declares them: SDMA (sdma_put_nbi / sdma_get_nbi / sdma_quiet),
-- RDMA (roce_put_nbi / roce_get_nbi / roce_quiet), UDMA on Ascend950
-- (udma_put_nbi / udma_get_nbi / udma_relay_* / udma_put_signal_nbi /
-- udma_quiet): their data, their timing (no MTE pipe; RDMA through the
-- NICs), their completion and their checked runs, on 2 and 8 PEs.

local H = require("spec.helpers.engine")
local lab = H.lab

local N = 4096                    -- int32: 16 KiB

-- the reports of a checked machine, as "kind" strings
local function kinds(m)
  local out = {}
  for _, r in ipairs(m:check_reports()) do out[#out + 1] = r.kind end
  return out
end

-- a machine with a symmetric x (PE p holds p * N + i) and y
local function setup(opts)
  local m = lab.machine(opts)
  return m, m:malloc("int32", N, "x"):fill("iota_pe"), m:malloc("int32", N, "y")
end

-- PE p's y holds PE src's x
local function holds(y, p, src)
  return y:on(p):read(0) == src * N and y:on(p):read(N - 1) == src * N + N - 1
end

-- each engine's calls on a SoC that has it: put and get of x into y with
-- PE peer, completed by the engine's quiet
local ENGINES = {
  sdma = { soc = "Ascend910B",
           put = function(k, y, x, ub, p) k:sdma_put_nbi(y, x, ub, 64, N, p, 0) end,
           get = function(k, y, x, ub, p) k:sdma_get_nbi(y, x, ub, N, p, 0) end,
           quiet = function(k, ub) k:sdma_quiet(ub, 0) end },
  roce = { soc = "Ascend910B",
           put = function(k, y, x, ub, p) k:roce_put_nbi(y, x, ub, N, p) end,
           get = function(k, y, x, ub, p) k:roce_get_nbi(y, x, ub, N, p, 0) end,
           quiet = function(k, ub, p) k:roce_quiet(p, ub, 0) end },
  udma = { soc = "Ascend950",
           put = function(k, y, x, ub, p) k:udma_put_nbi(y, x, ub, N, p) end,
           get = function(k, y, x, ub, p) k:udma_get_nbi(y, x, ub, N, p, 0) end,
           quiet = function(k, _, p) k:udma_quiet(p) end },
}

local MODES = { false, "memcheck", "racecheck", "initcheck" }

describe("transport engines", function()
  for name, E in pairs(ENGINES) do
    for _, pes in ipairs({ 2, 8 }) do
      for _, mode in ipairs(MODES) do
        local tag = name .. ", " .. pes .. " PEs" .. (mode and (", " .. mode) or "")
        -- UDMA stays on the 4-card UB mesh: the partner is pe ~ 1
        local function peer(pe) return name == "udma" and pe ~ 1 or (pe + 1) % pes end

        it("put then get land by the engine's quiet (" .. tag .. ")", function()
          for _, dir in ipairs({ "put", "get" }) do
            local m, x, y = setup{ soc = E.soc, pes = pes, check = mode or nil }
            local seen = {}
            m:launch(function(k)
              local ub = k:ub("int32", 16)
              E[dir](k, y, x, ub, peer(k.pe))
              E.quiet(k, ub, peer(k.pe))
              if dir == "get" then                 -- read what landed, from S's side
                k:data_copy(ub, y, 16)
                H.sync(k, "MTE2_S")
                seen[k.pe] = k:get_value(ub, 0)
              end
            end, 1)
            for p = 0, pes - 1 do
              if dir == "put" then
                local from
                for q = 0, pes - 1 do if peer(q) == p then from = q end end
                assert.is_true(holds(y, p, from), dir)
              else
                assert.is_true(holds(y, p, peer(p)), dir)
                assert.equal(peer(p) * N, seen[p])
              end
            end
            if mode then assert.same({}, kinds(m)) end
          end
        end)
      end
    end
  end

  -- one put from PE 0 to PE 1, alone: S's issue, the stream at the rate of what
  -- binds (SDMA: the HCCS link's write; RoCE: the NIC, inside the server too),
  -- the engine's setup and the path's alpha, then the quiet's barrier (its
  -- issue overlaps the wait), exactly
  local ALONE = {
    { "sdma", function(p) return p.hccs_GBps * p.hccs_write_eff, p.sdma_setup_ns,
                                 p.hccs_alpha_ns end, "hccs" },
    { "roce", function(p) return p.rdma_GBps, p.rdma_setup_ns, p.rdma_alpha_ns end, "rdma" },
  }
  for _, c in ipairs(ALONE) do
    local name, figures, path = c[1], c[2], c[3]
    it("a " .. name .. " put times as its path and the engine's setup say, exactly", function()
      local m, x, y = setup{ pes = 2 }
      local p = m:params()
      local r = m:launch(function(k)
        if k.pe ~= 0 then return end
        local ub = k:ub("int32", 16)
        ENGINES[name].put(k, y, x, ub, 1)
        ENGINES[name].quiet(k, ub, 1)
      end, 1)
      local GBps, setup_ns, alpha_ns = figures(p)
      local want = (2 * p.issue_ns + p.signal_ns) / 1e3 + N * 4 / GBps / 1e3
          + (setup_ns + alpha_ns + p.pipe_barrier_ns) / 1e3
      assert.near(want, r.kernel_us[1], 1e-5)
      assert.equal(N * 4, m:path_bytes()[path])       -- RoCE: the NICs, not HCCS
    end)
  end

  -- one block's descriptors on an engine are one in-order queue (CANN SHMEM
  -- gives each block one SDMA SQ; STARS runs it in order): the second put
  -- streams after the first and the engine's task time, whichever the links
  it("two puts of one block run in order on its engine queue, each after a task time", function()
    local t = {}
    for _, eng in ipairs({ "roce", "sdma" }) do
      for _, two in ipairs({ false, true }) do
        local m, x, y = setup{ pes = 3 }
        local r = m:launch(function(k)
          if k.pe ~= 0 then return end
          local ub = k:ub("int32", 16)
          for p = 1, two and 2 or 1 do ENGINES[eng].put(k, y, x, ub, p) end
          for p = 1, two and 2 or 1 do ENGINES[eng].quiet(k, ub, p) end
        end, 1)
        t[eng .. (two and "2" or "1")] = r.kernel_us[1]
      end
    end
    local p = lab.soc("Ascend910B")
    local put = (p.issue_ns + p.signal_ns) / 1e3                       -- a second issue on S
    assert.near(N * 4 / p.rdma_GBps / 1e3 + p.rdma_task_ns / 1e3 + put, t.roce2 - t.roce1, 1e-5)
    assert.near(N * 4 / (p.hccs_GBps * p.hccs_write_eff) / 1e3 + p.sdma_task_ns / 1e3 + put,
                t.sdma2 - t.sdma1, 1e-5)
  end)

  it("an SDMA transfer leaves the block's MTE pipes free", function()
    local t = {}
    for _, with in ipairs({ false, true }) do
      local m, x, y = setup{ pes = 3 }
      local z = m:malloc("int32", N, "z")
      m:launch(function(k)
        if k.pe ~= 0 then return end
        local ub, big = k:ub("int32", 16), k:ub("int32", N)
        if with then k:sdma_put_nbi(y, x, ub, 64, N, 1, 0) end   -- to PE 1
        local t0 = k:system_cycle()
        k:mte_get_nbi(big, z, N, 2, 0)                            -- from PE 2: its own link
        H.sync(k, "MTE2_S")
        t[with] = k:system_cycle() - t0
        if with then k:sdma_quiet(ub, 0) end
      end, 1)
    end
    assert.equal(t[false], t[true])
  end)

  it("quiet waits for every engine (aclshmem_quiet); pipe_barrier and wait_flag do not", function()
    local t = {}
    for _, how in ipairs({ "quiet", "pipe_barrier", "mte_quiet", "sdma_quiet" }) do
      local m, x, y = setup{ pes = 2, check = "racecheck" }
      m:launch(function(k)
        local ub = k:ub("int32", 16)
        if k.pe == 0 then
          k:sdma_put_nbi(y, x, ub, 64, N, 1, 0)
          if how == "sdma_quiet" then k:sdma_quiet(ub, 0) else k[how](k) end
          t[how] = k:system_cycle()
        end
        k:barrier_all()
        if k.pe == 1 then k:data_copy(ub, y, 16) end
      end, 1)
      assert.same({}, kinds(m), how)     -- barrier_all quiets first: ordered either way
    end
    assert.equal(t.sdma_quiet, t.quiet)              -- both wait for the landing
    assert.is_true(t.pipe_barrier < t.quiet)         -- PipeBarrier(ALL) did not
    assert.equal(t.pipe_barrier, t.mte_quiet)        -- nor mte_quiet (PipeBarrier + dcci)
  end)

  it("racecheck: reading an engine's destination before its quiet is a race", function()
    for _, engine_quiet in ipairs({ true, false }) do
      local m, x, y = setup{ pes = 2, check = "racecheck" }
      local sig = m:calloc("int32", 8, "sig")
      m:launch(function(k)
        local ub = k:ub("int32", 16)
        if k.pe == 0 then
          k:sdma_put_nbi(y, x, ub, 64, N, 1, 0)
          if engine_quiet then k:sdma_quiet(ub, 0) else k:pipe_barrier() end
          k:signal_op(sig, 1, lab.SIGNAL_SET, 1)
        else
          k:signal_wait_until(sig, lab.CMP_EQ, 1)
          k:data_copy(ub, y, 16)
        end
      end, 1)
      assert.same(engine_quiet and {} or { "race" }, kinds(m))
    end
  end)

  it("the kernel ends when its engines' last transfer landed", function()
    local m, x, y = setup{ pes = 2 }
    local r = m:launch(function(k)
      if k.pe == 0 then k:roce_put_nbi(y, x, k:ub("int32", 16), N, 1) end
    end, 1)
    assert.is_true(holds(y, 1, 0))
    assert.is_true(r.kernel_us[1] > N * 4 / m:params().rdma_GBps / 1e3)
  end)

  for _, pes in ipairs({ 2, 8 }) do
    it("udma_put_signal_nbi: the signal lands after the data (" .. pes .. " PEs)", function()
      local m, x, y = setup{ soc = "Ascend950", pes = pes, check = "racecheck" }
      local sig = m:calloc("int64", 4, "sig")
      local first = {}
      m:launch(function(k)
        local ub = k:ub("int32", 16)
        k:udma_put_signal_nbi(y, x, N, sig, 9, k.pe ~ 1)
        k:signal_wait_until(sig, lab.CMP_EQ, 9)
        k:data_copy(ub, y:sub(N - 16), 16)
        H.sync(k, "MTE2_S")
        first[k.pe] = k:get_value(ub, 15)
        k:udma_quiet(k.pe ~ 1)
      end, 1)
      for p = 0, pes - 1 do assert.equal((p ~ 1) * N + N - 1, first[p]) end
      assert.same({}, kinds(m))
    end)
  end

  it("udma_relay_put_nbi: through the relay's links, one more alpha", function()
    local t = {}
    for _, relay in ipairs({ false, true }) do
      local m, x, y = setup{ soc = "Ascend950", pes = 4 }
      local r = m:launch(function(k)
        if k.pe ~= 0 then return end
        local ub = k:ub("int32", 16)
        if relay then k:udma_relay_put_nbi(y, x, ub, N, 1, 2, 0)
        else k:udma_put_nbi(y, x, ub, N, 1, 0) end
        k:udma_quiet(1)
      end, 1)
      assert.is_true(holds(y, 1, 0))
      t[relay] = r.kernel_us[1]
    end
    assert.near(lab.soc("Ascend950").hccs_alpha_ns / 1e3, t[true] - t[false], 1e-5)
  end)

  it("udma_relay_get_nbi brings PE pe's data through the relay", function()
    local m, x, y = setup{ soc = "Ascend950", pes = 4 }
    m:launch(function(k)
      if k.pe ~= 3 then return end
      k:udma_relay_get_nbi(y, x, k:ub("int32", 16), N, 1, 0)
      k:udma_quiet(1)
    end, 1)
    assert.is_true(holds(y, 3, 1))
  end)

  it("memcheck and initcheck see the engines' accesses", function()
    local m, x = setup{ pes = 2, check = "memcheck" }
    local small = m:malloc("int32", 16, "small")
    m:launch(function(k)
      k:sdma_put_nbi(small, x, k:ub("int32", 16), 64, 32, 1 - k.pe, 0)
    end, 1)
    assert.same({ "out_of_bounds" }, kinds(m))
    local m2 = lab.machine{ pes = 2, check = "initcheck" }
    local z, w = m2:malloc("int32", 64, "z"), m2:malloc("int32", 64, "w")
    m2:launch(function(k)
      k:roce_get_nbi(w, z, k:ub("int32", 16), 64, 1 - k.pe)
      k:roce_quiet(1 - k.pe, k:ub("int32", 8), 0)
    end, 1)
    assert.same({ "uninitialized_read" }, kinds(m2))
  end)

  it("refuse what the engines cannot do, Lua-style", function()
    local m, x, y = setup{ pes = 16 }
    local function err(f) return H.launch_err(m, function(k) if k.pe == 0 then f(k) end end, 1) end
    H.contains(err(function(k) k:udma_put_nbi(y, x, k:ub("int32", 16), N, 1) end),
               "this SoC has no UDMA engine")
    H.contains(err(function(k) k:sdma_put_nbi(y, x, k:ub("int32", 16), 64, N, 9, 0) end),
               "bad argument #6 to 'sdma_put_nbi' (SDMA moves data over HCCS/SIO")
    H.contains(err(function(k) k:sdma_put_nbi(y, x, k:ub("int32", 8), 16, N, 1, 0) end),
               "bad argument #4 to 'sdma_put_nbi' (the engine's UB workspace needs 64 bytes")
    H.contains(err(function(k) k:roce_put_nbi(y, x, k:ub("int32", 8), 0, 9) end),
               "bad argument #4 to 'roce_put_nbi' (element count must be positive)")
    local g = m:alloc("int32", 8)
    H.contains(err(function(k) k:roce_get_nbi(y, g, k:ub("int32", 8), 8, 9) end),
               "bad argument #2 to 'roce_get_nbi' (source must be a symmetric address)")
    local m4, x4, y4 = setup{ soc = "Ascend950", pes = 4 }
    local msg = H.launch_err(m4, function(k)
      if k.pe == 0 then k:udma_relay_put_nbi(y4, x4, k:ub("int32", 8), N, 1, 1) end
    end, 1)
    H.contains(msg, "bad argument #6 to 'udma_relay_put_nbi' (relay PE 1")
    local fsig = m4:malloc("fp32", 2)
    msg = H.launch_err(m4, function(k)
      if k.pe == 0 then k:udma_put_signal_nbi(y4, x4, N, fsig, 1, 1) end
    end, 1)
    H.contains(msg, "bad argument #4 to 'udma_put_signal_nbi' (signal must be an integer")
  end)
end)
