-- Timing-only mode (lab.machine{data = false}, --timing-only): buffers hold no
-- bytes unless allocated "backed" (signals, flags, routes: what steers control
-- flow), every copy, reduction, signal, flag and barrier is timed as in data
-- mode. Every operator and its baseline on 2, 3, 8 and 16 PEs gives the same
-- virtual times, frames and task rows in both modes; host reads of unbacked
-- data, signals on unbacked buffers and get_value of unbacked UB are errors;
-- memcheck works, racecheck and initcheck are refused; no per-byte memory.

local lab = require("shmemlab")
local runner = require("shmemlab.runner")
local helpers = require("spec.helpers.ops")

-- one measured run (warm-up 1, iters 1) in data or timing-only mode
local function run(name, opts, timing_only)
  local o = { timing_only = timing_only }
  for k, v in pairs(opts) do o[k] = v end
  return helpers.run(name, o)
end

-- every task row of every PE of a measured run's machine
local function task_rows(res, pes)
  local rows = {}
  for pe = 0, pes - 1 do rows[pe] = res.machine:tasks(pe) end
  return rows
end

-- what a measured run says about time: per-PE times, launches, bytes per path,
-- the frames of every PE, the cycle profile and the task rows
local function timing_of(res, pes)
  return { per_pe = res.per_pe, e2e_us = res.e2e_us, launches = res.launches,
           path_bytes = res.path_bytes, frames = res.frames, prof = res.prof.rows,
           tasks = task_rows(res, pes) }
end

-- run op name with opts in both modes; both agree on every timing figure
local function assert_same(name, opts)
  local a, b = run(name, opts, false), run(name, opts, true)
  for _, side in ipairs({ "shmem", "baseline" }) do
    assert.is_not_nil(b[side], name .. ": no " .. side)
    assert.are.same(timing_of(a[side], opts.pes), timing_of(b[side], opts.pes),
                    name .. " " .. side .. " on " .. opts.pes .. " PEs")
    assert.are.equal(0, a[side].check.wrong)
    assert.are.equal("timing-only", b[side].check.unchecked)
  end
  assert.are.same(a.frames.rows, b.frames.rows)
  assert.are.equal(a.record.latency_us, b.record.latency_us)
  return a, b
end

describe("timing-only mode: every op and its baseline as in data mode", function()
  for _, name in ipairs(runner.list()) do
    for _, pes in ipairs(helpers.PES) do
      it(name .. " on " .. pes .. " PEs", function()
        local opts = { pes = pes }
        if name ~= "dispatch" and name ~= "combine" then opts.count = 3000 end
        assert_same(name, opts)
      end)
    end
  end

  it("INT8 dispatch: the quantiser's scale is read from backed UB", function()
    for _, pes in ipairs({ 2, 8 }) do
      assert_same("dispatch", { pes = pes, dispatch_dtype = "int8" })
    end
  end)

  it("inputs beyond the HCCL buffer and the symmetric budget (several launches)", function()
    local a = assert_same("allgather", { pes = 3, count = 70000, sym_bytes = 4096,
                                         overrides = { hccl_buffer_bytes = 65536 } })
    assert.is_true(a.baseline.launches > 1)
  end)

  it("the result check line says the output was not checked", function()
    local r = run("allgather", { pes = 2, count = 64 }, true)
    local text = runner.text(r)
    assert.truthy(text:find("check shmemlab allgather: not checked (timing-only)", 1, true))
    assert.truthy(text:find("| prof PE 0 | timing-only (no data)\n", 1, true))
    assert.is_nil(runner.text(run("allgather", { pes = 2, count = 64 }, false)):find("no data"))
    assert.is_false(runner.any_wrong(r))
  end)
end)

