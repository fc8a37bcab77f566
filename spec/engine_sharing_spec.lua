-- Sharing of links and HBM by concurrent transfers (core/flow.c): max-min
-- fair rates, work-conserving, recomputed when a flow starts or ends. The
-- expected figures come from the profile (m:params()), never from a run.
local H = require("spec.helpers.engine")
local lab = H.lab
local op = require("shmemlab.op")
local runner = require("shmemlab.runner")

local US = 1000                 -- ns per us

-- the time for blocks blocks of PE 0 to each write bytes from UB to PE 1
local function ub_writes(blocks, bytes, params)
  local o = { pes = 2 }
  for k, v in pairs(params or {}) do o[k] = v end
  local m = lab.machine(o)
  local d = m:malloc("int8", bytes * blocks)
  local r = m:launch(function(k)
    if k.pe ~= 0 then return end
    local u = k:ub("int8", bytes)
    k:mte_put_nbi(d:sub(k.block * bytes, bytes), u, bytes, 1)
  end, blocks)
  return r.kernel_us[1], m:params()
end

describe("engine sharing", function()
  it("N blocks writing through one link together get the link's bandwidth", function()
    local B = 128 * 1024
    for _, n in ipairs({ 1, 2, 3, 8 }) do
      local t, p = ub_writes(n, B)
      local link = p.hccs_GBps * p.hccs_write_eff
      local core = p.mte3_bytes_per_cycle * p.core_ghz
      local stream = math.max(n * B / link, B / core)
      local want = p.issue_ns + stream + p.mte_setup_ns + p.hccs_alpha_ns
      assert.near(want / US, t, 2e-3)       -- ps rounding of the shared rate
    end
  end)

  it("two PEs writing to one PE through its switch port share it and finish together", function()
    -- first come first served would finish PE 0 at B / port and PE 1 at 2 B / port
    local B = 128 * 1024
    local m = lab.machine{ soc = "Ascend910_93", pes = 4 }
    local p = m:params()
    assert.equals("hccs", m:path(0, 2))
    assert.equals("hccs", m:path(1, 2))
    local d = m:malloc("int8", 2 * B)
    local r = m:launch(function(k)
      if k.pe > 1 then return end
      local u = k:ub("int8", B)
      k:mte_put_nbi(d:sub(k.pe * B, B), u, B, 2)
    end, 1)
    local port = p.hccs_GBps * p.hccs_write_eff
    local want = p.issue_ns + 2 * B / port + p.mte_setup_ns + p.hccs_alpha_ns
    assert.near(want / US, r.kernel_us[1], 2e-3)
    assert.near(want / US, r.kernel_us[2], 2e-3)
  end)

  it("a flow that is limited elsewhere leaves its share to the others", function()
    -- one block writes to PE 1 (link-bound), one copies locally (HBM-bound
    -- at 10 GB/s): the HBM of PE 0 carries only the local copy, so the link
    -- flow is not slowed by it
    local B = 128 * 1024
    local m = lab.machine{ pes = 2, hbm_GBps = 10 }
    local p = m:params()
    local d = m:malloc("int8", B)
    local g = m:alloc("int8", B)
    local r = m:launch(function(k)
      if k.pe ~= 0 then return end
      local u = k:ub("int8", B)
      if k.block == 0 then k:mte_put_nbi(d, u, B, 1) else k:data_copy(g, u, B) end
    end, 2)
    -- the put lands in PE 1's HBM (10 GB/s too), the local copy in PE 0's
    local hbm = B / p.hbm_GBps
    assert.near((p.issue_ns + hbm + p.mte_setup_ns + p.hccs_alpha_ns) / US,
                r.kernel_us[1], 2e-3)
  end)

  it("a pipe's next transfer, starting as its last one ends, shares from that instant on", function()
    -- block 0 puts B twice back to back, block 1 puts 4 B, all over one link:
    -- block 0's puts take half the link each (4 B / link in all), then block 1
    -- has it alone for its last 2 B. The share freed by the first put's end
    -- was once settled at the previous change (the start), which gave block 1
    -- the whole link from there on: 4.64 us instead of 5.43
    local B = 16 * 1024
    local m = lab.machine{ pes = 2 }
    local p = m:params()
    local d = m:malloc("int8", 8 * B)
    local r = m:launch(function(k)
      if k.pe ~= 0 then return end
      if k.block == 0 then
        local u = k:ub("int8", B)
        k:mte_put_nbi(d:sub(0, B), u, B, 1)
        k:mte_put_nbi(d:sub(B, B), u, B, 1)
      else
        k:mte_put_nbi(d:sub(4 * B, 4 * B), k:ub("int8", 4 * B), 4 * B, 1)
      end
    end, 2)
    local link = p.hccs_GBps * p.hccs_write_eff
    local want = p.issue_ns + 6 * B / link + p.mte_setup_ns + p.hccs_alpha_ns
    assert.near(want / US, r.kernel_us[1], 2e-3)
  end)

  it("counts the solver's work: a flow with room starts unsettled, shared ones are settled",
     function()
    local function program()
      local m = lab.machine{ pes = 2 }
      local d, g = m:malloc("int8", 1 << 20), m:alloc("int8", 4096)
      local s0 = m:flow_stats()
      m:launch(function(k) if k.pe == 0 then k:data_copy(g, k:ub("int8", 64), 64) end end, 1)
      local s1 = m:flow_stats()
      m:launch(function(k)
        if k.pe == 0 then k:mte_put_nbi(d:sub(k.block * 65536, 65536), k:ub("int8", 65536), 65536, 1) end
      end, 4)
      return s0, s1, m:flow_stats()
    end
    local s0, s1, s2 = program()
    assert.same({ starts = 0, continued = 0, settles = 0, rerated = 0, fills = 0, filled = 0 }, s0)
    assert.same({ starts = 1, continued = 0, settles = 0, rerated = 0, fills = 0, filled = 0 },
                s1)                                                       -- alone
    assert.equal(5, s2.starts)
    assert.is_true(s2.settles >= 1 and s2.rerated >= 4 and s2.fills >= s2.settles)
    -- each fill fills the flows the settle has so far, its last all it re-rates
    assert.is_true(s2.filled >= s2.rerated)
    assert.equal(s2.fills == s2.settles, s2.filled == s2.rerated)
    local _, _, again = program()
    assert.same(s2, again)                      -- deterministic, as the times are
  end)

  it("a pipe's chunks back to back over a shared link are one flow going on, not a settle each",
     function()
    -- two blocks pull 2 MiB each over one link, double-buffered in 95 KiB
    -- chunks: each block's reads follow one another on MTE2 with the same
    -- path and cap, so the rates never change between them (max-min rates
    -- depend on the flows' resources and caps alone). Re-rating at every
    -- chunk's end and start settled 23 instants and re-rated 44 flows
    local B = 2 * 1024 * 1024
    local m = lab.machine{ pes = 2 }
    local p = m:params()
    local s = m:malloc("int8", 2 * B)
    local d = m:alloc("int8", 2 * B)
    local f0 = m:flow_stats()
    local r = m:launch(function(k)
      if k.pe ~= 0 then return end
      op.get_pipelined(k, d:sub(k.block * B, B), s:sub(k.block * B, B), k:ub("int8", 190 * 1024),
                       B, 1)
    end, 2)
    local f1 = m:flow_stats()
    assert.equal(88, f1.starts - f0.starts)     -- 22 chunks x (MTE2 read, MTE3 write) x 2
    assert.equal(42, f1.continued - f0.continued)   -- every read but each block's first
    assert.is_true(f1.settles - f0.settles <= 2, (f1.settles - f0.settles) .. " settles")
    assert.is_true(f1.rerated - f0.rerated <= 2, (f1.rerated - f0.rerated) .. " re-rated")
    local bound = 2 * B / (p.hccs_GBps * p.hccs_read_eff) / US
    assert.is_true(r.kernel_us[1] >= bound)
    assert.is_true(r.kernel_us[1] <= bound * 1.03, r.kernel_us[1] .. " us vs " .. bound)
  end)

  it("a double-buffered put from two blocks keeps the link busy", function()
    local B = 4 * 1024 * 1024
    local m = lab.machine{ pes = 2 }
    local p = m:params()
    local s = m:alloc("int8", B)
    local d = m:malloc("int8", B)
    local r = m:launch(function(k)
      if k.pe ~= 0 then return end
      local half = B // 2
      op.put_pipelined(k, d:sub(k.block * half, half), s:sub(k.block * half, half),
                       k:ub("int8", 190 * 1024), half, 1)
    end, 2)
    local bound = B / (p.hccs_GBps * p.hccs_write_eff) / US
    assert.is_true(r.kernel_us[1] >= bound)
    assert.is_true(r.kernel_us[1] <= bound * 1.03, r.kernel_us[1] .. " us vs " .. bound)
  end)

  it("many cores reading their own HBM at once share it", function()
    local B = 190 * 1024
    local m = lab.machine{ pes = 1 }
    local p = m:params()
    local g = m:alloc("int8", B * 48)
    local r = m:launch(function(k)
      local u = k:ub("int8", B)
      k:data_copy(u, g:sub(k.block * B, B), B)
    end, 48)
    local core = p.mte2_bytes_per_cycle * p.core_ghz
    assert.is_true(48 * core > p.hbm_GBps)   -- the HBM binds
    local want = p.issue_ns + 48 * B / p.hbm_GBps + p.mte_setup_ns + p.local_alpha_ns
    assert.near(want / US, r.kernel_us[1], 2e-3)
  end)

  it("an 8-PE allgather of 16 MiB per PE is within 5% of its bound (reads over 7 links)", function()
    local r = runner.run("allgather", { pes = 8, count = 4 * 1024 * 1024, dtype = "int32",
                                        warmup = 0, iters = 1, baseline = "none" })
    local p = lab.soc("Ascend910B")
    -- pulled: each PE reads 16 MiB from each peer over that peer's link to it
    local bound = 16 * 1024 * 1024 / (p.hccs_GBps * p.hccs_read_eff) / US + p.hccs_alpha_ns / US
    local lat = r.record.latency_us
    assert.is_true(lat >= bound, lat .. " us below the bound " .. bound)
    assert.is_true(lat <= bound * 1.05, lat .. " us vs bound " .. bound)
    assert.near(bound, r.record.bound_us, 1e-3)   -- the record's own bound says the same
  end)
  describe("the A3 supernode", function()
    it("puts every die of up to 768 on one switch fabric, SIO within a card", function()
      local m = lab.machine{ soc = "Ascend910_93", pes = 128 }
      assert.equals(768, m:params().supernode_dies)
      assert.equals("sio", m:path(0, 1))
      assert.equals("hccs", m:path(0, 2))
      assert.equals("hccs", m:path(3, 127))   -- EP128 crosses no RDMA
    end)

    it("goes over RDMA only between supernodes, a NIC per die", function()
      local B = 64 * 1024
      local m = lab.machine{ soc = "Ascend910_93", pes = 8, supernode_dies = 4 }
      local p = m:params()
      assert.equals("hccs", m:path(0, 3))
      assert.equals("rdma", m:path(0, 4))
      local d = m:malloc("int8", 2 * B)
      local r = m:launch(function(k)         -- both dies of card 0 -> die 4
        if k.pe > 1 then return end
        local u = k:ub("int8", B)
        k:mte_put_nbi(d:sub(k.pe * B, B), u, B, 4)
      end, 1)
      local want = p.issue_ns + 2 * B / p.rdma_GBps + p.mte_setup_ns + p.rdma_alpha_ns
      assert.near(want / US, r.kernel_us[1], 2e-3)
      assert.near(want / US, r.kernel_us[2], 2e-3)
    end)

    it("refuses a supernode without a switch or of a part of a card", function()
      assert.has_error(function() lab.machine{ pes = 4, supernode_dies = 2 } end,
        "bad argument #1 to 'machine' (profile figure 'supernode_dies' is out of range)")
      assert.has_error(function()
        lab.machine{ soc = "Ascend910_93", pes = 4, supernode_dies = 3 }
      end, "bad argument #1 to 'machine' (profile figure 'supernode_dies' is out of range)")
    end)
  end)
end)
