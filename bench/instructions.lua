-- bench/instructions.lua WHAT N [PES BLOCKS]: the loops of bench/engine.lua's
-- primitives section (WHAT: empty, my_pe, signal_op, data_copy, wait, flag, put),
-- N iterations in every block of a machine of PES x BLOCKS (1 x 1 by default).
-- Run under callgrind twice, with N and 2N, and divide the difference of the
-- two totals by N x PES x BLOCKS: the instructions of one iteration, the loop
-- included, start-up subtracted (doc/performance.md):
--   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
--     lua5.4 bench/instructions.lua data_copy 20000
-- (with the Makefile's LUA_PATH_5_4 / LUA_CPATH_5_4). Prints nothing.
-- WHAT get: N launches of the allgather operator (1024 int32 per PE, PES PEs,
-- 64 by default): divide by N x PES x PES, its gets (bench/engine.lua's gets).
local lab = require("shmemlab")
local what, n = arg[1], math.tointeger(tonumber(arg[2]))
local pes = math.tointeger(tonumber(arg[3] or (what == "get" and 64 or 1)))
local blocks = math.tointeger(tonumber(arg[4] or 1))

if what == "get" and n and pes then
  local runner = require("shmemlab.runner")
  local op = runner.load_op("allgather")
  local c = runner.config(op, { pes = pes, count = 1024, warmup = 0, iters = 1, baseline = "none" })
  local m = lab.machine{ profile = c.profile, pes = c.pes }
  local s = op.setup(m, c)
  for _ = 1, n do op.run(m, c, s) end
  m:close()
  return
end
local m = lab.machine{ pes = pes, spin_limit = 0 }
local s = { sig = m:malloc("int32", 8, "sig"), small = m:alloc("int32", 8, "small"),
            rdst = m:malloc("int32", 8, "rdst"), reps = n }
local bodies = {
  empty = function(k) for _ = 1, s.reps do local _ = k.pe end end,
  my_pe = function(k) for _ = 1, s.reps do k:my_pe() end end,
  signal_op = function(k) for _ = 1, s.reps do k:signal_op(s.sig, 1, lab.SIGNAL_SET, k.pe) end end,
  data_copy = function(k)
    local ub = k:ub("int32", 8)
    for _ = 1, s.reps do k:data_copy(ub, s.small, 8) end
  end,
  wait = function(k) for _ = 1, s.reps do k:signal_wait_until(s.sig, lab.CMP_GE, 0) end end,
  flag = function(k) for _ = 1, s.reps do k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0) end end,
  put = function(k)
    local ub, peer = k:ub("int32", 8), (k.pe + 1) % k.n_pes
    for _ = 1, s.reps do k:mte_put_nbi(s.rdst, s.small, ub, 32, 8, peer, 0) end
    k:quiet()
  end,
}
assert(bodies[what] and n and pes and blocks,
       "usage: lua5.4 bench/instructions.lua WHAT N [PES BLOCKS] (WHAT: empty, my_pe, "
       .. "signal_op, data_copy, wait, flag, put, get)")
m:launch(bodies[what], blocks)
m:close()
