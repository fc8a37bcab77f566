-- Engine errors: Lua-style argument errors, machine options, kernel faults
-- (PE, block, frame, virtual time, traceback), deadlocks, out-of-bounds
-- accesses that touch nothing, flag misuse, and a machine that stays usable.

local H = require("spec.helpers.engine")
local lab = H.lab

local DTYPES_HINT = "(int8 int16 int32 int64 uint8 fp16 bf16 fp32 uint16 uint32 uint64 fp64)"
local EVENTS_HINT = "(S_V S_MTE2 S_MTE3 V_S V_MTE2 V_MTE3 MTE2_S MTE2_V MTE2_MTE3 MTE3_S "
                    .. "MTE3_V MTE3_MTE2)"

-- run code in a fresh lua5.4 with env set; returns its output and exit status
local function subprocess(env, code)
  local file = os.tmpname()
  local f = assert(io.open(file, "w"))
  f:write(string.format("package.path = %q\npackage.cpath = %q\n", package.path,
                        package.cpath), code)
  f:close()
  local p = assert(io.popen(env .. " lua5.4 " .. file .. " 2>&1"))
  local out = p:read("a")
  local ok = p:close()
  os.remove(file)
  return out, ok
end

-- collect the messages of failing calls made inside a kernel (PE 0, block 0)
local function errors_in_kernel(m, body, block_dim)
  local msgs = {}
  m:launch(function(k)
    if k.pe ~= 0 or k.block ~= 0 then return end
    body(k, function(name, fn) msgs[name] = H.strip(H.err(fn)) end)
  end, block_dim or 1)
  return msgs
end

