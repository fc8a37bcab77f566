-- The binding's fast paths between a primitive's Lua call and the engine
-- (issue 24): what they skip must not show. An event id is read as an integer
-- first (checkid): nil or none is 0, any other value that is no integer fails
-- as luaL_checkinteger words it. A primitive that catches up names itself as
-- the one to run again (lsl_kcheck's self, no lua_getinfo): a block ahead
-- that calls primitives returning values (k:system_cycle, k:my_pe, k:g,
-- k:signal_wait_until, k:ptr) and k:quiet gets what run_ahead = false gives.

local H = require("spec.helpers.engine")
local lab = H.lab

-- each block queues copies (it runs ahead), then calls primitives that catch
-- up and return values; what they returned, by block, and the times
local function ahead(run_ahead)
  local m = lab.machine{ pes = 2, run_ahead = run_ahead }
  local g = m:malloc("int32", 64, "g", "backed"):fill("iota_pe")
  local sig = m:malloc("int64", 8, "sig"):fill("const", 5)
  local seen = {}
  local r = m:launch(function(k)
    local u = k:ub("int32", 64, "backed")
    local got = {}
    for i = 1, 6 do
      k:data_copy(u, g:sub(8 * k.block, 32), 32)
      k:data_copy(g:sub(32 + 8 * k.block, 8), u, 8)
      got[#got + 1] = k:system_cycle()
      got[#got + 1] = k:my_pe()
      got[#got + 1] = k:g(g:sub(i, 1), (k.pe + 1) % k.n_pes)
      got[#got + 1] = k:signal_wait_until(sig:sub(k.block, 1), lab.CMP_GE, 5)
      got[#got + 1] = k:ptr(g, k.pe).n
      k:quiet()
    end
    seen[k.pe * 4 + k.block + 1] = got
  end, 4)
  return { now = m:now(), kernel_us = r.kernel_us, seen = seen }
end

describe("the binding's fast paths", function()
  it("an event id: nil and none are 0, an integer float is its integer, else Lua's error", function()
    local m = lab.machine{ pes = 1 }
    local g = m:alloc("int32", 8)
    local function run(id)
      return m:launch(function(k)
        local u = k:ub("int32", 8)
        k:data_copy(u, g, 8)
        k:set_flag("MTE2_S", id); k:wait_flag("MTE2_S", id)
      end, 1).e2e_us
    end
    assert.equals(run(0), run(nil))
    assert.equals(run(3), run(3.0))
    local function err(id)
      return H.launch_err(m, function(k) k:set_flag("MTE2_S", id) end, 1)
    end
    local e = err("x")
    assert.truthy(H.has(e, "bad argument #2 to 'set_flag' (number expected, got string)"), e)
    e = err(1.5)
    assert.truthy(H.has(e, "bad argument #2 to 'set_flag' (number has no integer representation)"), e)
    e = err({})
    assert.truthy(H.has(e, "bad argument #2 to 'set_flag' (number expected, got table)"), e)
    e = err(8)
    assert.truthy(H.has(e, "bad argument #2 to 'set_flag' (event id must be in 0..7)"), e)
    local s, d = m:alloc("int32", 8), m:malloc("int32", 8)
    e = H.launch_err(m, function(k)
      k:mte_put_nbi(d, s, k:ub("int32", 8), 32, 8, 0, false)
    end, 1)
    assert.truthy(H.has(e, "bad argument #7 to 'mte_put_nbi' (number expected, got boolean)"), e)
  end)

  it("a primitive that catches up runs again as itself: the values of run_ahead = false", function()
    local on, off = ahead(true), ahead(false)
    assert.are.equal(off.now, on.now)
    assert.are.same(off.kernel_us, on.kernel_us)
    assert.are.same(off.seen, on.seen)
    assert.are.equal(8, #on.seen)
    assert.are.equal(30, #on.seen[1])
  end)
end)
