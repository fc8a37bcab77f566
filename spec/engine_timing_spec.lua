-- Engine timing: exact virtual times where the model is deterministic,
-- computed here from the profile figures (m:params()), never copied from a run.
--
-- The model (core/pipe.c, core/flow.c): a transfer of B bytes on an MTE pipe
-- starts streaming at max(S clock, pipe free) as a flow through the PE's HBM
-- and every link on its path, at the max-min fair rate, never above the core's
-- MTE rate (bytes_per_cycle * core_ghz); alone, that is
-- B / min(core rate, hbm_GBps, link_GBps * eff). The pipe takes its next
-- transfer when the last byte has streamed; the bytes land mte_setup_ns + the
-- path's alpha later (the fixed cost overlaps the next queued transfer).
-- Times are whole picoseconds: every term is rounded to 1 ps, so formulas
-- written with exact division agree to well under 1e-5 us.

local H = require("spec.helpers.engine")
local lab = H.lab

local US = 1000                 -- ns per us
local TOL = 1e-5                -- us: a few picoseconds of rounding

describe("engine timing", function()
  describe("local copies on one core", function()
    it("a 190 KiB GM -> UB data_copy takes issue + setup + bytes / MTE2 rate + alpha",
       function()
      local m = lab.machine{ pes = 1 }
      local p = m:params()
      local B = 190 * 1024
      local g = m:alloc("fp32", B // 4)
      local r = m:launch(function(k)
        local u = k:ub("fp32", B // 4)         -- k:ub costs one issue_ns on S
        k:data_copy(u, g, B // 4)
      end, 1)
      local core = p.mte_setup_ns + B / (p.mte2_bytes_per_cycle * p.core_ghz)
      local hbm = B / p.hbm_GBps                -- runs concurrently; smaller here
      assert.is_true(hbm < core)
      local want = p.issue_ns + math.max(core, hbm) + p.local_alpha_ns
      assert.near(want / US, r.kernel_us[1], 1e-6)
      -- 910B figures (32 B/cycle at 1.8 GHz, Ascend910B2.ini): 10 + 200 + 194560 / 57.6 + 300 ns
      assert.near((10 + 200 + 194560 / 57.6 + 300) / US, r.kernel_us[1], 1e-6)
    end)

    it("is HBM-bound when the HBM is slower than the core's MTE", function()
      local m = lab.machine{ pes = 1, hbm_GBps = 10 }
      local p = m:params()
      local B = 190 * 1024
      local g = m:alloc("fp32", B // 4)
      local r = m:launch(function(k)
        local u = k:ub("fp32", B // 4)
        k:data_copy(u, g, B // 4)
      end, 1)
      local core = p.mte_setup_ns + B / (p.mte2_bytes_per_cycle * p.core_ghz)
      local hbm = B / p.hbm_GBps
      assert.is_true(hbm > core)
      assert.near((p.issue_ns + p.mte_setup_ns + hbm + p.local_alpha_ns) / US,
                  r.kernel_us[1], 1e-6)
    end)

    it("a UB -> GM data_copy runs at the MTE3 rate", function()
      local m = lab.machine{ pes = 1 }
      local p = m:params()
      local B = 64 * 1024
      local g = m:alloc("int8", B)
      local r = m:launch(function(k)
        local u = k:ub("int8", B)
        k:data_copy(g, u, B)
      end, 1)
      local want = p.issue_ns + p.mte_setup_ns + B / (p.mte3_bytes_per_cycle * p.core_ghz)
                   + p.local_alpha_ns
      assert.near(want / US, r.kernel_us[1], TOL)
    end)

    it("copies on one pipe follow each other with overlapping latencies; MTE2 and MTE3 side by side",
       function()
      local m = lab.machine{ pes = 1 }
      local p = m:params()
      local B = 32 * 1024
      local g = m:alloc("int8", 2 * B)
      local busy2 = B / (p.mte2_bytes_per_cycle * p.core_ghz)
      local mte2 = p.mte_setup_ns + busy2 + p.local_alpha_ns
      local mte3 = p.mte_setup_ns + B / (p.mte3_bytes_per_cycle * p.core_ghz) + p.local_alpha_ns
      local serial = m:launch(function(k)
        local a, b = k:ub("int8", B), k:ub("int8", B)
        k:data_copy(a, g, B)
        k:data_copy(b, g:sub(B), B)          -- starts when the MTE2 pipe is free again
      end, 1)
      -- the second copy starts once the first has streamed (busy2), not landed:
      -- the pipe is busy for bytes / rate; setup and path latency overlap
      assert.near((2 * p.issue_ns + 2 * busy2 + p.mte_setup_ns + p.local_alpha_ns) / US,
                  serial.kernel_us[1], TOL)
      local side = m:launch(function(k)
        local a, b = k:ub("int8", B), k:ub("int8", B)
        k:data_copy(a, g, B)                 -- MTE2 from 2 issues on
        k:data_copy(g:sub(B), b, B)          -- MTE3 from 3 issues on
      end, 1)
      local want = math.max(2 * p.issue_ns + mte2, 3 * p.issue_ns + mte3)
      assert.near(want / US, side.kernel_us[1], TOL)
    end)

    it("a vector op takes vec_setup + bytes / vector rate on the V pipe", function()
      local m = lab.machine{ pes = 1 }
      local p = m:params()
      local n = 8192                          -- fp32: 32 KiB
      local r = m:launch(function(k)
        local a, b = k:ub("fp32", n), k:ub("fp32", n)
        k:muls(b, a, 2, n)
      end, 1)
      local want = 2 * p.issue_ns + p.vec_setup_ns + 4 * n / (p.vec_bytes_per_cycle * p.core_ghz)
      assert.near(want / US, r.kernel_us[1], TOL)
    end)
  end)

  describe("kernel_us and e2e_us", function()
    it("e2e = launch_us + kernel; a launch starts launch_us after the clock", function()
      local m = lab.machine{ pes = 2 }
      local p = m:params()
      local g = m:alloc("int8", 4096)
      local r1 = m:launch(function(k)
        if k.pe == 1 then
          local u = k:ub("int8", 4096)
          k:data_copy(u, g, 4096)
        end
      end, 1)
      assert.equals(2, #r1.kernel_us)
      assert.equals(0, r1.kernel_us[1])      -- PE 0 did nothing
      assert.is_true(r1.kernel_us[2] > 0)
      assert.equals(r1.kernel_us[2], r1.max_kernel_us)
      assert.near(p.launch_us, r1.start_us, 1e-9)
      assert.near(p.launch_us + r1.max_kernel_us, r1.e2e_us, 1e-9)
      assert.near(r1.start_us + r1.max_kernel_us, m:now(), 1e-9)
      local r2 = m:launch(function() end, 1)
      assert.near(r1.start_us + r1.max_kernel_us + p.launch_us, r2.start_us, 1e-9)
      assert.equals(p.launch_us, r2.e2e_us)
    end)

    it("m:memcpy costs host_setup_us + bytes / (host_GBps * 1e3) us and moves the clock",
       function()
      local m = lab.machine{ pes = 2 }
      local p = m:params()
      local n = 1024 * 1024                  -- int32: 4 MiB
      local h = m:host("int32", n)
      local g = m:alloc("int32", n)
      local t0 = m:now()
      local cost = m:memcpy(g:on(1), h)
      local want = p.host_setup_us + 4 * n / (p.host_GBps * 1e3)
      assert.near(want, cost, 1e-9)
      assert.near(t0 + want, m:now(), 1e-6)
      local r = m:launch(function() end, 1)
      assert.near(t0 + want + p.launch_us, r.start_us, 1e-6)
      local m2 = lab.machine{ pes = 2, host_GBps = 12 }   -- half the bandwidth
      local cost2 = m2:memcpy(m2:alloc("int32", n):on(0), m2:host("int32", n))
      assert.near(p.host_setup_us + 4 * n / (12 * 1e3), cost2, 1e-9)
    end)
  end)

  describe("remote paths", function()
    -- one put of B bytes from PE 0 to PE `to` through a UB of B bytes (one chunk):
    -- k:ub issue, then MTE2 from local GM, then (flag MTE2_MTE3) MTE3 over the path
    local function put_once(opts, to, B)
      local m = lab.machine(opts)
      local s = m:alloc("int8", B)
      local d = m:malloc("int8", B)
      local r = m:launch(function(k)
        if k.pe ~= 0 then return end
        local u = k:ub("int8", B)
        k:mte_put_nbi(d, s, u, B, B, to, 0)
      end, 1)
      return r.kernel_us[1], m:params(), m
    end

    -- the formula of put_once, with link_GBps and alpha_ns of the path
    local function put_formula(p, B, link_GBps, alpha_ns)
      local mte2 = p.mte_setup_ns + B / (p.mte2_bytes_per_cycle * p.core_ghz) + p.local_alpha_ns
      local mte3 = p.mte_setup_ns + math.max(B / (p.mte3_bytes_per_cycle * p.core_ghz),
                                             B / link_GBps, B / p.hbm_GBps) + alpha_ns
      return (p.issue_ns + mte2 + mte3) / US
    end

    local B = 64 * 1024

    it("a put to a PE of the same server goes over HCCS at hccs_GBps * hccs_write_eff",
       function()
      local t, p, m = put_once({ pes = 2 }, 1, B)
      assert.equals("hccs", m:path(0, 1))
      assert.near(put_formula(p, B, p.hccs_GBps * p.hccs_write_eff, p.hccs_alpha_ns), t, TOL)
      -- the link, not the core, is the bound here
      assert.is_true(B / (p.hccs_GBps * p.hccs_write_eff)
                     > p.mte_setup_ns + B / (p.mte3_bytes_per_cycle * p.core_ghz))
    end)

    it("a put to the own PE is a local copy", function()
      local t, p = put_once({ pes = 2 }, 0, B)
      assert.near(put_formula(p, B, math.huge, p.local_alpha_ns), t, TOL)
    end)

    it("changing hccs_GBps changes the time as the formula says", function()
      local t28, p28 = put_once({ pes = 2 }, 1, B)
      local t14, p14 = put_once({ pes = 2, hccs_GBps = 14 }, 1, B)
      assert.equals(14, p14.hccs_GBps)
      assert.near(put_formula(p14, B, 14 * p14.hccs_write_eff, p14.hccs_alpha_ns), t14, TOL)
      -- only the link term changed: the difference is B / (14 eff) - B / (28 eff)
      local eff = p28.hccs_write_eff
      assert.near((B / (14 * eff) - B / (p28.hccs_GBps * eff)) / US, t14 - t28, TOL)
    end)

    it("a get reads over HCCS at hccs_GBps * hccs_read_eff", function()
      local m = lab.machine{ pes = 2 }
      local p = m:params()
      local s = m:malloc("int8", B)
      local d = m:alloc("int8", B)
      local r = m:launch(function(k)
        if k.pe ~= 0 then return end
        local u = k:ub("int8", B)
        k:mte_get_nbi(d, s, u, B, B, 1, 0)
      end, 1)
      local mte2 = p.mte_setup_ns + math.max(B / (p.mte2_bytes_per_cycle * p.core_ghz),
                                             B / (p.hccs_GBps * p.hccs_read_eff)) + p.hccs_alpha_ns
      local mte3 = p.mte_setup_ns + B / (p.mte3_bytes_per_cycle * p.core_ghz) + p.local_alpha_ns
      assert.near((p.issue_ns + mte2 + mte3) / US, r.kernel_us[1], TOL)
    end)

    it("a put to another server (pes = 16, PE 0 -> PE 8) goes over RDMA, slower", function()
      local t, p, m = put_once({ pes = 16 }, 8, B)
      assert.equals("rdma", m:path(0, 8))
      assert.equals("hccs", m:path(0, 7))
      assert.equals("hccs", m:path(8, 15))
      assert.near(put_formula(p, B, p.rdma_GBps, p.rdma_alpha_ns), t, TOL)
      local hccs = put_once({ pes = 16 }, 1, B)
      assert.is_true(t > hccs)
    end)

    it("on Ascend910_93 the other die of a card is SIO, other cards HCCS", function()
      local t, p, m = put_once({ soc = "Ascend910_93", pes = 4 }, 1, B)
      assert.equals("sio", m:path(0, 1))
      assert.equals("sio", m:path(3, 2))
      assert.equals("hccs", m:path(0, 2))
      assert.equals("local", m:path(2, 2))
      assert.near(put_formula(p, B, p.sio_GBps, p.sio_alpha_ns), t, TOL)
      -- 16 dies per server, but the supernode's switch fabric spans servers
      local big = lab.machine{ soc = "Ascend910_93", pes = 32 }
      assert.equals("hccs", big:path(0, 15))
      assert.equals("hccs", big:path(0, 16))
    end)

    it("m:path_bytes counts the bytes of every leg exactly", function()
      local m = lab.machine{ pes = 16 }
      local n = 1000                         -- int32: 4000 bytes, not whole chunks
      local s = m:alloc("int32", n)
      local d = m:malloc("int32", n)
      local sig = m:malloc("int32", 1)
      assert.same({ ["local"] = 0, hccs = 0, sio = 0, rdma = 0 }, m:path_bytes())
      m:launch(function(k)
        if k.pe ~= 0 then return end
        local u = k:ub("int32", 256)
        k:mte_put_nbi(d, s, u, 1024, n, 1, 0)   -- MTE2 local + MTE3 hccs
        k:mte_put_nbi(d, s, u, 1024, n, 8, 0)   -- MTE2 local + MTE3 rdma
        k:mte_get_nbi(d, d, u, 1024, n, 3, 0)   -- MTE2 hccs + MTE3 local
        k:data_copy_pad(u, s, 10)               -- 40 bytes local
        k:signal_op(sig, 1, lab.SIGNAL_SET, 2)  -- signals are not counted
      end, 1)
      assert.same({ ["local"] = 3 * 4000 + 40, hccs = 2 * 4000, sio = 0, rdma = 4000 },
                  m:path_bytes())
    end)
  end)

  describe("links shared by concurrent transfers", function()
    -- blocks of PE 0 each push `per` bytes with mte_put_nbi through a 64 KiB UB,
    -- to PE 1 (one link) or spread over PEs 1..7 (seven links)
    local function push(opts, bd, per, spread)
      opts.pes = 8
      local m = lab.machine(opts)
      local e = per // 4
      local s = m:alloc("int32", bd * e)
      local d = m:malloc("int32", bd * e)
      local r = m:launch(function(k)
        if k.pe ~= 0 then return end
        local u = k:ub("int32", 16384)
        local to = spread and (k.block % 7) + 1 or 1
        k:mte_put_nbi(d:sub(k.block * e, e), s:sub(k.block * e, e), u, 65536, e, to, 0)
      end, bd)
      return r.kernel_us[1], m:params()
    end

    it("8 cores pushing 1 MiB each over one HCCS link share it", function()
      local t, p = push({}, 8, 1024 * 1024, false)
      local ideal = 8 * 1024 * 1024 / (p.hccs_GBps * p.hccs_write_eff) / US
      assert.is_true(t >= ideal)
      assert.is_true(t <= 1.15 * ideal, string.format("%.3f us vs ideal %.3f us", t, ideal))
    end)

    it("the same traffic over 7 different links runs in parallel", function()
      -- 42 blocks push 128 KiB each: all to PE 1, or 6 blocks per link to PEs 1..7
      local per = 128 * 1024
      local one, p = push({}, 42, per, false)
      local seven = push({}, 42, per, true)
      local link = p.hccs_GBps * p.hccs_write_eff
      assert.is_true(one >= 42 * per / link / US)
      assert.is_true(seven >= 6 * per / link / US)
      assert.is_true(seven <= 1.2 * one / 7,
                     string.format("%.3f us over 7 links vs %.3f us over one", seven, one))
    end)

    it("halving hccs_GBps about doubles the link-bound time", function()
      local t28 = push({}, 8, 1024 * 1024, false)
      local t14, p = push({ hccs_GBps = 14 }, 8, 1024 * 1024, false)
      local ideal = 8 * 1024 * 1024 / (14 * p.hccs_write_eff) / US
      assert.is_true(t14 >= ideal and t14 <= 1.15 * ideal)
      assert.is_true(t14 / t28 > 1.8 and t14 / t28 <= 2.0)
    end)
  end)

  describe("synchronisation costs", function()
    it("a signal lands signal_ns + path alpha after it is sent; the waiter wakes a poll later",
       function()
      local m = lab.machine{ pes = 2 }
      local p = m:params()
      local sig = m:malloc("int64", 1)
      local r = m:launch(function(k)
        if k.pe == 0 then k:signal_op(sig, 3, lab.SIGNAL_SET, 1)
        else k:signal_wait_until(sig, lab.CMP_EQ, 3) end
      end, 1)
      local lands = p.signal_ns + p.hccs_alpha_ns
      assert.near(lands / US, r.kernel_us[1], 1e-9)     -- the sender waits for it
      assert.near((lands + p.poll_ns) / US, r.kernel_us[2], 1e-9)
    end)

    it("barrier_all takes barrier_base + 2 * ceil(log2 n) * path alpha", function()
      for _, c in ipairs({ { 1, 0, "local_alpha_ns" }, { 2, 1, "hccs_alpha_ns" },
                           { 8, 3, "hccs_alpha_ns" }, { 16, 4, "rdma_alpha_ns" } }) do
        local m = lab.machine{ pes = c[1] }
        local p = m:params()
        local r = m:launch(function(k) k:barrier_all() end, 2)
        local want = p.barrier_base_ns + 2 * c[2] * p[c[3]]
        for pe = 1, c[1] do assert.near(want / US, r.kernel_us[pe], 1e-9) end
      end
    end)

    it("barrier_all starts from the last block to arrive", function()
      local m = lab.machine{ pes = 2 }
      local p = m:params()
      local g = m:alloc("int8", 4096)
      local r = m:launch(function(k)
        if k.pe == 1 then
          local u = k:ub("int8", 4096)
          k:data_copy(u, g, 4096)              -- barrier_all drains it first
        end
        k:barrier_all()
      end, 1)
      local late = p.issue_ns + p.mte_setup_ns + 4096 / (p.mte2_bytes_per_cycle * p.core_ghz)
                   + p.local_alpha_ns
      local want = late + p.barrier_base_ns + 2 * 1 * p.hccs_alpha_ns
      assert.near(want / US, r.kernel_us[1], TOL)
      assert.near(want / US, r.kernel_us[2], TOL)
    end)

    it("sync_all takes sync_all_ns after the last block of the PE", function()
      local m = lab.machine{ pes = 2 }
      local p = m:params()
      local r = m:launch(function(k) k:sync_all() end, 4)
      assert.near(p.sync_all_ns / US, r.kernel_us[1], 1e-9)
      assert.near(p.sync_all_ns / US, r.kernel_us[2], 1e-9)
    end)

    it("pipe_barrier costs pipe_barrier_ns after the pipe it waits for", function()
      local m = lab.machine{ pes = 1 }
      local p = m:params()
      local t = {}
      local r = m:launch(function(k)
        k:pipe_barrier("ALL")
        k:pipe_barrier()
        t[1] = k:system_cycle()
      end, 1)
      assert.near((2 * p.pipe_barrier_ns + p.scalar_ns) / US, r.kernel_us[1], 1e-9)
      assert.equals(1, #t)
    end)
  end)

  describe("system_cycle", function()
    for _, soc in ipairs({ "Ascend910B", "Ascend950" }) do
      it("ticks at cycle2us per us on " .. soc, function()
        local m = lab.machine{ soc = soc, pes = 1 }
        local p = m:params()
        local c = {}
        m:launch(function(k)
          c[1] = k:system_cycle()             -- costs scalar_ns first
          k:sync_all()
          c[2] = k:system_cycle()
        end, 1)
        -- counter = floor(t_us * cycle2us), t from the machine's time 0;
        -- a fresh machine's first launch starts at launch_us
        local t1 = p.launch_us * US + p.scalar_ns
        local t2 = t1 + p.sync_all_ns + p.scalar_ns
        assert.equals(math.floor(t1 / US * p.cycle2us), c[1])
        assert.equals(math.floor(t2 / US * p.cycle2us), c[2])
        assert.equals(soc == "Ascend910B" and 50 or 1000, p.cycle2us)
      end)
    end

    it("advances by about cycle2us per us of virtual time", function()
      local m = lab.machine{ pes = 1 }
      local p = m:params()
      local B = 190 * 1024
      local g = m:alloc("int8", B)
      local c = {}
      local r = m:launch(function(k)
        c[1] = k:system_cycle()
        local u = k:ub("int8", B)
        k:data_copy(u, g, B)
        k:pipe_barrier("ALL")
        c[2] = k:system_cycle()
      end, 1)
      local us = r.kernel_us[1] - 2 * p.scalar_ns / US   -- between the two reads
      assert.is_true(math.abs((c[2] - c[1]) - us * p.cycle2us) <= 1)
    end)
  end)
end)
