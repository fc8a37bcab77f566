-- CANN SHMEM's RMA calls as the library documents them (include/device/gm2gm/
-- shmem_device_rma.h, shmem_device_so.h, ub2gm/engine/shmem_device_mte.h,
-- shmem_device_cc.h): blocking and non-blocking puts and gets through the
-- library's own UB region, the UB forms of mte_put_nbi / mte_get_nbi,
-- put_signal_nbi, and the two sync_alls, on 2 and 8 PEs, plain and checked.

local H = require("spec.helpers.engine")
local lab = H.lab

local N = 3000                     -- int32: more than one 16 KiB scratch chunk

-- a machine of pes PEs with check (nil = plain) and a symmetric input x
-- (PE p holds p * N + i) and output y
local function setup(pes, check)
  local m = lab.machine{ pes = pes, check = check }
  local x = m:malloc("int32", N, "x"):fill("iota_pe")
  local y = m:malloc("int32", N, "y")
  return m, x, y
end

-- PE p's y holds what PE src put (src * N + i), every element
local function holds(y, p, src)
  local got = y:on(p):read(0, N)
  for i = 1, N do
    if got[i] ~= src * N + i - 1 then return false end
  end
  return true
end

-- the reports of a checked machine, as "kind" strings
local function kinds(m)
  local out = {}
  for _, r in ipairs(m:check_reports()) do out[#out + 1] = r.kind end
  return out
end

local MODES = { false, "memcheck", "racecheck", "initcheck" }

describe("CANN SHMEM RMA", function()
  for _, pes in ipairs({ 2, 8 }) do
    for _, mode in ipairs(MODES) do
      local tag = pes .. " PEs" .. (mode and (", " .. mode) or "")

      -- PE p puts to p + 1 (its y then holds p - 1's x), or gets from p + 1
      local CALLS = { put = { "putmem_nbi", "put_nbi", "putmem", "put" },
                      get = { "getmem_nbi", "get_nbi", "getmem", "get" } }
      for dir, calls in pairs(CALLS) do
        it(calls[1] .. " / " .. calls[2] .. " land on quiet, as " .. calls[3] .. " does ("
           .. tag .. ")", function()
          for _, call in ipairs(calls) do
            local m, x, y = setup(pes, mode or nil)
            m:launch(function(k)
              if k.block ~= 0 then return end
              k[call](k, y, x, N, (k.pe + 1) % k.n_pes)
              k:quiet()
              if dir == "put" then k:barrier_all() end
            end, 1)
            local step = dir == "put" and -1 or 1
            for p = 0, pes - 1 do assert.is_true(holds(y, p, (p + step) % pes), call) end
            if mode then assert.same({}, kinds(m)) end
          end
        end)
      end

      it("mte_get_nbi into UB and mte_put_nbi from UB (" .. tag .. ")", function()
        local m, x, y = setup(pes, mode or nil)
        local seen = {}
        m:launch(function(k)
          if k.block ~= 0 then return end
          local ub = k:ub("int32", N)
          local from = (k.pe + 1) % k.n_pes
          k:mte_get_nbi(ub, x, N, from, 0)            -- GM of PE from -> UB, MTE2
          H.sync(k, "MTE2_S")
          seen[k.pe] = { k:get_value(ub, 0), k:get_value(ub, N - 1) }
          H.sync(k, "MTE2_MTE3")
          k:mte_put_nbi(y, ub, N, k.pe, 0)            -- UB -> own y, MTE3
          k:quiet()
        end, 1)
        for p = 0, pes - 1 do
          local from = (p + 1) % pes
          assert.same({ from * N, from * N + N - 1 }, seen[p])
          assert.is_true(holds(y, p, from))
        end
        if mode then assert.same({}, kinds(m)) end
      end)

      it("get_nbi into UB and put_nbi from UB: the ub2gm typed forms (" .. tag .. ")", function()
        for _, blocking in ipairs({ false, true }) do
          local m, x, y = setup(pes, mode or nil)
          local seen = {}
          m:launch(function(k)
            if k.block ~= 0 then return end
            local ub, from = k:ub("int32", N), (k.pe + 1) % k.n_pes
            if blocking then k:get(ub, x, N, from) else k:get_nbi(ub, x, N, from) end
            H.sync(k, "MTE2_S")
            seen[k.pe] = k:get_value(ub, N - 1)
            H.sync(k, "MTE2_MTE3")
            if blocking then k:put(y, ub, N, k.pe) else k:put_nbi(y, ub, N, k.pe); k:quiet() end
          end, 1)
          for p = 0, pes - 1 do
            assert.equal((p + 1) % pes * N + N - 1, seen[p])
            assert.is_true(holds(y, p, (p + 1) % pes))
          end
          if mode then assert.same({}, kinds(m)) end
        end
      end)

      it("put_signal_nbi: the data is there when the signal is seen (" .. tag .. ")", function()
        local m, x, y = setup(pes, mode or nil)
        local sig = m:malloc("int32", 8, "sig")
        local first = {}
        m:launch(function(k)
          if k.block ~= 0 then return end
          k:put_signal_nbi(y, x, N, sig, 7, lab.SIGNAL_SET, (k.pe + 1) % k.n_pes)
          k:signal_wait_until(sig, lab.CMP_EQ, 7)
          local ub = k:ub("int32", 8)
          k:data_copy(ub, y, 8)
          H.sync(k, "MTE2_S")
          first[k.pe] = k:get_value(ub, 0)
        end, 1)
        for p = 0, pes - 1 do
          assert.equal((p - 1) % pes * N, first[p])
          assert.is_true(holds(y, p, (p - 1) % pes))
        end
        if mode then assert.same({}, kinds(m)) end
      end)
    end
  end

  it("_nbi returns at issue; the blocking form waits for its quiet", function()
    local t = {}
    for _, call in ipairs({ "putmem_nbi", "putmem", "getmem_nbi", "getmem" }) do
      for _, quiet in ipairs({ false, true }) do
        local m, x, y = setup(2)
        m:launch(function(k)
          if k.pe ~= 0 or k.block ~= 0 then return end
          k[call](k, y, x, N, 1)
          if quiet then k:quiet() end
          t[call .. (quiet and "+quiet" or "")] = k:system_cycle()
        end, 1)
      end
    end
    for _, c in ipairs({ "putmem", "getmem" }) do
      assert.is_true(t[c .. "_nbi"] < t[c])                  -- the nbi call did not wait
      assert.equal(t[c], t[c .. "_nbi+quiet"])               -- nbi + quiet = blocking, exactly
    end
  end)

  it("set_mte_config: the staged calls stage through the UB and event id it names", function()
    local t = {}
    for _, ub_bytes in ipairs({ 0, 256, 64 * 1024 }) do    -- 0: the default 16 KiB scratch
      local m, x, y = setup(2, "racecheck")
      local r = m:launch(function(k)
        if ub_bytes > 0 then k:set_mte_config(k:ub("int8", 64 * 1024), ub_bytes, 3) end
        k:putmem(y, x, N, 1 - k.pe)
        k:barrier_all()
      end, 1)
      assert.is_true(holds(y, 0, 1) and holds(y, 1, 0))
      assert.same({}, kinds(m))
      t[ub_bytes] = r.kernel_us[1]
    end
    assert.is_true(t[256] > t[0])               -- 47 chunks instead of one
    -- one chunk either way (12 KB): only set_mte_config's issue more
    assert.near(t[0] + lab.soc("Ascend910B").issue_ns / 1e3, t[64 * 1024], 1e-6)
    local m = setup(2)
    H.contains(H.launch_err(m, function(k) k:set_mte_config(k:ub("int8", 64), 128) end, 1),
               "bad argument #2 to 'set_mte_config' (ub_size must be in 1..64")
    H.contains(H.launch_err(m, function(k) k:set_mte_config(k:ub("int8", 64), 64, 8) end, 1),
               "bad argument #3 to 'set_mte_config' (event id must be in 0..7")
  end)

  it("put / get are putmem / getmem: same bytes, same times", function()
    local r = {}
    for _, call in ipairs({ "put", "putmem", "get", "getmem" }) do
      local m, x, y = setup(8)
      local res = m:launch(function(k) k[call](k, y, x, N, (k.pe + 3) % k.n_pes) end, 2)
      r[call] = { res.kernel_us[1], y:on(5):checksum() }
    end
    assert.same(r.putmem, r.put)
    assert.same(r.getmem, r.get)
  end)

  it("racecheck: a UB get read before its MTE2_S is a race, with it none", function()
    for _, flag in ipairs({ true, false }) do
      local m, x = setup(2, "racecheck")
      m:launch(function(k)
        local ub = k:ub("int32", N)
        k:mte_get_nbi(ub, x, N, 1 - k.pe, 0)
        if flag then H.sync(k, "MTE2_S") end
        k:get_value(ub, 0)
      end, 1)
      assert.same(flag and {} or { "race" }, kinds(m))
    end
  end)

  it("racecheck: two _nbi calls share the scratch UB, so a quiet must sit between them", function()
    for _, quiet in ipairs({ true, false }) do
      local m, x, y = setup(2, "racecheck")
      m:launch(function(k)
        k:putmem_nbi(y, x, 64, 1 - k.pe)
        if quiet then k:quiet() end
        k:getmem_nbi(y:sub(64), x, 64, 1 - k.pe)  -- its MTE2 refills the scratch
        k:quiet()
      end, 1)
      assert.same(quiet and {} or { "race" }, kinds(m))
    end
  end)

  -- before: the copy's read was judged at issue, when the flag still held
  -- the old value, so the data behind a flag polled this way raced
  it("racecheck: a flag polled with get_nbi into UB orders the data behind it", function()
    for _, pes in ipairs({ 2, 8 }) do
      local m, x, y = setup(pes, "racecheck")
      local sig = m:malloc("int32", 8, "sig")
      m:launch(function(k)
        local ub, f = k:ub("int32", 8), k:ub("int32", 8)
        local to = (k.pe + 1) % k.n_pes
        k:putmem(y, x, N, to)
        k:signal_op(sig, 1, lab.SIGNAL_SET, to)
        repeat                                  -- the library example's polling loop
          k:get_nbi(f:sub(0, 1), sig, 1, k.pe)
          k:pipe_barrier("ALL")
        until k:get_value(f, 0) == 1
        k:data_copy(ub, y, 8)
      end, 1)
      assert.same({}, kinds(m))
    end
  end)

  it("memcheck: a UB get past the remote buffer is reported and skipped", function()
    local m, x = setup(2, "memcheck")
    m:launch(function(k)
      local ub = k:ub("int32", N + 8)
      k:mte_get_nbi(ub, x, N + 8, 1 - k.pe, 0)
    end, 1)
    assert.same({ "out_of_bounds" }, kinds(m))
  end)

  it("initcheck: a UB get from memory nobody wrote is reported", function()
    local m = lab.machine{ pes = 2, check = "initcheck" }
    local z = m:malloc("int32", 64, "z")
    m:launch(function(k)
      local ub = k:ub("int32", 64)
      k:mte_get_nbi(ub, z, 64, 1 - k.pe, 0)
      k:quiet()
    end, 1)
    assert.same({ "uninitialized_read" }, kinds(m))
  end)

  it("refuse bad arguments of the UB forms Lua-style", function()
    local m, x, y = setup(2)
    local g = m:alloc("int32", 8, "g")
    local msg = H.launch_err(m, function(k) k:mte_get_nbi(k:ub("int32", 8), g, 8, 1, 0) end, 1)
    H.contains(msg, "bad argument #2 to 'mte_get_nbi' (source must be a symmetric address)")
    msg = H.launch_err(m, function(k) k:mte_get_nbi(k:ub("int32", 8), x, 8, 2, 0) end, 1)
    H.contains(msg, "bad argument #4 to 'mte_get_nbi' (PE 2 out of range 0..1)")
    msg = H.launch_err(m, function(k) k:mte_get_nbi(k:ub("int32", 8), x, 8, 1, 9) end, 1)
    H.contains(msg, "bad argument #5 to 'mte_get_nbi' (event id must be in 0..7)")
    msg = H.launch_err(m, function(k) k:mte_get_nbi(k:ub("fp32", 8), x, 8, 1, 0) end, 1)
    H.contains(msg, "bad argument #2 to 'mte_get_nbi' (dtype mismatch)")
    msg = H.launch_err(m, function(k) k:put_nbi(y, x, N, 5) end, 1)
    H.contains(msg, "bad argument #4 to 'put_nbi' (PE 5 out of range 0..1)")
  end)
end)

describe("the two sync_alls", function()
  for _, pes in ipairs({ 2, 8 }) do
    it("shmem_sync_all releases every PE at the last arrival, as barrier_all (" .. pes ..
       " PEs)", function()
      local at = {}
      for _, call in ipairs({ "shmem_sync_all", "barrier_all" }) do
        local m = lab.machine{ pes = pes }
        local t = {}
        m:launch(function(k)
          for _ = 1, k.pe * 10 + k.block do k:system_cycle() end    -- arrive at different times
          k[call](k)
          t[k.pe * 4 + k.block] = k:system_cycle()
        end, 4)
        local first = t[0]
        for _, v in pairs(t) do assert.equal(first, v) end
        at[call] = first
      end
      assert.equal(at.barrier_all, at.shmem_sync_all)     -- nothing in flight: the same time
    end)
  end

  it("shmem_sync_all does not wait for puts in flight; barrier_all does", function()
    local t = {}
    for _, call in ipairs({ "shmem_sync_all", "barrier_all" }) do
      local m, x, y = setup(2)
      m:launch(function(k)
        k:putmem_nbi(y, x, N, 1 - k.pe)
        k[call](k)
        t[call] = k:system_cycle()
      end, 1)
    end
    assert.is_true(t.shmem_sync_all < t.barrier_all)
  end)

  it("racecheck: a put before shmem_sync_all is not ordered with the reader; before barrier_all it is",
     function()
    for _, call in ipairs({ "shmem_sync_all", "barrier_all" }) do
      local m, x, y = setup(2, "racecheck")
      m:launch(function(k)
        if k.pe == 0 then k:putmem_nbi(y, x, N, 1) end
        k[call](k)
        if k.pe == 1 then
          local ub = k:ub("int32", 8)
          k:data_copy(ub, y, 8)
        end
      end, 1)
      assert.same(call == "barrier_all" and {} or { "race" }, kinds(m), call)
    end
  end)

  it("racecheck: scalar work before shmem_sync_all is ordered with every PE after it", function()
    local m, x = setup(8, "racecheck")
    m:launch(function(k)
      local ub = k:ub("int32", 8)
      k:data_copy(ub, x, 8)                -- read own x on MTE2 ...
      H.sync(k, "MTE2_S")                  -- ... known to S before the sync
      k:shmem_sync_all()
      if k.pe ~= 0 then return end
      k:set_value(ub, 0, 1)
      H.sync(k, "S_MTE3")
      for p = 1, k.n_pes - 1 do k:mte_put_nbi(x, ub, 8, p, 0) end   -- overwrite every x
      k:quiet()
    end, 1)
    assert.same({}, kinds(m))
  end)

  it("sync_all and ascendc_sync_all are SyncAll: the blocks of one PE only", function()
    for _, call in ipairs({ "sync_all", "ascendc_sync_all" }) do
      local m = lab.machine{ pes = 2 }
      local t = {}
      m:launch(function(k)
        for _ = 1, k.pe * 1000 + k.block do k:system_cycle() end
        k[call](k)
        t[k.pe * 2 + k.block] = k:system_cycle()
      end, 2)
      assert.equal(t[0], t[1])
      assert.equal(t[2], t[3])
      assert.is_true(t[0] < t[2], call)          -- PE 0 did not wait for PE 1
    end
  end)
end)
