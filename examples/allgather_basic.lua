-- The hcomm seed's AIV AllGather, written on shmemlab's SHMEM primitives.
-- One block per rank: block b != rank waits for rank b's data, copies it from
-- rank b's staging buffer into output[b], then syncs with rank b; the block
-- b == rank stages its input, tells every rank it is ready, and copies its
-- own slice.                     Run: lua examples/allgather_basic.lua
local root = (debug.getinfo(1, "S").source:match("^@(.*)/examples/[^/]*$") or ".")
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
package.cpath = root .. "/build/?.so;" .. package.cpath
require("shmemlab.lua54").ensure()       -- started by another Lua: re-run under lua5.4
local lab = require("shmemlab")

local FLAG = 8                          -- one 32-byte flag slot = 8 int32

local function allgather(k, a)
  local rank, b, count = k.pe, k.block, a.count
  local ub = k:ub("int32", a.ub_elems)
  if b ~= rank then
    -- WaitNv1: rank b has staged its input
    k:signal_wait_until(a.ready:sub(b * FLAG, 1), lab.CMP_EQ, a.tag)
    k:pipe_barrier("ALL")
    -- CpGM2GM: rank b's staging buffer -> output[b]
    k:mte_get_nbi(a.output:sub(b * count, count), a.ccl, ub, a.ub_bytes, count, b, 0)
    k:quiet()
    -- Record(b) + Wait(b): post-sync with rank b
    k:signal_op(a.done:sub(rank * FLAG, 1), a.tag, lab.SIGNAL_SET, b)
    k:signal_wait_until(a.done:sub(b * FLAG, 1), lab.CMP_EQ, a.tag)
  else
    -- stage the input where the other ranks read it
    k:mte_put_nbi(a.ccl, a.input, ub, a.ub_bytes, count, rank, 0)
    k:pipe_barrier("ALL")
    -- Record1vN: tell every rank
    for p = 0, k.n_pes - 1 do
      k:signal_op(a.ready:sub(rank * FLAG, 1), a.tag, lab.SIGNAL_SET, p)
    end
    -- own slice: staging buffer -> output[rank]
    k:mte_get_nbi(a.output:sub(rank * count, count), a.ccl, ub, a.ub_bytes, count, rank, 0)
    k:quiet()
  end
end

local function run(pes, count)
  local m = lab.machine{ soc = "Ascend910B", pes = pes }
  local a = {
    count = count, tag = 1, ub_elems = 4096, ub_bytes = 4096 * 4,
    input = m:alloc("int32", count, "input"),
    output = m:alloc("int32", count * pes, "output"),
    ccl = m:malloc("int32", count, "ccl"),
    ready = m:malloc("int32", pes * FLAG, "ready", "backed"),
    done = m:malloc("int32", pes * FLAG, "done", "backed"),
  }
  a.input:fill("iota_pe")               -- PE p holds p*count .. p*count+count-1
  local expect = m:alloc("int32", count * pes, "expect"):fill("iota")
  local r = m:launch({ name = "allgather", kernel = allgather }, pes, a)
  local wrong, at, pe, want, got = a.output:compare(expect)
  print(string.format("allgather %d PEs x %d int32: kernel %.3f us (max over PEs), "
                      .. "e2e %.3f us, %s", pes, count, r.max_kernel_us, r.e2e_us,
                      wrong == 0 and "output correct"
                      or string.format("%d wrong, first at %d on PE %d: %s ~= %s",
                                       wrong, at, pe, want, got)))
  return wrong
end

local bad = 0
for _, pes in ipairs({ 2, 4, 8 }) do bad = bad + run(pes, 8192) end
os.exit(bad == 0 and 0 or 1)