describe("timing-only mode: what holds bytes", function()
  it("host reads of unbacked data are refused; writes to it are dropped", function()
    local m = lab.machine{ pes = 2, data = false }
    assert.is_true(m:timing_only())
    local buf = m:alloc("int32", 64, "big"):fill("iota")
    local host = m:host("int32", 64, "ref", "backed"):fill("const", 7)
    for _, f in ipairs({ function() return buf:on(0):read(0) end,
                         function() return buf:on(1):raw() end,
                         function() return buf:checksum() end,
                         function() return buf:on(0):compare(host) end,
                         function() return host:copy(buf:on(1)) end }) do
      local ok, e = pcall(f)
      assert.is_false(ok)
      assert.truthy(tostring(e):find("buffer 'big' has no data in a timing-only run", 1, true))
    end
    buf:on(0):copy(host)                     -- into unbacked: nothing to write
    assert.are.equal(7, host:read(3))        -- backed bytes are real
    assert.are.equal(false, lab.machine{ pes = 1 }:timing_only())
  end)

  it("signals and flags need backed memory; backed ones work as in data mode", function()
    local m = lab.machine{ pes = 2, data = false }
    local plain = m:malloc("int32", 8, "plain")
    local sig = m:malloc("int32", 8, "sig", "backed"):fill("zero")
    local ok, e = pcall(m.launch, m, function(k, a)
      k:signal_op(a.plain, 1, lab.SIGNAL_SET, 0)
    end, 1, { plain = plain })
    assert.is_false(ok)
    assert.truthy(tostring(e):find("signal_op: buffer 'plain' holds no data", 1, true))
    ok, e = pcall(m.launch, m, function(k, a)
      k:wait_signal_value(a.sig, k:ub("int32", 8), 8, lab.CMP_EQ, 0)
    end, 1, { sig = sig })
    assert.is_false(ok)
    assert.truthy(tostring(e):find("wait_signal_value: UB that holds no data", 1, true))
    m:launch(function(k, a)
      k:signal_op(a.sig, 5, lab.SIGNAL_ADD, 1 - k.pe)
      k:signal_wait_until(a.sig, lab.CMP_GE, 5)
    end, 1, { sig = sig })
    assert.are.equal(5, sig:on(0):read(0))
    assert.are.equal(5, sig:on(1):read(0))
  end)

  it("get_value of unbacked UB is an error; backed UB keeps what lands in it", function()
    local m = lab.machine{ pes = 1, data = false }
    local gm = m:alloc("int32", 64, "gm")
    local flag = m:alloc("int32", 8, "flag", "backed"):fill("const", 3)
    local got = {}
    m:launch(function(k, a)
      local ub, f, z = k:ub("int32", 64), k:ub("int32", 8, "backed"), k:ub("int32", 8, "backed")
      k:set_value(ub, 0, 9)                  -- dropped
      k:data_copy(f, a.flag, 8)              -- backed from backed: the bytes
      k:data_copy(z, a.gm, 8)                -- backed from unbacked: zeros
      k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
      got.flag, got.zero = k:get_value(f, 0), k:get_value(z, 0)
      got.ok, got.err = pcall(k.get_value, k, ub, 0)
    end, 1, { gm = gm, flag = flag })
    assert.are.same({ 3, 0, false }, { got.flag, got.zero, got.ok })
    assert.truthy(tostring(got.err):find("get_value of UB that holds no data", 1, true))
    local ok, e = pcall(m.launch, m, function(k) k:ub("int32", 8, "bytes") end, 1, {})
    assert.is_false(ok)
    assert.truthy(tostring(e):find("invalid option 'bytes'", 1, true))
  end)
end)