describe("engine errors", function()
  describe("argument errors in the style of Lua's libraries", function()
    it("host allocation: size, dtype, integer", function()
      local m = lab.machine{ pes = 2 }
      local msg = H.strip(H.err(function() return m:malloc("int32", 0) end))
      assert.matches("^bad argument #%d to 'malloc' %(size must be positive%)$", msg)
      assert.matches("^bad argument #%d to 'alloc' %(size must be positive%)$",
                     H.strip(H.err(function() return m:alloc("int32", -1) end)))
      assert.equals("bad argument #1 to 'alloc' (unknown dtype 'int33' " .. DTYPES_HINT .. ")",
                    H.strip(H.err(function() return m:alloc("int33", 1) end)))
      assert.equals("bad argument #2 to 'malloc' (number has no integer representation)",
                    H.strip(H.err(function() return m:malloc("int32", 1.5) end)))
      assert.matches("^bad argument #%d to 'host' %(size too large: 2199023255552 elements%)$",
                     H.strip(H.err(function() return m:host("int32", 2 ^ 41) end)))
      assert.equals("bad argument #1 to 'prof_pe' (PE 5 out of range 0..1)",
                    H.strip(H.err(function() return m:prof_pe(5) end)))
      assert.equals("bad argument #2 to 'path' (PE out of range)",
                    H.strip(H.err(function() return m:path(0, 2) end)))
    end)

    it("kernel primitives number their arguments from the first after k", function()
      local m = lab.machine{ pes = 2 }
      local g = m:alloc("int32", 8, "g")
      local sym = m:malloc("int32", 8, "sym")
      local f = m:malloc("fp32", 8, "f")
      local e = errors_in_kernel(m, function(k, try)
        local u = k:ub("int32", 8)
        try("ub_dtype", function() k:ub("int4", 4) end)
        try("ub_size", function() k:ub("int32", 0) end)
        try("view", function() k:data_copy(u, 5, 8) end)
        try("pipe", function() k:pipe_barrier("S") end)
        try("atomic_op", function() k:set_atomic("mul") end)
        try("atomic_dtype", function() k:set_atomic("add", "f16") end)
        try("sig_op", function() k:signal_op(sym, 1, 2, 1) end)
        try("sig_pe", function() k:signal_op(sym, 1, lab.SIGNAL_SET, 2) end)
        try("sig_float", function() k:signal_op(f, 1, lab.SIGNAL_SET, 1) end)
        try("sig_remote_gm", function() k:signal_op(g, 1, lab.SIGNAL_SET, 1) end)
        try("wait_cmp", function() k:signal_wait_until(sym, 9, 1) end)
        try("wait_float", function() k:signal_wait_until(f, lab.CMP_EQ, 1) end)
        try("put_ub", function() k:mte_put_nbi(sym, g, u, 64, 8, 1, 0) end)
        try("put_count", function() k:mte_put_nbi(sym, g, u, 32, 0, 1, 0) end)
        try("put_pe", function() k:mte_put_nbi(sym, g, u, 32, 8, 2, 0) end)
        try("put_id", function() k:mte_put_nbi(sym, g, u, 32, 8, 1, 8) end)
        try("put_dst", function() k:mte_put_nbi(g, g, u, 32, 8, 1, 0) end)
        try("put_gm", function() k:mte_put_nbi(u, g, u, 32, 8, 1, 0) end)
        try("get_src", function() k:mte_get_nbi(g, g, u, 32, 8, 1, 0) end)
        try("putmem_pe", function() k:putmem(sym, g, 8, 5) end)
        try("get_value_gm", function() k:get_value(g, 0) end)
        try("vec_count", function() k:add(u, u, u, 0) end)
        try("frame", function() k:prof_start(-1) end)
      end)
      assert.same({
        ub_dtype = "bad argument #1 to 'ub' (unknown dtype 'int4' " .. DTYPES_HINT .. ")",
        ub_size = "bad argument #2 to 'ub' (size must be positive)",
        view = "bad argument #2 to 'data_copy' (tensor view expected, got number)",
        pipe = "bad argument #1 to 'pipe_barrier' (pipe must be ALL, V, MTE2 or MTE3 "
               .. "(PIPE_S is a hardware error))",
        atomic_op = "bad argument #1 to 'set_atomic' (invalid option 'mul')",
        atomic_dtype = "bad argument #2 to 'set_atomic' (unknown dtype 'f16' " .. DTYPES_HINT .. ")",
        sig_op = "bad argument #3 to 'signal_op' (signal op must be SIGNAL_SET or SIGNAL_ADD)",
        sig_pe = "bad argument #4 to 'signal_op' (PE 2 out of range 0..1)",
        sig_float = "bad argument #1 to 'signal_op' (signal must be an integer element, got fp32)",
        sig_remote_gm = "bad argument #1 to 'signal_op' (a remote signal must be a symmetric "
                        .. "address)",
        wait_cmp = "bad argument #2 to 'signal_wait_until' (comparison must be CMP_EQ..CMP_LE "
                   .. "(0..5), got 9)",
        wait_float = "bad argument #1 to 'signal_wait_until' (signal must be an integer "
                     .. "element, got fp32)",
        put_ub = "bad argument #4 to 'mte_put_nbi' (UB buffer too small: ub_bytes 64, the UB "
                 .. "tensor holds 32 bytes and one int32 is 4)",
        put_count = "bad argument #5 to 'mte_put_nbi' (element count must be positive)",
        put_pe = "bad argument #6 to 'mte_put_nbi' (PE 2 out of range 0..1)",
        put_id = "bad argument #7 to 'mte_put_nbi' (event id must be in 0..7)",
        put_dst = "bad argument #1 to 'mte_put_nbi' (destination must be a symmetric address)",
        put_gm = "bad argument #1 to 'mte_put_nbi' (GM address expected, got UB)",
        get_src = "bad argument #2 to 'mte_get_nbi' (source must be a symmetric address)",
        putmem_pe = "bad argument #4 to 'putmem' (PE 5 out of range 0..1)",
        get_value_gm = "bad argument #1 to 'get_value' (UB tensor expected, got GM)",
        vec_count = "bad argument #4 to 'add' (count must be positive)",
        frame = "bad argument #1 to 'prof_start' (frame must be >= 0)",
      }, e)
    end)

    it("block_dim must be 1..aiv_cores", function()
      local m = lab.machine{ pes = 2 }
      local cores = m:params().aiv_cores
      for _, bd in ipairs({ 0, cores + 1 }) do
        local msg = H.launch_err(m, function() end, bd)
        H.contains(msg, string.format("(block_dim must be in 1..%d (AIV cores per PE), got %d)",
                                      cores, bd))
        assert.matches("bad argument #2 to 'launch'", msg, 1, true)
      end
      m:launch(function() end, cores)         -- the limits themselves are fine
      m:launch(function() end, 1)
    end)
  end)

  describe("machine options", function()
    it("rejects unknown options, wrong types and bad PE counts", function()
      assert.equals("bad argument #1 to 'machine' (unknown option 'foo')",
                    H.strip(H.err(function() lab.machine{ foo = 1 } end)))
      assert.equals("bad argument #1 to 'machine' (option 'hccs_GBps' must be a number)",
                    H.strip(H.err(function() lab.machine{ hccs_GBps = "x" } end)))
      assert.equals("bad argument #1 to 'machine' (pes must be a positive integer)",
                    H.strip(H.err(function() lab.machine{ pes = 0 } end)))
      assert.equals("bad argument #1 to 'machine' (pes must be a positive integer)",
                    H.strip(H.err(function() lab.machine{ pes = 2.5 } end)))
      assert.equals("bad argument #1 to 'machine' (table expected, got string)",
                    H.strip(H.err(function() lab.machine("Ascend910B") end)))
    end)

    it("names the profile figure that is out of range", function()
      H.contains(H.err(function() lab.machine{ hccs_GBps = -1 } end),
                 "profile figure 'hccs_GBps' is out of range")
      H.contains(H.err(function() lab.machine{ ub_bytes = 16 } end),
                 "profile figure 'ub_bytes' is out of range")
    end)

    it("rejects an unknown SoC, listing the known ones", function()
      H.contains(H.err(function() lab.machine{ soc = "Foo" } end),
                 "unknown SoC 'Foo'; known: Ascend910B, Ascend910_93, Ascend950")
    end)

    it("rejects a prof_pe that is not a PE of the machine", function()
      for _, v in ipairs({ 2, -2, "x", 1.5 }) do
        assert.equals(string.format("option prof_pe=%s is not a PE number of this machine "
                                    .. "(0..1)", tostring(v)),
                      H.strip(H.err(function() lab.machine{ pes = 2, prof_pe = v } end)))
      end
      assert.equals(1, lab.machine{ pes = 2, prof_pe = 1 }:prof_pe())
      assert.equals(-1, lab.machine{ pes = 2, prof_pe = false }:prof_pe())
    end)

    it("reads SHMEM_CYCLE_PROF_PE, rejects a bad one, and the option wins", function()
      local code = [[
        local lab = require("shmemlab")
        local ok, e = pcall(lab.machine, { pes = 2 })
        print(ok and ("pe=" .. e:prof_pe()) or ("error: " .. e))
        print("option=" .. lab.machine{ pes = 2, prof_pe = 0 }:prof_pe())
      ]]
      local out = subprocess("SHMEM_CYCLE_PROF_PE=abc", code)
      H.contains(out, "error: SHMEM_CYCLE_PROF_PE=abc is not a PE number of this machine (0..1)",
                 "option=0")
      out = subprocess("SHMEM_CYCLE_PROF_PE=7", code)
      H.contains(out, "error: SHMEM_CYCLE_PROF_PE=7 is not a PE number of this machine (0..1)")
      out = subprocess("SHMEM_CYCLE_PROF_PE=1", code)
      H.contains(out, "pe=1", "option=0")
      out = subprocess("SHMEM_CYCLE_PROF_PE=", code)
      H.contains(out, "pe=-1")
    end)
  end)

  describe("kernel faults", function()
    it("name PE, block, virtual time, the kernel's file:line and a traceback", function()
      local m = lab.machine{ pes = 2 }
      local p = m:params()
      local line
      local msg = H.launch_err(m, function(k)
        if k.pe == 1 and k.block == 1 then
          k:pipe_barrier("ALL")               -- the block's clock: pipe_barrier_ns
          line = H.line(); error("boom")
        end
      end, 2)
      H.contains(msg, string.format("kernel fault on PE 1 block 1 at %.3f us: %s:%d: boom",
                                    p.pipe_barrier_ns / 1000, H.here(), line),
                 "stack traceback:", string.format("%s:%d: in function", H.here(), line))
      assert.is_falsy(H.has(msg, "in frame"))
    end)

    it("name the innermost frame open in k:prof_start", function()
      local m = lab.machine{ pes = 2 }
      local msg = H.launch_err(m, function(k)
        if k.pe == 0 then
          k:prof_start(3)
          k:prof_start(5)
          k:prof_end(5)
          error("inside 3")
        end
      end, 1)
      H.contains(msg, "kernel fault on PE 0 block 0 in frame 3 at ", ": inside 3",
                 "stack traceback:")
    end)

    it("say so when the error object is not a string", function()
      local m = lab.machine{ pes = 1 }
      H.contains(H.launch_err(m, function() error({}) end, 1), "(error object is not a string)")
    end)

    it("coroutine.yield inside a kernel is a fault", function()
      local m = lab.machine{ pes = 1 }
      local msg = H.launch_err(m, function() coroutine.yield(1) end, 1)
      H.contains(msg, "kernel fault on PE 0 block 0 at 0.000 us: coroutine.yield() inside a "
                      .. "kernel: a block yields only through the engine's primitives",
                 "stack traceback:")
    end)

    it("a launch inside a kernel is a fault", function()
      local m = lab.machine{ pes = 1 }
      local msg = H.launch_err(m, function() m:launch(function() end, 1) end, 1)
      H.contains(msg, "kernel fault on PE 0 block 0", "launch inside a running launch")
    end)

    it("host-side calls inside a kernel are errors", function()
      local m = lab.machine{ pes = 2 }
      local g = m:alloc("int32", 8, "g")
      local h = m:host("int32", 8, "h")
      local e = errors_in_kernel(m, function(_, try)
        try("read", function() g:on(0):read(0) end)
        try("fill", function() g:fill("const", 1) end)
        try("alloc", function() m:alloc("int32", 1) end)
        try("free", function() m:free(g) end)
        try("memcpy", function() m:memcpy(g:on(0), h) end)
      end)
      assert.same({
        read = "host-side access inside a kernel: use the block's primitives",
        fill = "host-side access inside a kernel: use the block's primitives",
        alloc = "cannot allocate during a launch",
        free = "cannot free during a launch",
        memcpy = "memcpy during a launch",
      }, e)
    end)

    it("a stale k (after its launch, or another block's) is an error", function()
      local m = lab.machine{ pes = 1 }
      local saved, other
      m:launch(function(k)
        if k.block == 0 then saved = k; k:sync_all()
        else
          k:sync_all()
          other = H.strip(H.err(function() saved:quiet() end))
        end
      end, 2)
      local stale = "primitive called outside its block's run (a stale k, another block's k, "
                    .. "after the launch, or from a coroutine inside the kernel)"
      assert.equals(stale, other)
      assert.equals(stale, H.strip(H.err(function() saved:quiet() end)))
      assert.equals("calling a primitive without its block: use k:name(...)",
                    H.strip(H.err(function() saved.quiet() end)))
    end)

    it("a UB tensor of an earlier launch is rejected", function()
      local m = lab.machine{ pes = 1 }
      local old
      m:launch(function(k) old = k:ub("int32", 8) end, 1)
      local e = errors_in_kernel(m, function(k, try)
        try("old", function() k:get_value(old, 0) end)
      end)
      assert.equals("bad argument #1 to 'get_value' (UB tensor of an earlier launch)", e.old)
    end)
  end)

  describe("flags", function()
    it("wait_flag without set_flag, set_flag twice, bad names and ids", function()
      local m = lab.machine{ pes = 1 }
      local e = errors_in_kernel(m, function(k, try)
        try("wait", function() k:wait_flag("MTE2_S") end)
        try("wait_mte2", function() k:wait_flag("MTE3_MTE2", 7) end)
        k:set_flag("MTE3_S", 1)
        try("twice", function() k:set_flag("MTE3_S", 1) end)
        k:wait_flag("MTE3_S", 1)
        k:set_flag("MTE3_S", 1)               -- after the wait it may be set again
        k:wait_flag("MTE3_S", 1)
        try("name", function() k:set_flag("MTE2_X") end)
        try("same_pipe", function() k:wait_flag("MTE2_MTE2") end)
        try("id8", function() k:set_flag("MTE2_S", 8) end)
        try("id_neg", function() k:wait_flag("S_V", -1) end)
      end)
      assert.same({
        wait = "wait_flag(MTE2_S, 0) on PE 0 block 0 without a matching set_flag: the S pipe "
               .. "would wait forever",
        wait_mte2 = "wait_flag(MTE3_MTE2, 7) on PE 0 block 0 without a matching set_flag: the "
                    .. "MTE2 pipe would wait forever",
        twice = "set_flag(MTE3_S, 1) on PE 0 block 0: the flag is already set (set twice "
                .. "without a wait_flag)",
        name = "bad argument #1 to 'set_flag' ('MTE2_X' is not an AIV hard event " .. EVENTS_HINT
               .. ")",
        same_pipe = "bad argument #1 to 'wait_flag' ('MTE2_MTE2' is not an AIV hard event "
                    .. EVENTS_HINT .. ")",
        id8 = "bad argument #2 to 'set_flag' (event id must be in 0..7)",
        id_neg = "bad argument #2 to 'wait_flag' (event id must be in 0..7)",
      }, e)
      assert.equals(12, #lab.events)
    end)

    it("hard events by number (lab.EVENT, issue 11) are the named ones, range-checked", function()
      local function run(ev)
        local m = lab.machine{ pes = 1 }
        local g = m:alloc("int32", 8)
        return m:launch(function(k)
          local u = k:ub("int32", 8)
          k:data_copy(u, g, 8)
          k:set_flag(ev, 3); k:wait_flag(ev, 3)
        end, 1).e2e_us
      end
      assert.equals(run("MTE2_S"), run(lab.EVENT.MTE2_S))
      assert.equals(12, (function() local c = 0 for _ in pairs(lab.EVENT) do c = c + 1 end return c end)())
      for i, name in ipairs(lab.events) do assert.equals(i - 1, lab.EVENT[name]) end
      local m = lab.machine{ pes = 1 }
      for _, bad in ipairs({ 12, -1, 1.5 }) do
        local msg = H.launch_err(m, function(k) k:set_flag(bad) end, 1)
        assert.truthy(H.has(msg, "bad argument #1 to 'set_flag' (hard event number out of range)"), msg)
      end
    end)

    it("event ids are independent flags", function()
      local m = lab.machine{ pes = 1 }
      assert.has_no.errors(function()
        m:launch(function(k)
          for id = 0, 7 do k:set_flag("V_S", id) end
          for id = 7, 0, -1 do k:wait_flag("V_S", id) end
        end, 1)
      end)
    end)
  end)

  describe("deadlock and time-out reports", function()
    it("list each block and what it waits for", function()
      local m = lab.machine{ pes = 2 }
      local sig = m:malloc("int32", 4, "sig")
      local msg = H.launch_err(m, function(k)
        if k.pe == 1 then k:signal_wait_until(sig:sub(2), lab.CMP_GE, 5)
        elseif k.block == 0 then k:barrier_all()
        else k:sync_all() end
      end, 2)
      H.contains(msg, "deadlock at ", " us of the kernel: every block waits and nothing is pending:\n",
                 "  PE 0 block 0 (at 0.000 us): barrier_all (1 of 4 blocks arrived)\n",
                 "  PE 0 block 1 (at 0.000 us): sync_all (1 of 2 blocks of PE 0 arrived)\n",
                 "  PE 1 block 0 (at 0.100 us): signal_wait_until(sig[2] on PE 1, CMP_GE, 5): "
                 .. "current value 0\n",
                 "  PE 1 block 1 (at 0.100 us): signal_wait_until(sig[2] on PE 1, CMP_GE, 5): "
                 .. "current value 0\n")
    end)

    it("show the current value of a remote signal and skip finished blocks", function()
      local m = lab.machine{ pes = 2 }
      local sig = m:malloc("int64", 1, "flag"):fill("const", 3)
      local msg = H.launch_err(m, function(k)
        if k.pe == 1 then k:signal_wait_until(k:ptr(sig, 0), lab.CMP_EQ, 5) end
      end, 1)
      H.contains(msg, "  PE 1 block 0 (at 1.100 us): signal_wait_until(flag[0] on PE 0, CMP_EQ, "
                      .. "5): current value 3\n")
      assert.is_falsy(H.has(msg, "PE 0 block 0"))
    end)

    it("a run past time_limit_us stops with the blocks still running", function()
      local m = lab.machine{ pes = 1, time_limit_us = 20 }
      local s = m:malloc("int32", 8)
      local msg = H.launch_err(m, function(k)
        local u = k:ub("int32", 8)
        repeat                                -- polls a flag nobody sets
          k:data_copy(u, s, 8)
          H.sync(k, "MTE2_S")
        until k:get_value(u, 0) == 1
      end, 1)
      H.contains(msg, "virtual-time limit of 20 us reached; blocks still waiting:\n",
                 "  PE 0 block 0 (at 20.", "): ready, beyond the time limit")
    end)
  end)

  describe("out-of-bounds accesses", function()
    it("in GM name buffer, offset, length, PE and block, and touch nothing", function()
      local m = lab.machine{ pes = 2 }
      local g = m:alloc("int32", 16, "g"):fill("const", 5)
      local guard = m:alloc("int32", 16, "guard"):fill("const", 9)
      local msg = H.launch_err(m, function(k)
        local u = k:ub("int32", 16)
        if k.pe == 1 then
          for i = 0, 15 do k:set_value(u, i, -1) end
          k:data_copy(g:sub(8), u, 16)        -- 64 bytes from element 8 of 16
        end
      end, 1)
      H.contains(msg, "kernel fault on PE 1 block 0",
                 "out of bounds: write data_copy of 64 bytes at byte offset 32 of GM buffer "
                 .. "'g' on PE 1 (64 bytes) by PE 1 block 0")
      assert.same({ 0 }, { g:compare(m:host("int32", 16):fill("const", 5)) })
      assert.same({ 0 }, { guard:compare(m:host("int32", 16):fill("const", 9)) })
    end)

    it("in UB leave the next UB allocation (the guard) unchanged", function()
      local m = lab.machine{ pes = 1 }
      local g = m:alloc("int32", 16):fill("iota", 1)
      local r = {}
      m:launch(function(k)
        local a = k:ub("int32", 8)            -- [0, 32)
        local guard = k:ub("int32", 8)        -- [32, 64): right after a
        for i = 0, 7 do k:set_value(guard, i, 99) end
        r.copy = H.strip(H.err(function() k:data_copy(a:sub(4), g, 8) end))
        r.set = H.strip(H.err(function() k:set_value(a, 8, 1) end))
        r.get = H.strip(H.err(function() k:get_value(a, -1) end))
        r.vec = H.strip(H.err(function() k:add(a, a, a, 9) end))
        k:pipe_barrier("ALL")
        r.guard = {}
        for i = 0, 7 do r.guard[i + 1] = k:get_value(guard, i) end
      end, 1)
      assert.equals("out of bounds: write data_copy of 32 bytes at byte offset 16 of UB of PE 0 "
                    .. "core 0 (32 bytes) by PE 0 block 0", r.copy)
      assert.equals("out of bounds: write set_value of 4 bytes at byte offset 32 of UB of PE 0 "
                    .. "core 0 (32 bytes) by PE 0 block 0", r.set)
      assert.equals("out of bounds: read get_value of 4 bytes at byte offset -4 of UB of PE 0 "
                    .. "core 0 (32 bytes) by PE 0 block 0", r.get)
      assert.equals("out of bounds: write vector op of 36 bytes at byte offset 0 of UB of PE 0 "
                    .. "core 0 (32 bytes) by PE 0 block 0", r.vec)
      assert.same({ 99, 99, 99, 99, 99, 99, 99, 99 }, r.guard)
    end)

    it("on a remote PE's symmetric buffer name that PE and write nothing", function()
      local m = lab.machine{ pes = 2 }
      local src = m:alloc("int32", 8):fill("const", 1)
      local dst = m:malloc("int32", 8, "dst"):fill("const", 7)
      local guard = m:malloc("int32", 8, "guard"):fill("const", 9)
      local msg = H.launch_err(m, function(k)
        if k.pe == 1 then
          local u = k:ub("int32", 8)
          k:mte_put_nbi(dst:sub(6), src, u, 32, 4, 0, 0)   -- elements 6..9 of 8
        end
      end, 1)
      H.contains(msg, "kernel fault on PE 1 block 0",
                 "out of bounds: write mte_put_nbi of 16 bytes at byte offset 24 of symmetric "
                 .. "heap buffer 'dst' on PE 0 (32 bytes) by PE 1 block 0")
      assert.same({ 7, 7, 7, 7, 7, 7, 7, 7 }, dst:on(0):read(0, 8))   -- not even 6 and 7
      assert.same({ 9, 9 }, guard:on(0):read(0, 2))
    end)

    it("on the host side name the buffer and the range", function()
      local m = lab.machine{ pes = 1 }
      local h = m:host("int32", 2, "hb")
      H.contains(H.err(function() return h:sub(1, 5):read(0, 5) end),
                 "out of bounds: ", "host access of 20 bytes at byte offset 4 of host buffer "
                 .. "'hb' on PE 0 (8 bytes)")
    end)

    it("on a signal name the buffer", function()
      local m = lab.machine{ pes = 2 }
      local sig = m:malloc("int32", 2, "sig")
      local e = errors_in_kernel(m, function(k, try)
        try("op", function() k:signal_op(sig:sub(2, 1), 1, lab.SIGNAL_SET, 1) end)
        try("wait", function() k:signal_wait_until(sig:sub(2, 1), lab.CMP_EQ, 1) end)
      end)
      assert.equals("out of bounds: write signal_op of 4 bytes at byte offset 8 of symmetric "
                    .. "heap buffer 'sig' on PE 1 (8 bytes) by PE 0 block 0", e.op)
      assert.equals("out of bounds: read signal_wait_until of 4 bytes at byte offset 8 of "
                    .. "symmetric heap buffer 'sig' on PE 0 (8 bytes) by PE 0 block 0", e.wait)
    end)
  end)

  describe("after a failed launch", function()
    -- a good launch and its kernel time
    local function good(m, g, out)
      local r = m:launch(function(k)
        local u = k:ub("int32", 64)
        k:data_copy(u, g, 64)
        H.sync(k, "MTE2_MTE3")
        k:data_copy(out, u, 64)
      end, 2)
      return r.kernel_us[1]
    end

    it("the machine is usable and buffers keep their content", function()
      local fresh = lab.machine{ pes = 2 }
      local t_fresh = good(fresh, fresh:alloc("int32", 64):fill("iota"), fresh:alloc("int32", 64))

      local m = lab.machine{ pes = 2, time_limit_us = 50 }
      local g = m:alloc("int32", 64, "g"):fill("iota")
      local keep = m:malloc("int32", 64, "keep"):fill("const", 4)
      local sig = m:malloc("int32", 1, "sig")
      local failures = {
        fault = function(k)
          local u = k:ub("int32", 64)
          for i = 0, 63 do k:set_value(u, i, -1) end
          k:data_copy(keep, u, 64)            -- in flight when the fault stops the launch
          error("stop")
        end,
        oob = function(k) k:data_copy(k:ub("int32", 64), g:sub(32), 64) end,
        deadlock = function(k) k:signal_wait_until(sig, lab.CMP_EQ, 1) end,
        flag = function(k) k:wait_flag("V_S") end,
        timeout = function(k)
          local u = k:ub("int32", 8)
          repeat k:data_copy(u, sig, 8); H.sync(k, "MTE2_S") until k:get_value(u, 0) == 1
        end,
      }
      for _, name in ipairs({ "fault", "oob", "deadlock", "flag", "timeout" }) do
        H.launch_err(m, failures[name], 2)
        local out = m:alloc("int32", 64)
        assert.near(t_fresh, good(m, g, out), 1e-9)   -- same time as on a fresh machine
        assert.same({ 0 }, { out:compare(g) })
        assert.same({ 0 }, { keep:compare(m:host("int32", 64):fill("const", 4)) })
        assert.equals(0, sig:on(0):read(0))
      end
    end)

    it("so is it after an error no kernel raised: a stack too full for the arguments", function()
      local fresh = lab.machine{ pes = 2 }
      local t_fresh = good(fresh, fresh:alloc("int32", 64):fill("iota"), fresh:alloc("int32", 64))
      local m = lab.machine{ pes = 2 }
      local g = m:alloc("int32", 64, "g"):fill("iota")
      local args = {}
      for i = 1, 999000 do args[i] = i end    -- fits the call, not the blocks' copies of it
      local ok, err = pcall(m.launch, m, function() end, 2, table.unpack(args))
      assert.is_false(ok)
      assert.matches("too many kernel arguments", err, 1, true)
      local out = m:alloc("int32", 64)
      assert.near(t_fresh, good(m, g, out), 1e-9)       -- it launches, as a fresh machine
      assert.same({ 0 }, { out:compare(g) })
    end)
  end)
end)
