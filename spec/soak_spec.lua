-- Soak: 10,000 small launches on one 2-PE machine (puts, gets, signals,
-- barriers, vector work, profiling frames) with a failing launch every so
-- often (a kernel fault, an out-of-bounds copy, a deadlock, a virtual-time
-- limit, a Lua error caught inside the kernel), then: no memory growth.
--
-- Memory is measured after a warm-up of 500 launches and after the 10,000:
-- the Lua heap (collectgarbage("count") after two full collections) and the
-- process RSS (/proc/self/statm resident pages * 4096).
--
-- Tolerances. Lua heap: < 1 MiB over 9,500 launches, i.e. a leak of ~110
-- bytes of Lua objects per launch (one small table) would fail it; the GC's
-- own bookkeeping after a full collection moves by a few KiB. RSS: < 8 MiB,
-- i.e. a leak of ~880 bytes of C memory per launch would fail it; glibc's
-- arenas and the Lua allocator keep freed memory (high-water marks of the
-- event pool, UB and reservation arrays, coroutine stacks) and fragment, which
-- moves RSS by a few MiB at most once warm (not judged under ASan or
-- valgrind, whose allocators hold freed memory). The machine's msprof task rows
-- (m:tasks, two per launch) are bounded by task_rows (spec/task_rows_spec.lua);
-- they are also cleared every 500 launches with m:clear_tasks().

local lab = require("shmemlab")