describe("timing-only mode: check modes", function()
  it("memcheck reports the same out-of-bounds accesses without data", function()
    local function reports(data)
      local m = lab.machine{ pes = 2, data = data, check = "memcheck" }
      local buf = m:malloc("int32", 64, "buf")
      m:launch(function(k, a)
        local ub = k:ub("int32", 128)
        k:data_copy(ub, a.buf, 128)          -- 64 elements past the end
        k:mte_put_nbi(a.buf:sub(32), a.buf, ub, 512, 64, 1 - k.pe, 0)
      end, 1, { buf = buf })
      return m:check_reports()
    end
    local a, b = reports(true), reports(false)
    assert.is_true(#a >= 2)
    assert.are.same(a, b)
  end)

  it("synccheck works; racecheck and initcheck are refused with the reason", function()
    local m = lab.machine{ pes = 2, data = false, check = "synccheck" }
    m:launch(function(k) k:set_flag("MTE2_V", 0) end, 1, {})   -- never waited
    assert.is_true(#m:check_reports() > 0)
    for _, mode in ipairs({ "racecheck", "initcheck", "all" }) do
      local ok, e = pcall(lab.machine, { pes = 2, data = false, check = mode })
      assert.is_false(ok)
      assert.truthy(tostring(e):find("racecheck and initcheck keep a shadow of every byte", 1,
                                     true))
    end
    local ok, e = pcall(lab.machine, { pes = 2, data = 0 })
    assert.is_false(ok)
    assert.truthy(tostring(e):find("data must be a boolean", 1, true))
  end)
end)

-- resident set size of this process, bytes
local function rss()
  local f = assert(io.open("/proc/self/status"))
  local kb = f:read("a"):match("VmRSS:%s*(%d+) kB")
  f:close()
  return tonumber(kb) * 1024
end

describe("timing-only mode: memory", function()
  it("GM, the heap and UB take no memory per byte", function()
    collectgarbage()
    local before = rss()
    local m = lab.machine{ pes = 64, data = false, sym_heap_bytes = 1 << 34 }
    local out = m:alloc("int8", 1 << 30, "output")            -- 64 GiB over the PEs
    local sym = m:malloc("int8", 1 << 33, "sym")              -- 512 GiB
    local r = m:launch(function(k, a)
      local ub = k:ub("int8", 190 * 1024)                    -- 48 x 64 cores in all
      k:data_copy(ub, a.sym:sub(k.block * 190 * 1024), 190 * 1024)
      k:set_flag("MTE2_MTE3", 0); k:wait_flag("MTE2_MTE3", 0)
      k:data_copy(a.out:sub(k.block * 190 * 1024), ub, 190 * 1024)
    end, 48, { out = out, sym = sym })
    assert.is_true(r.kernel_us[1] > 0)
    assert.is_true(rss() - before < 256 * 1024 * 1024)
    m:close()
  end)
end)

describe("memory checked up front", function()
  local op = runner.load_op("allgather")

  it("counts every buffer of --count elements the server relay allocates", function()
    local c = runner.config(op, { pes = 32, count = 4096, algo = "hier", baseline = "none" })
    local m = lab.machine{ profile = c.profile, pes = c.pes, prof_pe = -1 }
    local s = op.setup(m, c)
    assert.is_true(s.server)                                -- the window of the other servers
    local esize = lab.core.dtype_size(c.dtype)
    local held = c.pes * m:heap_used() + (c.pes + 1) * #s.output * esize   -- + output, expect
    local need = runner.memory_need(op, c)
    assert.is_true(need.per_unit * need.units >= held * 0.999,
                   string.format("counted %d of the %d bytes held", need.per_unit * need.units, held))
    m:close()
    -- the baseline's machine holds the collective's buffers, not the relay's window
    local function per_unit(algo, baseline)
      return runner.memory_need(op, runner.config(op, { pes = 32, count = 4096, algo = algo,
                                                        baseline = baseline })).per_unit
    end
    assert.equal(per_unit("flat", "none"), per_unit("hier", "hccl") - per_unit("hier", "none"))
  end)

  -- the usage error of a config that cannot fit, or nil when it runs
  local function refusal(opts)
    local ok, e = pcall(runner.config, op, opts)
    if ok then return nil end
    assert.are.equal("usage", runner.kind(e), tostring(e))
    return e
  end

  it("refuses a data run with the figure, --timing-only and the --count that fit", function()
    local c = runner.config(op, { pes = 1024, count = 262144, mem_limit = 1 << 50 })
    local need = runner.memory_need(op, c)
    assert.is_true(need.data > 1 << 40)                     -- 1 TiB of output alone
    assert.is_true(need.timing_only < 1 << 32)              -- per block, not per byte
    local e = refusal({ pes = 1024, count = 262144, mem_limit = 1 << 40 })
    assert.are.same({ need = need.data, available = 1 << 40, timing_only = need.timing_only,
                      unit = "--count", max_units = ((1 << 40) - need.fixed) // need.per_unit },
                    e.memory)
    assert.truthy(tostring(e):find(string.format("1024 PEs at count 262144 need about %d bytes",
                                                 need.data), 1, true))
    assert.truthy(tostring(e):find(string.format("%d (1.0 TiB) are available (mem_limit): use "
      .. "--timing-only (about %d bytes) or a smaller --count (at most %d)", 1 << 40,
      need.timing_only, e.memory.max_units), 1, true))
    local fits = { pes = 1024, count = e.memory.max_units, mem_limit = 1 << 40 }
    assert.is_nil(refusal(fits))                            -- the count it names fits
    fits.count = fits.count + 1
    assert.is_not_nil(refusal(fits))                        -- and one more does not
    assert.is_nil(refusal({ pes = 1024, count = 262144, mem_limit = 1 << 40,
                            timing_only = true }))
  end)

  it("refuses a timing-only run that cannot hold its blocks, naming what to change", function()
    local e = refusal({ pes = 1024, count = 262144, mem_limit = 1 << 20, timing_only = true })
    assert.is_nil(e.memory.max_units)
    assert.truthy(tostring(e):find("of memory in timing-only mode", 1, true))
    assert.truthy(tostring(e):find("use fewer --pes or a smaller --block-dim", 1, true))
    e = refusal({ pes = 8, count = 1 << 20, mem_limit = 1 << 20 })   -- nothing fits
    assert.is_nil(tostring(e):find("--count", 1, true))
    assert.truthy(tostring(e):find("use fewer %-%-pes$"))
  end)

  it("MoE ops count tokens", function()
    local d = runner.load_op("dispatch")
    local c = runner.config(d, { pes = 1024, local_tokens = 128, hidden = 7168, topk = 8,
                                 mem_limit = 1 << 50 })
    local need = runner.memory_need(d, c)
    assert.are.equal("--tokens", need.unit)
    local ok, e = pcall(runner.config, d, { pes = 1024, local_tokens = 128, hidden = 7168,
                                            topk = 8, mem_limit = need.data - 1 })
    assert.is_false(ok)
    assert.are.equal(need.data, e.memory.need)
    assert.truthy(tostring(e):find("1024 PEs at tokens 128 need about", 1, true))
  end)

  it("takes the limit from SHMEMLAB_MEM_LIMIT, and refuses before allocating", function()
    local lua = arg and arg[-1] or "lua5.4"
    local p = io.popen("SHMEMLAB_MEM_LIMIT=4096 " .. lua .. " run_op.lua allgather --pes 1024 "
                       .. "--count 262144 2>&1; echo status=$?")
    local text = p:read("a")
    p:close()
    assert.truthy(text:find("are available (SHMEMLAB_MEM_LIMIT)", 1, true), text)
    assert.truthy(text:find("status=2", 1, true), text)
    local bad = refusal({ pes = 2, count = 64, mem_limit = -1 })
    assert.truthy(tostring(bad):find("mem_limit must be an integer >= 0", 1, true))
  end)
end)

describe("run_op.lua --timing-only", function()
  local cli_run = require("spec.helpers.cli").run

  it("runs the op and its baseline without data and says the result is not checked", function()
    local argv = { "allgather", "--pes", "3", "--count", "1000", "-w", "0", "-n", "1" }
    local s1, data = cli_run(argv)
    argv[#argv + 1] = "--timing-only"
    local s2, timed = cli_run(argv)
    assert.are.same({ 0, 0 }, { s1, s2 })
    assert.truthy(timed:find("check shmemlab allgather: not checked (timing-only)", 1, true))
    assert.truthy(timed:find("(emulated AIV orchestration): not checked (timing-only)", 1, true))
    local function record(text) return text:match("\n(op_name.-)\n\n") end   -- the same record
    assert.is_not_nil(record(data))
    assert.are.equal(record(data), record(timed))
  end)

  it("refuses racecheck and initcheck up front, as a usage error", function()
    local status, out, err = cli_run({ "allgather", "--pes", "2", "--count", "64",
                                       "--timing-only", "--tool", "racecheck" })
    assert.are.same({ 2, "" }, { status, out })
    assert.truthy(err:find("--tool racecheck keeps a shadow of every byte", 1, true))
    assert.are.equal(0, (cli_run({ "allgather", "--pes", "2", "--count", "64", "-w", "0", "-n",
                                   "1", "--timing-only", "--tool", "memcheck" })))
  end)
end)
