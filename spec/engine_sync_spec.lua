-- Engine synchronisation: signals and their waits, put_signal ordering,
-- quiet / fence, barrier_all, sync_all and what a block knows about itself.

local H = require("spec.helpers.engine")
local lab = H.lab

describe("engine synchronisation", function()
  describe("identity of a block", function()
    it("k.pe k.n_pes k.block k.block_num and my_pe()", function()
      local m = lab.machine{ pes = 3 }
      local seen, n = {}, 0
      m:launch(function(k)
        seen[k.pe * 10 + k.block] = { k.pe, k.n_pes, k.block, k.block_num, k:my_pe() }
        n = n + 1
      end, 2)
      assert.equals(6, n)
      for pe = 0, 2 do
        for b = 0, 1 do
          assert.same({ pe, 3, b, 2, pe }, seen[pe * 10 + b])
        end
      end
    end)
  end)

  describe("signal_op", function()
    it("SET writes the value, ADD adds to it, on the PE named", function()
      local m = lab.machine{ pes = 2 }
      local sig = m:malloc("int64", 2, "sig"):fill("const", 1)
      m:launch(function(k)
        if k.pe == 0 and k.block == 0 then
          k:signal_op(sig, 10, lab.SIGNAL_SET, 1)
          k:signal_op(sig, 3, lab.SIGNAL_ADD, 1)    -- lands after the SET
          k:signal_op(sig:sub(1), 42, lab.SIGNAL_SET, 0)
        end
        k:signal_op(sig:sub(1), 5, lab.SIGNAL_ADD, 1)  -- every block of every PE
      end, 4)
      assert.same({ 13, 1 + 8 * 5 }, sig:on(1):read(0, 2))
      assert.same({ 1, 42 }, sig:on(0):read(0, 2))
      assert.equals(0, lab.SIGNAL_SET)
      assert.equals(1, lab.SIGNAL_ADD)
    end)
  end)

  describe("signal_wait_until", function()
    local CMPS = { "CMP_EQ", "CMP_NE", "CMP_GT", "CMP_GE", "CMP_LT", "CMP_LE" }
    -- the signal holds 10; each of these is true at once
    local AT_ONCE = { CMP_EQ = 10, CMP_NE = 9, CMP_GT = 9, CMP_GE = 10, CMP_LT = 11, CMP_LE = 10 }
    -- the signal holds 10 and PE 0 adds step three times (10 + step, + 2 step,
    -- + 3 step): {compare with, step, value returned, which add satisfied it}
    local LATER = {
      CMP_EQ = { 16, 3, 16, 2 }, CMP_NE = { 10, 3, 13, 1 }, CMP_GT = { 15, 3, 16, 2 },
      CMP_GE = { 16, 3, 16, 2 }, CMP_LT = { 10, -3, 7, 1 }, CMP_LE = { 4, -3, 4, 2 },
    }

    it("numbers the comparisons like CANN SHMEM (EQ 0 .. LE 5)", function()
      for i, name in ipairs(CMPS) do assert.equals(i - 1, lab[name]) end
    end)

    for _, name in ipairs(CMPS) do
      it(name .. " satisfied at once returns the value after one poll", function()
        local m = lab.machine{ pes = 1 }
        local p = m:params()
        local sig = m:malloc("int32", 1):fill("const", 10)
        local got
        local r = m:launch(function(k)
          got = k:signal_wait_until(sig, lab[name], AT_ONCE[name])
        end, 1)
        assert.equals(10, got)
        assert.near(p.poll_ns / 1000, r.kernel_us[1], 1e-9)   -- one local poll
      end)

      it(name .. " waits for a signal from another PE and returns the value that "
         .. "satisfied it", function()
        local m = lab.machine{ pes = 2 }
        local p = m:params()
        local sig = m:malloc("int32", 1):fill("const", 10)
        local c = LATER[name]
        local got
        local r = m:launch(function(k)
          if k.pe == 0 then
            for _ = 1, 3 do k:signal_op(sig, c[2], lab.SIGNAL_ADD, 1) end
          else
            got = k:signal_wait_until(sig, lab[name], c[1])
          end
        end, 1)
        assert.equals(c[3], got)
        assert.equals(10 + 3 * c[2], sig:on(1):read(0))   -- all three landed
        -- add i lands at i * signal_ns + hccs_alpha_ns; the waiter wakes one
        -- local poll later
        local wake = c[4] * p.signal_ns + p.hccs_alpha_ns + p.poll_ns
        assert.near(wake / 1000, r.kernel_us[2], 1e-9)
      end)
    end

    it("can wait on a remote address (k:ptr(sig, pe))", function()
      local m = lab.machine{ pes = 2 }
      local p = m:params()
      local sig = m:malloc("int64", 1, "sig")
      local got
      local r = m:launch(function(k)
        if k.pe == 0 then
          k:signal_op(sig, 5, lab.SIGNAL_SET, 0)      -- PE 0 sets its own copy
        else
          got = k:signal_wait_until(k:ptr(sig, 0), lab.CMP_EQ, 5)
        end
      end, 1)
      assert.equals(5, got)
      assert.equals(0, sig:on(1):read(0))
      -- the set lands at signal_ns + local_alpha_ns; a remote poll costs
      -- poll_ns + 2 * hccs_alpha_ns and the waiter wakes one poll after it lands
      local poll = p.poll_ns + 2 * p.hccs_alpha_ns
      local lands = p.signal_ns + p.local_alpha_ns
      assert.near((lands + poll) / 1000, r.kernel_us[2], 1e-9)
    end)

    it("wakes every waiter of a signal, on every block", function()
      local m = lab.machine{ pes = 2 }
      local sig = m:malloc("int32", 1)
      local woke = {}
      m:launch(function(k)
        if k.pe == 0 then
          if k.block == 0 then k:signal_op(sig, 1, lab.SIGNAL_SET, 1) end
        else
          local v = k:signal_wait_until(sig, lab.CMP_EQ, 1)
          woke[#woke + 1] = v                  -- (not in one statement: the key
                                               -- would be taken before the wait)
        end
      end, 4)
      assert.same({ 1, 1, 1, 1 }, woke)
    end)

    it("is woken by a copy landing on the signal (hcomm Record from UB)", function()
      local m = lab.machine{ pes = 2 }
      local flag = m:malloc("int32", 8, "flag")
      local got
      m:launch(function(k)
        if k.pe == 0 then
          local u = k:ub("int32", 8)
          k:set_value(u, 0, 77)
          H.sync(k, "S_MTE3")
          k:data_copy_pad(k:ptr(flag, 1), u, 1)
        else
          got = k:signal_wait_until(flag, lab.CMP_EQ, 77)
        end
      end, 1)
      assert.equals(77, got)
    end)
  end)

  describe("ordering of puts and signals", function()
    local N = 4096                              -- 16 KiB, one chunk of a 16 KiB UB

    -- PE 0 puts N int32 to PE 1 and signals; PE 1 waits for the signal, then
    -- reads the data with a data_copy; returns what PE 1 saw and the source
    local function seen_after(how)
      local m = lab.machine{ pes = 2 }
      local src = m:alloc("int32", N, "src"):fill("iota", 1)
      local dst = m:malloc("int32", N, "dst")
      local sig = m:malloc("int32", 1, "sig")
      local seen = m:alloc("int32", N, "seen")
      m:launch(function(k)
        if k.pe == 0 then
          local u = k:ub("int32", N)
          if how == "put_signal" then
            k:put_signal(dst, src, N, sig, 1, lab.SIGNAL_SET, 1)
            return
          elseif how == "putmem" then
            k:putmem(dst, src, N, 1)
          else
            k:mte_put_nbi(dst, src, u, N * 4, N, 1, 0)
            if how == "quiet" then k:quiet() elseif how == "fence" then k:fence() end
          end
          k:signal_op(sig, 1, lab.SIGNAL_SET, 1)
        else
          k:signal_wait_until(sig, lab.CMP_EQ, 1)
          local u = k:ub("int32", N)
          k:data_copy(u, dst, N)
          H.sync(k, "MTE2_MTE3")
          k:data_copy(seen, u, N)
        end
      end, 1)
      return seen:on(1), src:on(0)
    end

    it("without quiet the last MTE3 is still in flight when the signal lands", function()
      local seen = seen_after("none")
      assert.equals(0, seen:read(0))
      assert.equals(0, seen:read(N - 1))
    end)

    for _, how in ipairs({ "quiet", "fence", "putmem", "put_signal" }) do
      it("with " .. how .. " the data lands before the signal", function()
        local seen, src = seen_after(how)
        assert.same({ 0 }, { seen:compare(src) })
      end)
    end
  end)

  describe("barrier_all", function()
    -- every block writes pe * 100 + block + 1 into slot[block] of its own PE,
    -- then (maybe) barrier_all, then reads every PE's slots through UB
    local function run(barrier)
      local m = lab.machine{ pes = 4 }
      local bd = 3
      local slots = m:malloc("int64", bd, "slots")
      local junk = m:alloc("int64", bd, "junk")
      local slow = m:alloc("int8", 65536)
      local bad = 0
      m:launch(function(k)
        if k.pe == 0 and k.block == bd - 1 then   -- one late writer, read first
          local w = k:ub("int8", 65536)
          k:data_copy(w, slow, 65536)
          H.sync(k, "MTE2_S")
        end
        local v = k:ub("int64", 4)
        k:set_value(v, 0, k.pe * 100 + k.block + 1)
        H.sync(k, "S_MTE3")
        k:data_copy_pad(slots:sub(k.block, 1), v, 1)
        if barrier then k:barrier_all() end
        local u = k:ub("int64", bd)
        for p = 0, k.n_pes - 1 do
          k:mte_get_nbi(junk, slots, u, bd * 8, bd, p, 0)
          k:quiet()
          for b = 0, bd - 1 do
            if k:get_value(u, b) ~= p * 100 + b + 1 then bad = bad + 1 end
          end
        end
      end, bd)
      return bad
    end

    it("makes a value written by every block before it visible to every block", function()
      assert.equals(0, run(true))
    end)

    it("(control) without it some block reads a slot before it is written", function()
      assert.is_true(run(false) > 0)
    end)
  end)

  describe("sync_all", function()
    local function run(sync)
      local m = lab.machine{ pes = 2 }
      local bd = 4
      local slots = m:alloc("int32", 8, "slots")
      local slow = m:alloc("int8", 65536)
      local bad = 0
      m:launch(function(k)
        if k.block == bd - 1 then              -- one late writer per PE
          local w = k:ub("int8", 65536)
          k:data_copy(w, slow, 65536)
          H.sync(k, "MTE2_S")
        end
        local v = k:ub("int32", 8)
        k:set_value(v, 0, k.pe * 10 + k.block + 1)
        H.sync(k, "S_MTE3")
        k:data_copy_pad(slots:sub(k.block, 1), v, 1)
        if sync then k:sync_all() end
        k:data_copy(v, slots, 8)
        H.sync(k, "MTE2_S")
        for b = 0, bd - 1 do
          if k:get_value(v, b) ~= k.pe * 10 + b + 1 then bad = bad + 1 end
        end
      end, bd)
      return bad
    end

    it("makes what the blocks of one PE wrote before it visible to each other", function()
      assert.equals(0, run(true))
    end)

    it("(control) without it some block reads too early", function()
      assert.is_true(run(false) > 0)
    end)

    it("waits for the blocks of its own PE only", function()
      local m = lab.machine{ pes = 2 }
      local p = m:params()
      local g = m:alloc("int8", 65536)
      local r = m:launch(function(k)
        if k.pe == 1 and k.block == 1 then     -- one slow block on PE 1
          local u = k:ub("int8", 65536)
          k:data_copy(u, g, 65536)
        end
        k:sync_all()
      end, 2)
      assert.near(p.sync_all_ns / 1000, r.kernel_us[1], 1e-9)   -- PE 0 did not wait
      assert.is_true(r.kernel_us[2] > 65536 / (p.mte2_bytes_per_cycle * p.core_ghz) / 1000)
    end)
  end)

  describe("quiet and fence", function()
    it("hold the block until its own transfers have completed", function()
      local m = lab.machine{ pes = 2 }
      local src = m:alloc("int32", 64):fill("iota")
      local dst = m:malloc("int32", 64)
      local t = {}
      m:launch(function(k)
        if k.pe ~= 0 then return end
        local u = k:ub("int32", 64)
        t[1] = k:system_cycle()
        k:mte_put_nbi(dst, src, u, 256, 64, 1, 0)
        t[2] = k:system_cycle()                 -- issuing costs (almost) nothing
        k:quiet()
        t[3] = k:system_cycle()
        k:mte_put_nbi(dst, src, u, 256, 64, 1, 0)
        k:fence()
        t[4] = k:system_cycle()
      end, 1)
      assert.is_true(t[2] - t[1] <= 1)
      assert.is_true(t[3] - t[2] > 10)          -- more than 0.2 us at 50 per us
      assert.is_true(t[4] - t[3] > 10)
    end)
  end)
end)
