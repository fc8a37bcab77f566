-- bench/engine.lua: the emulator's own speed (CPU time of this process, not
-- virtual time). Every figure is a ratio of two things measured side by side
-- in this run, trial by trial, best of the trials:
--   bytes landed per second by mte_put_nbi / mte_get_nbi (1, 16, 64 MiB,
--   2 PEs) over memcpy of the same bytes; an atomic-add reduce UB -> GM over
--   the vectorised yardstick loop (core.bench_yardstick: -O3, x86-64-v3);
--   nanoseconds per primitive with 1 block and with 8 PEs x 48 blocks live,
--   next to a call that does no engine work (k:my_pe: what any primitive pays
--   to get from the kernel's Lua into C and back).
-- Two figures are not ratios: the CPU time of one remote get of the allgather
-- op at 64 PEs, and of a 1024 PEs x 48 blocks launch.
-- Run with `make bench`; `lua5.4 bench/engine.lua quick` runs fewer trials;
-- section names (copy reduce prims gets scale) run only those:
-- `lua5.4 bench/engine.lua quick prims gets`.
local lab = require("shmemlab")
local core = lab.core

local TRIALS, WANT = 5, {}
for _, a in ipairs(arg or {}) do
  if a == "quick" then TRIALS = 3 else WANT[a] = true end
end
local MiB = 1024 * 1024
local UB_ELEMS = 190 * 1024 // 4

-- best CPU seconds per call of each function of fns, over trials alternating them
local function best_of(trials, reps, fns)
  local best = {}
  for i = 1, #fns do best[i] = math.huge end
  for _ = 1, trials do
    for i, f in ipairs(fns) do
      local t0 = os.clock()
      for _ = 1, reps do f() end
      local dt = (os.clock() - t0) / reps
      if dt < best[i] then best[i] = dt end
    end
  end
  return table.unpack(best)
end

-- the same for the arguments over TRIALS (the copies: COPY_TRIALS, copy_trials)
local function side_by_side(reps, ...) return best_of(TRIALS, reps, { ... }) end
local COPY_TRIALS = 2 * TRIALS - 1     -- the copies' trials (copy_trials)

local function line(name, value, unit, goal)
  print(string.format("%-52s %10.3f %-8s %s", name, value, unit, goal or ""))
end

print(string.format("shmemlab engine bench (%s; CPU time, best of %d side by side; copies best of %d)",
                    _VERSION, TRIALS, COPY_TRIALS))

local sections = {}

-- ---------------------------------------------------------------- put / get
-- one block of PE 0 moves the whole buffer to (put) or from (get) PE 1, and
-- 16 blocks of PE 0 put 1/16 of it each (the ops' split). Each call lands new
-- bytes: the sources alternate between two buffers of different bytes (a copy
-- of 64 KiB or more writes only the blocks whose bytes differ, core/mte.c
-- same_copy, so bytes landed again would measure a compare). The yardstick is
-- memcpy between the very bytes the put (or the get) lands: its source and
-- destination copies, alternating the same way, so both meet the same
-- placement (core/mem.c starts these buffers on a page: source and
-- destination at one offset of a page, never 16 bytes apart as two heap
-- blocks in a row were, where a Xeon's memcpy runs at 2/3 of its speed). Every
-- function runs once before the trials (pages touched, caches warm), then
-- trials alternate them and each keeps its best. The 16-block launch without
-- its puts (the same kernel, its views and UB, its quiet) is timed beside:
-- what 2 PEs x 16 blocks cost whatever the blocks do
local function copy_kernel(k, a)
  if k.pe ~= 0 then return end
  local ub = k:ub("int32", UB_ELEMS)
  if a.get then
    k:mte_get_nbi(a.back, a.from[a.i], ub, UB_ELEMS * 4, a.n, 1, 0)
  else
    k:mte_put_nbi(a.dst, a.from[a.i], ub, UB_ELEMS * 4, a.n, 1, 0)
  end
  k:quiet()
end

-- block k.block of PE 0 puts its 1/16 of a's source (none: takes its views and
-- UB, puts nothing)
local function split_kernel(k, a)
  if k.pe ~= 0 then return end
  local per = a.n // 16
  local ub = k:ub("int32", UB_ELEMS)
  local d, s = a.dst:sub(k.block * per, per), a.from[a.i]:sub(k.block * per, per)
  if not a.none then k:mte_put_nbi(d, s, ub, UB_ELEMS * 4, per, 1, 0) end
  k:quiet()
end

-- two buffers of n int32 of different bytes on machine m (symmetric when sym)
local function two(m, n, name, sym)
  local alloc = sym and m.malloc or m.alloc
  return { alloc(m, "int32", n, name .. "0"):fill("iota"),
           alloc(m, "int32", n, name .. "1"):fill("random", 0, 1 << 30, 7) }
end

-- a launch of kernel over a's next source (a.i flips), and memcpy's of the same
local function flipping(m, kernel, blocks, a)
  return function() a.i = 3 - a.i; m:launch(kernel, blocks, a) end
end
-- (one a.i for all that land on a's destination: every call, whichever ran
-- before it, lands the other source's bytes than the one before)
local function memcpy_flipping(dst, a, on)
  return function() a.i = 3 - a.i; core.bench_memcpy(dst, a.from[a.i]:on(on)) end
end

-- best CPU seconds per call of each function: one call each first, then
-- COPY_TRIALS trials alternating them
local function copy_trials(reps, ...)
  for _, f in ipairs({ ... }) do f() end
  return best_of(COPY_TRIALS, reps, { ... })
end

function sections.copy()
  for _, mib in ipairs({ 1, 16, 64 }) do
    local n = mib * MiB // 4
    local m = lab.machine{ pes = 2 }
    local a = { n = n, i = 1, from = two(m, n, "src"), dst = m:malloc("int32", n, "dst") }
    local ga = { n = n, i = 1, get = true, from = two(m, n, "rsrc", true),
                 back = m:alloc("int32", n, "back") }
    local none = { n = n, i = 1, from = a.from, dst = a.dst, none = true }
    local reps = math.max(1, 64 // mib)
    local t_cpy, t_put, t_split, t_launch, t_gcpy, t_get = copy_trials(reps,
      memcpy_flipping(a.dst:on(1), a, 0), flipping(m, copy_kernel, 1, a),
      flipping(m, split_kernel, 16, a), flipping(m, split_kernel, 16, none),
      memcpy_flipping(ga.back:on(0), ga, 1), flipping(m, copy_kernel, 1, ga))
    assert(ga.back:on(0):compare(ga.from[ga.i]:on(1)) == 0, "get brought back other bytes")
    assert(a.dst:on(1):compare(a.from[a.i]:on(0)) == 0, "put landed other bytes")
    local goal = mib >= 16 and "(goal >= 0.85)" or "(goal >= 0.6)"
    line(string.format("%2d MiB memcpy", mib), mib * MiB / t_cpy / 1e9, "GB/s",
         string.format("(%.1f us)", t_cpy * 1e6))
    line(string.format("%2d MiB mte_put_nbi landed / memcpy", mib), t_cpy / t_put, "ratio", goal)
    line(string.format("%2d MiB mte_get_nbi landed / memcpy", mib), t_gcpy / t_get, "ratio", goal)
    line(string.format("%2d MiB mte_put_nbi by 16 blocks landed / memcpy", mib), t_cpy / t_split,
         "ratio", goal)
    line(string.format("%2d MiB   the 16-block launch without its puts", mib), t_launch * 1e6, "us",
         string.format("(put by 16 blocks %.1f us)", t_split * 1e6))
    line(string.format("%2d MiB   16-block puts less that launch / memcpy", mib),
         t_cpy / math.max(t_split - t_launch, 1e-9), "ratio")
    m:close()
  end
end

-- ---------------------------------------------------------------- reduce
-- atomic add UB -> GM: a UB chunk added into every chunk of a 1 MiB (in
-- cache: the kernel's speed) and a 16 MiB buffer (memory's speed)
function sections.reduce()
  for _, case in ipairs({ { "int32", 1 }, { "fp32", 1 }, { "fp16", 1 }, { "bf16", 1 },
                          { "int32", 16 }, { "fp32", 16 }, { "fp16", 16 }, { "bf16", 16 } }) do
    local dt, RED_BYTES = case[1], case[2] * MiB
    local m = lab.machine{ pes = 1 }
    local es = core.dtype_size(dt)
    local n, chunk = RED_BYTES // es, 190 * 1024 // es
    local acc = m:alloc(dt, n, "acc"):fill("random", -100, 100)
    local part = m:alloc(dt, chunk, "part"):fill("random", -1, 1)
    local rep = m:alloc(dt, n, "rep")                     -- part repeated: the yardstick's source
    for off = 0, n - 1, chunk do
      local c = math.min(chunk, n - off)
      rep:sub(off, c):copy(part:sub(0, c))
    end
    local function kernel(k)
      local ub = k:ub(dt, chunk)
      k:data_copy(ub, part, chunk)
      k:set_flag("MTE2_MTE3", 0); k:wait_flag("MTE2_MTE3", 0)
      k:set_atomic("add", dt)
      for off = 0, n - 1, chunk do
        k:data_copy(acc:sub(off, math.min(chunk, n - off)), ub, math.min(chunk, n - off))
      end
      k:set_atomic_none()
    end
    local acc0, rep0 = acc:on(0), rep:on(0)
    local yard = core.bench_yardstick
    local t_yard, t_red = side_by_side(32 // case[2],
      function() yard(acc0, rep0) end,
      function() m:launch(kernel, 1) end)
    line(string.format("%2d MiB atomic-add reduce UB->GM %s / yardstick", case[2], dt), t_yard / t_red,
         "ratio",
         "(goal >= 0.8)")
    m:close()
  end
end

-- ---------------------------------------------------------------- primitives
-- ns per primitive: a loop of reps calls on PE 0 block 0, less the same loop
-- without the call, on a machine of pes x blocks where every other block runs
-- the same loop (live) or ends at once (1 block)
local REPS = 20000
local reps_of = function(pes, blocks) return math.max(400, REPS // (pes * blocks)) end
local prims = {
  { "my_pe (no engine work)", function(k, s)
      for _ = 1, s.reps do k:my_pe() end
    end, floor = true },
  { "signal_op", function(k, s) for _ = 1, s.reps do k:signal_op(s.sig, 1, lab.SIGNAL_SET, k.pe) end end },
  { "data_copy of 32 bytes", function(k, s)
      local ub = k:ub("int32", 8)
      for _ = 1, s.reps do k:data_copy(ub, s.small, 8) end
    end },
  { "satisfied signal_wait_until", function(k, s)
      for _ = 1, s.reps do k:signal_wait_until(s.sig, lab.CMP_GE, 0) end
    end },
  { "remote mte_put_nbi of 32 bytes", function(k, s)
      local ub, peer = k:ub("int32", 8), (k.pe + 1) % k.n_pes
      for _ = 1, s.reps do k:mte_put_nbi(s.rdst, s.small, ub, 32, 8, peer, 0) end
      k:quiet()
    end },
  { "set_flag / wait_flag pair", function(k, s)
      for _ = 1, s.reps do k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0) end
    end },
}
local function empty(k, s) for _ = 1, s.reps do local _ = k.pe end end

local function per_prim(pes, blocks)
  local m = lab.machine{ pes = pes, spin_limit = 0 }
  local s = { sig = m:malloc("int32", 8, "sig"), small = m:alloc("int32", 8, "small"),
              rdst = m:malloc("int32", 8, "rdst"),
              reps = reps_of(pes, blocks) }
  for _, p in ipairs(prims) do
    local body = p[2]
    local t_empty, t_body = side_by_side(1,
      function() m:launch(function(k) empty(k, s) end, blocks) end,
      function() m:launch(function(k) body(k, s) end, blocks) end)
    local calls = s.reps * pes * blocks * (p[1]:find("pair") and 2 or 1)
    local goal = pes * blocks == 1 and "(goal <= 120)" or "(goal <= 200)"
    line(string.format("%s, %d PEs x %d blocks", p[1], pes, blocks), (t_body - t_empty) / calls * 1e9,
         "ns/call", not p.floor and goal or nil)
  end
  m:close()
end
function sections.prims()
  per_prim(1, 1)
  per_prim(8, 48)
end

-- ---------------------------------------------------------------- gets
-- CPU time of one remote get of the allgather op (ops/allgather.lua: a
-- signal wait, the double-buffered get of op.get_pipelined, the frames) at
-- 64 PEs x 16 blocks, 1024 int32 per PE: one launch (64 x 64 gets) after a
-- launch that warmed the machine; the kernel's Lua, the binding and the engine
function sections.gets()
  local runner = require("shmemlab.runner")
  local op = runner.load_op("allgather")
  local c = runner.config(op, { pes = 64, count = 1024, warmup = 0, iters = 1, baseline = "none" })
  local m = lab.machine{ profile = c.profile, pes = c.pes }
  local s = op.setup(m, c)
  op.run(m, c, s)
  local t = side_by_side(1, function() op.run(m, c, s) end)
  line("allgather 64 PEs, 1024 int32 per PE: per get", t / (64 * 64) * 1e6, "us")
  m:close()
end

-- ---------------------------------------------------------------- scale
-- a machine of 1024 PEs x 48 blocks: every block puts to the next PE and waits
-- for the 48 signals of its own PE's counter (49152 coroutines, one launch);
-- not a ratio (doc/performance.md)
function sections.scale()
  local big = lab.machine{ pes = 1024 }
  local bsrc = big:alloc("int32", 48 * 256):fill("iota_pe")
  local bdst = big:malloc("int32", 48 * 256)
  local bsig = big:malloc("int32", 8)
  local t0 = os.clock()
  local r = big:launch(function(k)
    local ub = k:ub("int32", 256)
    local peer = (k.pe + 1) % k.n_pes
    k:mte_put_nbi(bdst:sub(k.block * 256, 256), bsrc:sub(k.block * 256, 256), ub, 1024, 256, peer, 0)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
    k:signal_op(bsig, 1, lab.SIGNAL_ADD, peer)
    k:signal_wait_until(bsig, lab.CMP_GE, 48)
  end, 48)
  local dt = os.clock() - t0
  line("1024 PEs x 48 blocks, one launch", dt, "s")
  line("  per block (put, flag, signal, wait)", dt / (1024 * 48) * 1e6, "us",
       string.format("(virtual %.3f us)", r.max_kernel_us))
end

for _, name in ipairs({ "copy", "reduce", "prims", "gets", "scale" }) do
  if next(WANT) == nil or WANT[name] then sections[name]() end
end
