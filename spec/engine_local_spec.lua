-- Local data movement the operators asked for: Duplicate, LocalTensor to
-- LocalTensor DataCopy (both on the V pipe) and the UB-source MTE put.
local lab = require("shmemlab")

describe("local data movement", function()
  it("duplicate fills a UB tensor with a scalar on the V pipe, every dtype", function()
    for _, dt in ipairs({ "int8", "int32", "int64", "fp16", "bf16", "fp32" }) do
      local m = lab.machine{ pes = 1, check = "initcheck" }
      local out = m:alloc(dt, 16)
      local before, after
      m:launch(function(k)
        local ub = k:ub(dt, 16)
        k:duplicate(ub, 3, 16)
        before = k:get_value(ub, 5)                -- V has not finished: not there yet
        k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
        k:data_copy_pad(out, ub, 16)
        k:set_flag("V_S", 0); k:wait_flag("V_S", 0)
        after = k:get_value(ub, 15)
      end, 1)
      assert.equal(3, after)
      assert.are_not.equal(3, before)
      local want = m:host(dt, 16):fill("const", 3)
      assert.equal(0, (out:on(0):compare(want)))
    end
  end)

  it("data_copy between two UB tensors copies on V and costs vec_setup + bytes / rate", function()
    local m = lab.machine{ pes = 1 }
    local p = m:params()
    local src = m:alloc("int32", 1024):fill("iota")
    local out = m:alloc("int32", 1024)
    local t_copy
    local r = m:launch(function(k)
      local a, b = k:ub("int32", 1024), k:ub("int32", 1024)
      k:data_copy(a, src, 1024)
      k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
      local t0 = k:system_cycle()
      k:data_copy(b, a, 1024)
      k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
      k:data_copy(out, b, 1024)
      k:pipe_barrier("V")
      t_copy = k:system_cycle() - t0
    end, 1)
    assert.equal(0, (out:compare(src)))
    local ns = p.vec_setup_ns + 4096 / (p.vec_bytes_per_cycle * p.core_ghz)
    assert.is_true(t_copy >= math.floor(ns * p.cycle2us / 1000))
    assert.is_true(r.kernel_us[1] > 0)
  end)

  it("mte_put_nbi(dst, ub, n, pe, id) puts a UB tensor straight to a peer", function()
    local m = lab.machine{ pes = 2, check = "racecheck" }
    local dst = m:malloc("int32", 64)
    local sig = m:malloc("int32", 8)
    m:launch(function(k)
      if k.pe == 0 then
        local ub = k:ub("int32", 64)
        for i = 0, 63 do k:set_value(ub, i, 100 + i) end
        k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
        k:mte_put_nbi(dst, ub, 64, 1, 0)
        k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
        k:signal_op(sig, 1, lab.SIGNAL_SET, 1)
      else
        k:signal_wait_until(sig, lab.CMP_EQ, 1)
      end
    end, 1)
    assert.same({ 100, 101, 163 }, { dst:on(1):read(0), dst:on(1):read(1), dst:on(1):read(63) })
    assert.same({}, m:check_reports())
    local ok, err = pcall(function() m:launch(function(k)
      local ub = k:ub("int32", 8)
      k:mte_put_nbi(dst, ub, 65, 1, 0)
    end, 1) end)
    assert.is_false(ok)
    assert.matches("out of bounds: read mte_put_nbi of 260 bytes", err, 1, true)
  end)
end)