local LAUNCHES, WARMUP = 10000, 500
local CHECKED_LAUNCHES, CHECKED_WARMUP = 2000, 300
local RSS_TOLERANCE = 8 * 1024 * 1024
-- under ASan (its quarantine holds up to 256 MiB of freed memory) or valgrind
-- the RSS says nothing about leaks: only the Lua heap is judged there, unless
-- ASAN_OPTIONS has quarantine_size_mb=0 (then ASan's RSS moves ~1 MiB)
local PRELOAD = os.getenv("LD_PRELOAD") or ""
local NO_QUARANTINE = (os.getenv("ASAN_OPTIONS") or ""):find("quarantine_size_mb=0", 1, true)
local INSTRUMENTED = PRELOAD:find("libasan", 1, true) and not NO_QUARANTINE and "ASan"
                     or PRELOAD:find("vgpreload", 1, true) and "valgrind" or nil
local HEAP_TOLERANCE = 1024 * 1024

local function rss_bytes()
  local f = assert(io.open("/proc/self/statm", "r"))
  local _, resident = f:read("n", "n")
  f:close()
  return resident * 4096
end

local function lua_heap_bytes()
  collectgarbage("collect")
  collectgarbage("collect")
  return collectgarbage("count") * 1024
end

local N = 64                      -- int32 elements per transfer

-- the kernels: a is the argument table of the machine's buffers
local K = {}

-- put to the next PE, flag, signal; wait for the previous PE's signal
K[1] = function(k, a, epoch)
  local peer = (k.pe + 1) % k.n_pes
  if k.block == 0 then
    local ub = k:ub("int32", N)
    k:prof_start(lab.frames.REMOTE_PUT_GET)
    k:mte_put_nbi(a.dst, a.src, ub, 4 * N, N, peer, 0)
    k:set_flag("MTE3_S", 0)
    k:wait_flag("MTE3_S", 0)
    k:prof_end(lab.frames.REMOTE_PUT_GET)
    k:signal_op(a.sig, epoch, lab.SIGNAL_SET, peer)
    k:prof_start(lab.frames.SIGNAL_WAIT)
    k:signal_wait_until(a.sig, lab.CMP_GE, epoch)
    k:prof_end(lab.frames.SIGNAL_WAIT)
  end
  k:barrier_all()
end

-- get from the next PE in chunks through a small UB, then a blocking get
K[2] = function(k, a)
  local peer = (k.pe + 1) % k.n_pes
  local ub = k:ub("int32", 16)
  if k.block == 1 then
    k:mte_get_nbi(a.got, a.src, ub, 64, N, peer, 1)
    k:quiet()
    k:getmem(a.got2, a.src, N, peer)
  end
  k:sync_all()
  k:barrier_all()
end

-- put_signal with SIGNAL_ADD from both blocks; the peer waits for both
K[3] = function(k, a, epoch)
  local peer = (k.pe + 1) % k.n_pes
  local half = N // 2
  k:put_signal(a.dst:sub(k.block * half, half), a.src:sub(k.block * half, half), half,
               a.cnt, 1, lab.SIGNAL_ADD, peer)
  k:signal_wait_until(a.cnt, lab.CMP_GE, 2 * epoch)
  k:fence()
end

-- local work: GM -> UB, vector ops, scalar access, UB -> GM with atomic add
K[4] = function(k, a)
  local x, y = k:ub("int32", N), k:ub("int32", N)
  k:data_copy(x, a.src, N)
  k:set_flag("MTE2_V", 0)
  k:wait_flag("MTE2_V", 0)
  k:muls(y, x, 2, N)
  k:add(y, y, x, N)
  k:set_flag("V_S", 0)
  k:wait_flag("V_S", 0)
  k:set_value(y, 0, k:get_value(y, 1))
  k:set_flag("S_MTE3", 0)
  k:wait_flag("S_MTE3", 0)
  if k.block == 0 then k:set_atomic("add", "int32") end
  k:data_copy(a.acc, y, N)
  k:set_atomic_none()
  k:pipe_barrier("MTE3")
  local _ = k:system_cycle()
end

-- failing launches, one kind at a time
local FAIL_TEXT
local FAIL = {
  function(k, a)                              -- out-of-bounds copy: a kernel fault
    if k.pe == 1 then k:data_copy(k:ub("int32", N), a.src:sub(8), N) end
  end,
  function(k)                                 -- deadlock: one block in barrier_all
    if k.pe == 0 and k.block == 0 then k:barrier_all() end
  end,
  function(k, a)                              -- a wait that nothing satisfies
    if k.pe == 0 then k:signal_wait_until(a.sig, lab.CMP_EQ, -7) end
  end,
  function(k, a)                              -- virtual-time limit: a long transfer
    if k.pe == 0 and k.block == 0 then
      k:mte_put_nbi(a.big, a.big, k:ub("int32", 4096), 16384, #a.big, 1, 0)
      k:quiet()
    end
  end,
  function(k)                                 -- a Lua error
    if k.block == 1 then error("boom") end
  end,
  function(k, a)                              -- errors caught inside the kernel, then ok
    for _ = 1, 3 do
      local ok = pcall(k.data_copy, k, a.src, a.src, 8)
      assert(not ok)
    end
    k:quiet()
  end,
}

-- run `launches` launches on m (warm-up `warmup`); returns the counts and the
-- memory before and after
local function soak(m, launches, warmup, checked)
  local a = {
    src = m:malloc("int32", N, "src"):fill("iota_pe", 1),
    dst = m:malloc("int32", N, "dst"):fill("zero"),
    got = m:alloc("int32", N, "got"):fill("zero"),
    got2 = m:alloc("int32", N, "got2"):fill("zero"),
    acc = m:alloc("int32", N, "acc"):fill("zero"),
    sig = m:malloc("int64", 4, "sig"):fill("zero"),
    cnt = m:malloc("int64", 4, "cnt"):fill("zero"),
    big = m:malloc("int32", 1 << 18, "big"):fill("zero"),  -- 1 MiB per PE: ~40 us over HCCS
  }
  local counts = { ok = 0, failed = 0, reports = 0 }
  local epoch, cnt_epoch = 0, 0
  local rss0, heap0
  for i = 1, launches do
    local ok, err
    if i % 97 == 0 then
      local f = FAIL[(i // 97) % #FAIL + 1]
      ok, err = pcall(m.launch, m, f, 2, a)
      -- a checked run records the out-of-bounds copy, the deadlocks and the
      -- time-out and ends the launch; only the Lua error fails it
      local j = (i // 97) % #FAIL + 1
      local must_fail = j ~= 6 and (not checked or j == 5)
      assert.equals(must_fail, not ok, tostring(err))
      if not ok then
        assert.equals("string", type(err))
        assert.truthy(err:find(FAIL_TEXT[j], 1, true), err)
      end
    else
      local v = i % #K + 1
      if v == 1 then epoch = epoch + 1 end
      if v == 3 then cnt_epoch = cnt_epoch + 1 end
      ok, err = pcall(m.launch, m, K[v], 2, a, v == 3 and cnt_epoch or epoch)
      assert.is_true(ok, tostring(err))
    end
    counts[ok and "ok" or "failed"] = counts[ok and "ok" or "failed"] + 1
    if i % 500 == 0 then m:clear_tasks() end
    if checked and i % 100 == 0 then counts.reports = counts.reports + #m:check_reports(true) end
    if i % 1000 == 0 then                    -- the data of the last kernels is right
      for p = 0, 1 do
        local want = ((p + 1) % 2) * N + 1
        assert.equals(want, a.got:on(p):read(0), "mte_get_nbi data on PE " .. p)
        assert.equals(want + N - 1, a.got2:on(p):read(N - 1), "getmem data on PE " .. p)
        assert.equals(want + N - 1, a.dst:on(p):read(N - 1), "put data on PE " .. p)
      end
      -- a fresh machine, a launch, closed: machines free what they allocate
      local t = lab.machine{ pes = 2 }
      local s = t:malloc("int32", N):fill("iota")
      t:launch(K[2], 2, { src = s, got = t:alloc("int32", N), got2 = t:alloc("int32", N) })
      t:close()
    end
    if i == warmup then rss0, heap0 = rss_bytes(), lua_heap_bytes() end
  end
  return counts, rss0, heap0, rss_bytes(), lua_heap_bytes()
end

local function check_growth(what, launches, warmup, counts, rss0, heap0, rss1, heap1, t0)
  print(string.format("soak%s: %d launches (%d ok, %d failed) in %.1f s CPU; Lua heap %.1f KiB "
                      .. "-> %.1f KiB (%+.1f KiB), RSS %.2f MiB -> %.2f MiB (%+.2f MiB) after %d "
                      .. "warm-up launches", what, launches, counts.ok, counts.failed,
                      os.clock() - t0, heap0 / 1024, heap1 / 1024, (heap1 - heap0) / 1024,
                      rss0 / 2^20, rss1 / 2^20, (rss1 - rss0) / 2^20, warmup))
  assert.is_true(heap1 - heap0 < HEAP_TOLERANCE,
                 string.format("Lua heap grew by %.1f KiB", (heap1 - heap0) / 1024))
  if INSTRUMENTED then
    print("soak: RSS not judged: " .. INSTRUMENTED .. " keeps freed memory (quarantine)")
  else
    assert.is_true(rss1 - rss0 < RSS_TOLERANCE,
                   string.format("RSS grew by %.2f MiB", (rss1 - rss0) / 2^20))
  end
end

-- what each failing launch reports (unchecked)
FAIL_TEXT = { "out of bounds", "deadlock", "deadlock", "virtual-time limit", "boom" }

describe("soak", function()
  it("10,000 launches on 2 PEs do not grow the Lua heap or the RSS", function()
    local t0 = os.clock()
    local m = lab.machine{ pes = 2, prof_pe = 0, time_limit_us = 20 }
    local counts, rss0, heap0, rss1, heap1 = soak(m, LAUNCHES, WARMUP, false)
    assert.is_true(counts.failed >= LAUNCHES // 97 * 5 // 6)
    check_growth("", LAUNCHES, WARMUP, counts, rss0, heap0, rss1, heap1, t0)
    m:close()
  end)

  -- the same under check = "all" (memcheck, racecheck, synccheck, initcheck):
  -- reports, interned source lines, race shadows and clocks must not grow
  it("2,000 checked launches (check = 'all') do not grow either", function()
    local t0 = os.clock()
    local m = lab.machine{ pes = 2, prof_pe = 0, time_limit_us = 20, check = "all" }
    local counts, rss0, heap0, rss1, heap1 = soak(m, CHECKED_LAUNCHES, CHECKED_WARMUP, true)
    assert.is_true(counts.reports > 0, "the checked soak reported nothing")
    check_growth(" (check = all)", CHECKED_LAUNCHES, CHECKED_WARMUP, counts, rss0, heap0, rss1,
                 heap1, t0)
    m:close()
  end)
end)
