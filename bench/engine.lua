-- bench/engine.lua: the emulator's own speed (wall clock), not virtual time.
-- Prints, from one run: bytes landed per second by large put/get against
-- memcpy of the same bytes, an atomic-add reduce against a plain C loop, and
-- wall nanoseconds per primitive. Run with `make bench`.
local lab = require("shmemlab")
local core = lab.core

local function best_of(n, f)
  local best = math.huge
  for _ = 1, n do
    local t0 = os.clock()
    f()
    local dt = os.clock() - t0
    if dt < best then best = dt end
  end
  return best
end

local function line(name, value, unit, goal)
  print(string.format("%-44s %12.3f %-8s %s", name, value, unit, goal or ""))
end

local MiB = 1024 * 1024
local bytes = 64 * MiB
local n = bytes // 4
local m = lab.machine{ pes = 2 }
local src = m:alloc("int32", n, "src"):fill("iota")
local dst = m:malloc("int32", n, "dst")
local ref = m:alloc("int32", n, "ref")
local ub_elems = 190 * 1024 // 4

-- large put / get on one block: every byte staged through UB, as on hardware
local function put_kernel(k, get)
  if k.pe ~= 0 then return end
  local ub = k:ub("int32", ub_elems)
  if get then
    k:mte_get_nbi(ref, dst, ub, ub_elems * 4, n, 1, 0)
  else
    k:mte_put_nbi(dst, src, ub, ub_elems * 4, n, 1, 0)
  end
  k:quiet()
end
local t_put = best_of(3, function() m:launch(put_kernel, 1, false) end)
local t_get = best_of(3, function() m:launch(put_kernel, 1, true) end)
local t_cpy = best_of(3, function() core.bench_memcpy(ref:on(0), src:on(0)) end)
print(string.format("shmemlab engine bench (%s, %d MiB transfers)", _VERSION, bytes // MiB))
line("memcpy of the same bytes", bytes / t_cpy / 1e9, "GB/s")
line("mte_put_nbi bytes landed", bytes / t_put / 1e9, "GB/s")
line("mte_get_nbi bytes landed", bytes / t_get / 1e9, "GB/s")
line("put over memcpy", t_cpy / t_put, "ratio", "(goal >= 0.7)")
line("get over memcpy", t_cpy / t_get, "ratio", "(goal >= 0.7)")

-- atomic add reduce: UB -> GM with set_atomic("add")
local acc = m:alloc("int32", n, "acc")
local function reduce_kernel(k)
  if k.pe ~= 0 then return end
  local ub = k:ub("int32", ub_elems)
  k:set_atomic("add", "int32")
  local done = 0
  while done < n do
    local c = math.min(ub_elems, n - done)
    k:data_copy(ub, src:sub(done, c), c)
    k:set_flag("MTE2_MTE3", 0); k:wait_flag("MTE2_MTE3", 0)
    k:data_copy(acc:sub(done, c), ub, c)
    k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
    done = done + c
  end
  k:set_atomic_none()
end
local t_red = best_of(3, function() m:launch(reduce_kernel, 1) end)
local t_loop = best_of(3, function() core.bench_add_i32(acc:on(0), src:on(0)) end)
line("plain C loop dst[i] += src[i]", bytes / t_loop / 1e9, "GB/s")
line("atomic-add reduce through UB", bytes / t_red / 1e9, "GB/s")
line("atomic reduce over plain loop", t_loop / t_red, "ratio", "(goal >= 0.7)")

-- wall time per primitive
local reps = 200000
local sig = m:malloc("int32", 8, "sig")
local small = m:alloc("int32", 8, "small")
local function per_call(body)
  local function kernel(k)
    if k.pe ~= 0 then return end
    body(k)
  end
  local empty = best_of(3, function() m:launch(function(k) if k.pe ~= 0 then return end
    for _ = 1, reps do local _ = k.pe end end, 1) end)
  local t = best_of(3, function() m:launch(kernel, 1) end)
  return (t - empty) / reps * 1e9
end
line("signal_op", per_call(function(k)
  for _ = 1, reps do k:signal_op(sig, 1, lab.SIGNAL_SET, 0) end end), "ns/call", "(goal <= 250)")
line("data_copy of 32 bytes", per_call(function(k)
  local ub = k:ub("int32", 8)
  for _ = 1, reps do k:data_copy(ub, small, 8) end end), "ns/call", "(goal <= 250)")
line("satisfied signal_wait_until", per_call(function(k)
  for _ = 1, reps do k:signal_wait_until(sig, lab.CMP_GE, 0) end end), "ns/call", "(goal <= 250)")

-- a machine of 1024 PEs x 48 blocks: every block puts to the next PE and waits
-- for the 48 signals of its own PE's counter (49152 coroutines, one launch)
do
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
  line("  per block (put, flag, signal, wait)", dt / (1024 * 48) * 1e6, "us", string.format(
       "(virtual %.3f us)", r.max_kernel_us))
end
