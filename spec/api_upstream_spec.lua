-- Where CANN SHMEM's headers declare more than the lab used to take (issue 26
-- defect 4): aclshmemx_mte_atomic_add's UB + MTE3 types on every SoC
-- (shmem_device_mte.h's table), the float forms of the mte fetch / inc calls
-- and of udma_atomic_add / _inc, the init's data_op_engine_type and the
-- routing it sets (the library's topo_list), and the RoCE barrier and sync
-- (shmem_device_rdma.h).

local H = require("spec.helpers.engine")
local lab = H.lab

-- the time of one launch of kernel (the slowest PE's kernel, microseconds)
local function kernel_us(m, kernel, block_dim)
  return m:launch(kernel, block_dim or 1).max_kernel_us
end

-- x rounded to IEEE single, as a Lua float
local function single(x) return (string.unpack("f", string.pack("f", x))) end

local UB_TYPES = { "int8", "int16", "fp16", "bf16", "int32", "fp32" }
local SCALAR_TYPES = { "uint32", "int64", "uint64" }

describe("mte_atomic_add: the header's table per SoC", function()
  for _, soc in ipairs(lab.socs) do
    it("takes int8, int16, half, bfloat16, int32 and float through UB + MTE3 on " .. soc,
       function()
      local m = lab.machine{ soc = soc, pes = 2 }
      local acc = {}
      for _, dt in ipairs(UB_TYPES) do acc[dt] = m:malloc(dt, 1, dt):fill("zero") end
      m:launch(function(k)
        for _, dt in ipairs(UB_TYPES) do
          k:mte_atomic_add(acc[dt], H.FLOAT[dt] and 1.5 or 3, 0)
          H.sync(k, "MTE3_S")            -- the scratch UB is written again by the next add
        end
      end, 2)
      for _, dt in ipairs(UB_TYPES) do
        assert.same({ H.FLOAT[dt] and 6.0 or 12 }, acc[dt]:on(0):read(0, 1), dt)
      end
    end)
  end

  it("uint32, int64 and uint64 only on Ascend950 (its scalar AtomicAdd)", function()
    local m = lab.machine{ soc = "Ascend950", pes = 2 }
    local acc = {}
    for _, dt in ipairs(SCALAR_TYPES) do acc[dt] = m:malloc(dt, 1, dt):fill("const", 5) end
    m:launch(function(k)
      for _, dt in ipairs(SCALAR_TYPES) do k:mte_atomic_add(acc[dt], 7, 1) end
      k:quiet()
    end, 1)
    for _, dt in ipairs(SCALAR_TYPES) do assert.same({ 19 }, acc[dt]:on(1):read(0, 1), dt) end
    for _, soc in ipairs({ "Ascend910B", "Ascend910_93" }) do
      local a2 = lab.machine{ soc = soc, pes = 2 }
      for _, dt in ipairs(SCALAR_TYPES) do
        local x = a2:malloc(dt, 1, dt)
        local e = H.err(a2.launch, a2, function(k) k:mte_atomic_add(x, 1, 1) end, 1)
        H.contains(e, "bad argument #1 to 'mte_atomic_add' (mte_atomic_add of " .. dt
                   .. " needs Ascend950's scalar atomics")
      end
    end
  end)

  it("int8 and int16 wrap as two's complement (the lab's choice: the header says nothing)",
     function()
    local m = lab.machine{ pes = 2 }
    local b = m:malloc("int8", 2, "b"):fill({ 127, -128 })
    local h = m:malloc("int16", 1, "h"):fill("const", 32767)
    m:launch(function(k)
      if k.pe ~= 0 then return end
      k:mte_atomic_add(b, 1, 1); H.sync(k, "MTE3_S")
      k:mte_atomic_add(b:sub(1, 1), -1, 1); H.sync(k, "MTE3_S")
      k:mte_atomic_add(h, 2, 1)
    end, 1)
    assert.same({ -128, 127 }, b:on(1):read(0, 2))
    assert.same({ -32767 }, h:on(1):read(0, 1))
  end)

  it("costs what atomic_add's UB + MTE3 path costs, not a scalar atomic", function()
    for _, soc in ipairs(lab.socs) do
      local m = lab.machine{ soc = soc, pes = 2 }
      local x = m:malloc("int16", 1, "x"):fill("zero")
      local mte = kernel_us(m, function(k) if k.pe == 0 then k:mte_atomic_add(x, 1, 1) end end)
      local lib = kernel_us(m, function(k) if k.pe == 0 then k:atomic_add(x, 1, 1) end end)
      assert.equals(lib, mte, soc)
    end
    local m = lab.machine{ soc = "Ascend950", pes = 2 }
    local f = m:malloc("int32", 1, "f"):fill("zero")
    local u = m:malloc("uint32", 1, "u"):fill("zero")
    local ub_path = kernel_us(m, function(k) if k.pe == 0 then k:mte_atomic_add(f, 1, 1) end end)
    local scalar = kernel_us(m, function(k) if k.pe == 0 then k:mte_atomic_add(u, 1, 1) end end)
    assert.are_not.equal(ub_path, scalar)
  end)

  it("still refuses a dtype the header does not list, in Lua's style", function()
    local m = lab.machine{ soc = "Ascend950", pes = 2 }
    local x = m:malloc("uint8", 1, "x")
    local e = H.err(m.launch, m, function(k) k:mte_atomic_add(x, 1, 1) end, 1)
    H.contains(e, "bad argument #1 to 'mte_atomic_add' (mte_atomic_add does not take uint8)")
  end)
end)

describe("float in the mte fetch / inc calls and udma_atomic_add / _inc (Ascend950)", function()
  it("mte_atomic_fetch_add, _inc, _fetch_inc, _fetch: old values back, IEEE single sums",
     function()
    local m = lab.machine{ soc = "Ascend950", pes = 8 }
    local f = m:malloc("fp32", 2, "f"):fill({ 16777216, 0 })
    local r = {}
    m:launch(function(k)
      if k.pe ~= 0 then return end
      r.fetch_add = k:mte_atomic_fetch_add(f, 1, 1)       -- 2^24 + 1 rounds back to 2^24
      k:mte_atomic_inc(f, 1)                              -- again
      k:quiet()
      r.fetch_inc = k:mte_atomic_fetch_inc(f, 1)
      r.fetch = k:mte_atomic_fetch(f, 1)
      r.tenth = k:mte_atomic_fetch_add(f:sub(1, 1), 0.1, 1)   -- value is a float: 0.1f
      r.after = k:mte_atomic_fetch(f:sub(1, 1), 1)
    end, 1)
    assert.same({ fetch_add = 16777216.0, fetch_inc = 16777216.0, fetch = 16777216.0,
                  tenth = 0.0, after = single(0.1) }, r)
    assert.same({ 16777216.0, single(0.1) }, f:on(1):read(0, 2))
  end)

  it("udma_atomic_add and udma_atomic_inc take float; ties round to even", function()
    local m = lab.machine{ soc = "Ascend950", pes = 4 }
    local f = m:malloc("fp32", 1, "f"):fill("const", 16777216)
    m:launch(function(k)
      if k.pe ~= 0 then return end
      k:udma_atomic_add(f, 2, 1)                          -- 16777218
      k:udma_atomic_inc(f, 1)                             -- 16777219: a tie, to 16777220
      k:udma_quiet(1)
    end, 1)
    assert.same({ 16777220.0 }, f:on(1):read(0, 1))
  end)

  it("refuses float where the header does not declare it", function()
    local m = lab.machine{ soc = "Ascend950", pes = 2 }
    local f = m:malloc("fp32", 1, "f")
    local h = m:malloc("fp16", 1, "h")
    for _, c in ipairs({
      { "udma_atomic_fetch_add", function(k) k:udma_atomic_fetch_add(f, 1, 1) end, "fp32" },
      { "udma_atomic_fetch_inc", function(k) k:udma_atomic_fetch_inc(f, 1) end, "fp32" },
      { "udma_atomic_fetch", function(k) k:udma_atomic_fetch(f, 1) end, "fp32" },
      { "roce_atomic_add", function(k) k:roce_atomic_add(f, 1, 1) end, "fp32" },
      { "roce_atomic_inc", function(k) k:roce_atomic_inc(f, 1) end, "fp32" },
      { "atomic_fetch_add", function(k) k:atomic_fetch_add(f, 1, 1) end, "fp32" },
      { "mte_atomic_fetch_add", function(k) k:mte_atomic_fetch_add(h, 1, 1) end, "fp16" },
    }) do
      local e = H.err(m.launch, m, c[2], 1)
      H.contains(e, "bad argument #1 to '" .. c[1] .. "' (" .. c[1] .. " does not take "
                 .. c[3] .. ")")
    end
    local a2 = lab.machine{ pes = 2 }
    local g = a2:malloc("fp32", 1, "g")
    local e = H.err(a2.launch, a2, function(k) k:mte_atomic_fetch_add(g, 1, 1) end, 1)
    H.contains(e, "mte_atomic_fetch_add of fp32 needs Ascend950's scalar atomics")
  end)
end)

describe("data_op_engine_type (aclshmemx_init_attr's option_attr)", function()
  it("defaults to MTE, and MTE|ROCE when the PEs span servers", function()
    local one, two = lab.machine{ pes = 8 }, lab.machine{ pes = 16 }
    assert.equals(lab.DATA_OP_MTE, one:params().data_op_engine_type)
    assert.equals(lab.DATA_OP_MTE | lab.DATA_OP_ROCE, two:params().data_op_engine_type)
    -- topo_list: MTE inside the server, RoCE to every PE once named
    assert.equals(lab.DATA_OP_MTE, one:reach(0, 7))
    assert.equals(lab.DATA_OP_MTE | lab.DATA_OP_ROCE, two:reach(0, 7))
    assert.equals(lab.DATA_OP_ROCE, two:reach(0, 8))
    local u = lab.machine{ soc = "Ascend950", pes = 8, data_op_engine_type = "roce|UDMA" }
    assert.equals(lab.DATA_OP_MTE | lab.DATA_OP_ROCE | lab.DATA_OP_UDMA, u:reach(0, 1))
    assert.equals(lab.DATA_OP_ROCE, u:reach(0, 4))
    assert.equals(12, u:params().data_op_engine_type)
    local n = lab.machine{ pes = 2, data_op_engine_type = { "ACLSHMEM_DATA_OP_MTE", 2 } }
    assert.equals(3, n:params().data_op_engine_type)
  end)

  it("is checked as the library's check_attr does, and against the machine", function()
    local bad = {
      { { pes = 2, data_op_engine_type = 0 }, "data_op_engine_type 0 is not valid: a nonzero "
        .. "OR of MTE=1 SDMA=2 ROCE=4 UDMA=8, e.g. \"MTE|ROCE\")" },
      { { pes = 2, data_op_engine_type = 16 }, "data_op_engine_type 16 is not valid" },
      { { pes = 2, data_op_engine_type = "MTE|RCOE" }, "unknown data_op_engine_type 'RCOE'" },
      { { pes = 2, data_op_engine_type = 1.5 }, "data_op_engine_type must be a string, a list "
        .. "or an integer" },
      { { pes = 2, data_op_engine_type = "UDMA" }, "data_op_engine_type: UDMA, but this SoC "
        .. "has no UDMA engine (udma_GBps = 0; Ascend950 has one)" },
      { { pes = 2, data_op_engine_type = "SDMA", sdma_GBps = 0.0 }, "data_op_engine_type: "
        .. "SDMA, but this SoC has no SDMA engine (sdma_GBps = 0)" },
      { { pes = 16, data_op_engine_type = "MTE|SDMA" }, "data_op_engine_type has no ROCE, but "
        .. "the 16 PEs span 2 servers of 8: only RoCE reaches across" },
    }
    for _, c in ipairs(bad) do
      local e = H.err(lab.machine, c[1])
      H.contains(e, "bad argument #1 to 'machine' (" .. c[2])
      assert.is_nil(e:find("init.lua", 1, true), e)       -- blamed on the caller
    end
  end)

  it("after a RoCE init the logic atomics run between PEs of one server, over RDMA", function()
    local m = lab.machine{ soc = "Ascend950", pes = 4, data_op_engine_type = "MTE|ROCE" }
    local x = m:malloc("int32", 1, "x"):fill("const", 12)
    local r, t = {}, {}
    m:launch(function(k)
      if k.pe ~= 0 then return end
      k:atomic_and(x, 10, 1)                              -- 8
      local c0 = k:system_cycle()
      r.o = k:atomic_fetch_or(x, 3, 1)                    -- 8, then 11
      t.roce = k:system_cycle() - c0
      c0 = k:system_cycle()
      r.a = k:atomic_fetch_add(x, 1, 1)                   -- MTE comes first: 11, then 12
      t.mte = k:system_cycle() - c0
    end, 1)
    local p = m:params()
    local function want(alpha) return (p.signal_ns + 2 * alpha + p.scalar_ns) / 1000 * p.cycle2us end
    assert.same({ 8, 11 }, { r.o, r.a })
    assert.near(want(p.rdma_alpha_ns), t.roce, 1)
    assert.near(want(p.hccs_alpha_ns), t.mte, 1)
  end)

  it("after a UDMA init they run over UDMA on the PE's own path", function()
    local m = lab.machine{ soc = "Ascend950", pes = 4, data_op_engine_type = "MTE|UDMA" }
    local x = m:malloc("int64", 1, "x"):fill("const", 6)
    local r, t = {}, {}
    m:launch(function(k)
      if k.pe ~= 0 then return end
      local c0 = k:system_cycle()
      r.x = k:atomic_fetch_xor(x, 3, 1)                   -- 6, then 5
      t.udma = k:system_cycle() - c0
      k:atomic_or(x, 8, 1)
      k:udma_quiet(1)
      r.after = k:atomic_fetch(x, 1)
    end, 1)
    local p = m:params()
    assert.same({ x = 6, after = 13 }, r)
    assert.near((p.signal_ns + 2 * p.hccs_alpha_ns + p.scalar_ns) / 1000 * p.cycle2us, t.udma, 1)
  end)
end)

describe("putmem / getmem after an SDMA or UDMA init (the library's RMA routes)", function()
  -- the engine's own put, then its quiet: what the library's putmem runs
  local function by_engine(m, eng, d, s, n, pe)
    return kernel_us(m, function(k)
      if k.pe ~= 0 then return end
      local ub = k:ub("uint8", 64)
      k[eng .. "_put_nbi"](k, d, s, ub, n, pe, 0)
      if eng == "sdma" then k:sdma_quiet(ub, 0) else k:udma_quiet(pe) end
    end)
  end

  for _, c in ipairs({ { "Ascend910B", "MTE|SDMA", "sdma" }, { "Ascend950", "MTE|UDMA", "udma" },
                       { "Ascend950", "MTE|SDMA|UDMA", "sdma" } }) do
    it(c[2] .. " on " .. c[1] .. ": putmem is " .. c[3] .. "_put_nbi + its quiet", function()
      local m = lab.machine{ soc = c[1], pes = 4, data_op_engine_type = c[2] }
      local d = m:malloc("fp32", 4096, "d"):fill("zero")
      local s = m:malloc("fp32", 4096, "s"):fill("iota_pe")
      local put = kernel_us(m, function(k) if k.pe == 0 then k:putmem(d, s, 4096, 1) end end)
      assert.same({ 0.0, 4095.0 }, { d:on(1):read(0, 1)[1], d:on(1):read(4095, 1)[1] })
      assert.equals(by_engine(m, c[3], d, s, 4096, 1), put)
      m:launch(function(k) if k.pe == 0 then k:getmem_nbi(d, s, 4096, 2); k:quiet() end end, 1)
      assert.same({ 8192.0 }, d:on(0):read(0, 1))
      -- the MTE-only init keeps the staged MTE path: another time
      local mte = lab.machine{ soc = c[1], pes = 4 }
      local d2 = mte:malloc("fp32", 4096, "d"):fill("zero")
      local s2 = mte:malloc("fp32", 4096, "s")
      assert.are_not.equal(put, kernel_us(mte, function(k)
        if k.pe == 0 then k:putmem(d2, s2, 4096, 1) end
      end))
    end)
  end
end)

describe("roce_barrier_all, roce_sync_all and their team forms", function()
  -- the library's roce_team_sync after the last arrival: the counter's store,
  -- then ceil(log2 n) rounds of an RDMA write, its roce_quiet and the wait
  local function sync_ns(p, n)
    local rounds = 0
    while (1 << rounds) < n do rounds = rounds + 1 end
    return p.signal_ns + rounds * (p.issue_ns + p.signal_ns + p.rdma_setup_ns + 4 / p.rdma_GBps
                                   + p.rdma_alpha_ns + p.issue_ns + p.poll_ns)
  end

  for _, pes in ipairs({ 2, 5, 8 }) do
    it("time on the RDMA path whatever the PEs: " .. pes .. " PEs of one server", function()
      local m = lab.machine{ pes = pes }
      local p = m:params()
      local s = kernel_us(m, function(k) k:roce_sync_all() end)
      assert.near((p.issue_ns + sync_ns(p, pes)) / 1000, s, 1e-9)
      -- barrier: a roce_quiet (an issue) to each other PE first
      local b = kernel_us(m, function(k) k:roce_barrier_all() end)
      assert.near(((pes - 1) * p.issue_ns + sync_ns(p, pes)) / 1000, b, 1e-9)
    end)
  end

  it("roce_barrier waits for the block's RDMA transfers; roce_sync does not", function()
    local m = lab.machine{ pes = 2, check = "racecheck" }
    local d = m:malloc("int32", 64, "d"):fill("zero")
    local s = m:malloc("int32", 64, "s"):fill("const", 3)
    local t = {}
    local function run(call)
      return m:launch(function(k)
        local ub = k:ub("int32", 32)
        if k.pe == 0 then k:roce_put_nbi(d, s, ub, 64, 1) end
        local c0 = k:system_cycle()
        k[call](k)
        t[call .. k.pe] = k:system_cycle() - c0
        if k.pe == 1 then
          local u = k:ub("int32", 64)
          k:data_copy(u, d, 64)
          k:pipe_barrier()
        end
      end, 1)
    end
    run("roce_barrier_all")
    assert.same({}, m:check_reports())
    assert.same({ 3 }, d:on(1):read(63, 1))
    run("roce_sync_all")
    local reps = m:check_reports()
    assert.is_true(#reps > 0)
    assert.equals("race", reps[1].kind)
    -- the barrier's PE 0 waited for its put to land before the sync rounds
    assert.is_true(t.roce_barrier_all0 > t.roce_sync_all0)
  end)

  it("team forms: the team's own PEs; a roce_barrier outside the team returns at once",
     function()
    local m = lab.machine{ pes = 8 }
    local p = m:params()
    local odd = m:team_split_strided(lab.TEAM_WORLD, 1, 2, 4)   -- 1 3 5 7
    local t = {}
    m:launch(function(k)
      local c0 = k:system_cycle()
      k:roce_barrier(odd)
      t[k.pe] = k:system_cycle() - c0
      if k.pe % 2 == 1 then
        k:roce_team_sync(odd, k:ub("uint8", 128), 0)
        k:roce_sync(odd)
      end
    end, 1)
    assert.equals(0, t[0])
    assert.near((3 * p.issue_ns + sync_ns(p, 4)) / 1000 * p.cycle2us, t[1], 1)
    local e = H.err(m.launch, m, function(k) k:roce_sync(odd) end, 1)
    H.contains(e, "bad argument #1 to 'roce_sync' (PE 0 is not a member of team")
    e = H.err(m.launch, m, function(k) k:roce_sync_all(k:ub("uint8", 64), 0) end, 1)
    H.contains(e, "the engine's UB workspace needs 128 bytes at least")
  end)
end)
