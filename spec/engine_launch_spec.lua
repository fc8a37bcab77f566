-- m:launch's own bookkeeping (core/lshmemlab_launch.c): the kernel table's strings
-- and the results a block resumes with.

local H = require("spec.helpers.engine")
local lab = H.lab

describe("m:launch with a kernel table", function()
  -- m:launch read the table's name and type, then replaced the table on its
  -- stack by the kernel function and popped the strings: nothing referred to
  -- them any more, and a collection during the launch freed them before the
  -- task rows were written (heap-use-after-free under make test-asan; the
  -- rows got garbage names in a plain build when the memory was reused).
  it("keeps the name and type alive while a collection runs in the kernel", function()
    local m = lab.machine{ pes = 2 }
    local name = string.rep("a_long_kernel_name_", 8) .. "x"
    local ktype = string.rep("AIV_TYPE_", 6) .. "y"
    for round = 1, 3 do
      -- built on the fly: the launch holds the only reference to the table
      m:launch({ name = name:sub(1, -2) .. round, type = ktype:sub(1, -2) .. round,
                 kernel = function(k)
                   collectgarbage(); collectgarbage()
                   -- fresh strings of the same size reuse the freed memory
                   local junk = {}
                   for i = 1, 64 do junk[i] = string.rep(string.char(64 + i % 26), #name) end
                   k:pipe_barrier("ALL")
                   collectgarbage()
                   return #junk
                 end }, 2)
      local rows = m:tasks(0)
      local last = rows[#rows]
      assert.are.equal(name:sub(1, -2) .. round, last.name)
      assert.are.equal(ktype:sub(1, -2) .. round, last.type)
      assert.are.equal(name:sub(1, -2) .. round, m:tasks(1)[#m:tasks(1)].name)
    end
  end)

  it("a table without name or type records the defaults", function()
    local m = lab.machine{ pes = 1 }
    m:launch({ kernel = function(k) k:pipe_barrier("ALL") end }, 1)
    local rows = m:tasks(0)
    assert.are.equal("kernel", rows[#rows].name)
    assert.are.equal("AIV", rows[#rows].type)
  end)
end)

describe("m:launch's k tables, kept for the machine's later launches", function()
  -- a block's k is kept and refilled for the next launch that runs the same
  -- block: nothing a kernel did to it may show in a later launch
  local function fields(k)
    local t = {}
    for key, v in pairs(k) do if type(v) ~= "userdata" then t[key] = v end end
    return t
  end

  it("a field a kernel added, changed or removed is not there in the next launch", function()
    local m = lab.machine{ pes = 2 }
    local seen = {}
    m:launch(function(k) k.mine = k.pe; k.block = 99; k.n_pes = nil; k[3] = "x" end, 2)
    m:launch(function(k) seen[#seen + 1] = fields(k) end, 2)
    table.sort(seen, function(a, b) return a.pe * 10 + a.block < b.pe * 10 + b.block end)
    assert.are.equal(4, #seen)
    for i, f in ipairs(seen) do
      assert.are.same({ [1] = i - 1, pe = (i - 1) // 2, block = (i - 1) % 2, n_pes = 2,
                        block_num = 2 }, f)
    end
  end)

  -- a kept k is checked by its metatable, k[1] and k[2] (its four fields are
  -- written again); a key added to it goes through the block metatable's
  -- __newindex, which drops it: each change on its own, the six fields left as
  -- they were
  it("a key added alone, or in place of a removed field set back, does not stay", function()
    local kernels = {
      function(k) k.mine = 1 end,
      function(k) k[3] = "x" end,
      function(k) k.mine = 1; k.mine = nil end,
      function(k) local pe = k.pe; k.pe = nil; k.zz = true; k.pe = pe end,
      function(k) local n = k.n_pes; k.n_pes = nil; k.n_pes = n; k[0] = 0 end,
    }
    for i, kernel in ipairs(kernels) do
      local m = lab.machine{ pes = 1 }
      local kept
      m:launch(function(k) kept = k end, 1)
      m:launch(kernel, 1)
      local seen
      m:launch(function(k) seen = { same = rawequal(k, kept), f = fields(k) } end, 1)
      assert.are.same({ [1] = 0, pe = 0, block = 0, n_pes = 1, block_num = 1 }, seen.f, "kernel " .. i)
      assert.is_false(seen.same, "kernel " .. i)
    end
  end)

  it("a k whose fields a kernel changed or removed is the same table, its fields written again", function()
    local m = lab.machine{ pes = 2 }
    local first, seen = {}, {}
    m:launch(function(k)
      first[k.pe * 2 + k.block + 1] = k
      k.pe, k.block, k.block_num = -1, "x", 2.0
      k.n_pes = nil
    end, 2)
    m:launch(function(k)
      local i = k.pe * 2 + k.block + 1
      seen[i] = { same = rawequal(k, first[i]), f = fields(k), int = math.type(k.block_num) }
    end, 2)
    for i = 1, 4 do
      assert.are.same({ same = true, int = "integer", f = { [1] = i - 1, pe = (i - 1) // 2,
                        block = (i - 1) % 2, n_pes = 2, block_num = 2 } }, seen[i])
    end
  end)

  it("an untouched k is the same table in the next launch", function()
    local m = lab.machine{ pes = 1 }
    local first, second
    m:launch(function(k) first = k; local _ = k.pe + k.block end, 1)
    m:launch(function(k) second = k end, 1)
    assert.is_true(rawequal(first, second))
  end)

  it("a new block_dim gives every k its own PE, block and block_num", function()
    local m = lab.machine{ pes = 2 }
    m:launch(function(k) k:pipe_barrier("ALL") end, 4)
    local seen = {}
    m:launch(function(k) seen[#seen + 1] = { k.pe, k.block, k.block_num } end, 2)
    table.sort(seen, function(a, b) return a[1] * 10 + a[2] < b[1] * 10 + b[2] end)
    assert.are.same({ { 0, 0, 2 }, { 0, 1, 2 }, { 1, 0, 2 }, { 1, 1, 2 } }, seen)
  end)

  it("a metatable or a machine a kernel put in k does not stay", function()
    local m = lab.machine{ pes = 1 }
    m:launch(function(k) setmetatable(k, { __index = function() return 7 end }) end, 1)
    local got
    m:launch(function(k) got = { k.anything, k:my_pe() } end, 1)
    assert.are.same({ nil, 0 }, { got[1], got[2] })
    m:launch(function(k) k[2] = {} end, 1)
    assert.are.same({ 0 }, { m:launch(function(k) got = k:my_pe() end, 1) and got })
  end)

  -- k_reusable tells k[2] by the address of a full userdata (lua_touserdata):
  -- another machine's, or any other userdata, is not this machine's
  it("another userdata a kernel put at k[2], another machine's too, does not stay", function()
    local m, other = lab.machine{ pes = 1 }, lab.machine{ pes = 1 }
    for _, u in ipairs({ other, io.stdout }) do
      local kept, seen
      m:launch(function(k) kept = k; k[2] = u end, 1)
      m:launch(function(k) seen = { same = rawequal(k, kept), m = rawequal(k[2], m), pe = k:my_pe() } end, 1)
      assert.are.same({ same = false, m = true, pe = 0 }, seen)
    end
    m:close(); other:close()
  end)
end)

describe("a launch after launches that used every part of a block", function()
  -- sl_launch_begin clears each block only up to flagsite (core/sli.h): the
  -- arrays after it (flag tokens, frames, staged chunks, a waited set, pending
  -- UB ranges, merged kicks) keep what earlier launches left and are read only
  -- where this launch wrote them. A machine whose blocks went through all of
  -- them, and a launch that failed in the middle, times a launch exactly as a
  -- fresh one, checked runs too
  local N = 4096
  -- flags between pipes, frames, puts through UB chunks, a set wait on the
  -- flags every PE raises, a scalar read of UB behind pending copies; frame
  -- 7 left open when dirty (a prof_start with no prof_end)
  local function kernel(k, a)
    local ub = k:ub("int32", 1024)
    k:prof_start(3)
    k:set_flag("MTE2_MTE3", 1)
    k:wait_flag("MTE2_MTE3", 1)
    local per = N // (k.n_pes * k.block_num)
    local at = (k.pe * k.block_num + k.block) * per
    k:mte_put_nbi(a.dst:sub(at, per), a.src:sub(at, per), ub, 512, per, (k.pe + 1) % k.n_pes, 0)
    k:get_value(ub, 3)
    k:quiet()
    k:prof_end(3)
    if k.block == 0 then
      k:signal_op(a.flags:sub(k.pe, 1), a.round, lab.SIGNAL_SET, (k.pe + 1) % k.n_pes)
      k:wait_until_all(a.flags:sub((k.pe + k.n_pes - 1) % k.n_pes, 1), 1, nil, lab.CMP_EQ, a.round)
    end
    if a.dirty then k:prof_start(7) end
  end

  -- a launch that fails with its blocks mid-way: copies pending, staged
  -- chunks, frames open, the other blocks parked on a set no one raises
  local function failing(k, a)
    local ub = k:ub("int32", 1024)
    k:prof_start(5)
    k:set_flag("MTE3_MTE2", 2)
    k:mte_put_nbi(a.dst:sub(0, 2048), a.src:sub(0, 2048), ub, 512, 2048, 1, 0)
    if k.pe == 0 and k.block == 1 then k:system_cycle(); error("stop") end
    k:wait_until_all(a.flags:sub(0, 4), 4, nil, lab.CMP_EQ, 99)
  end

  -- machine m's buffers for kernel
  local function args(m, round, dirty)
    return { src = m:malloc("int32", N, "src"):fill("iota"), dst = m:malloc("int32", N, "dst"),
             flags = m:malloc("int32", 4, "flags"):fill("zero"), round = round, dirty = dirty }
  end

  for _, check in ipairs({ "", "synccheck" }) do
    it("times the same as on a fresh machine" .. (check ~= "" and " (check = synccheck)" or ""), function()
      local opts = { pes = 4, check = check ~= "" and check or nil }
      local used, fresh = lab.machine(opts), lab.machine(opts)
      local a = args(used, 1, true)
      used:launch(kernel, 8, a)
      assert.error_matches(function() used:launch(failing, 5, a) end, "stop")
      a.round, a.dirty = 2, false
      used:launch(kernel, 3, a)
      a.round = 3
      local r1 = used:launch(kernel, 6, a)
      local r2 = fresh:launch(kernel, 6, args(fresh, 3, false))
      assert.are.same(r2.kernel_us, r1.kernel_us)
      assert.are.equal(r2.e2e_us, r1.e2e_us)
    end)
  end
end)
