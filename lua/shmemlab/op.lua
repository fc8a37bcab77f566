-- shmemlab.op: what an operator file is, and the plumbing operator files share
-- (so that an operator reads as a page of orchestration with named frames).
--
-- An operator file returns op.define{...} with:
--   name        the name run_op.lua takes ("allgather")
--   collective  the metrics name (bus factor, payload): allgather, allreduce, ...
--   dtypes      the dtypes it supports (first = default)
--   defaults    its own defaults for the run configuration (count, block_dim, ...)
--   unused      {[frame id] = "why this op has no such phase"} for every frame
--               kind it does not use
--   describe(c) -> {algorithm =, chunk_elems =, cores =}
--   payload(c)  -> the numbers metrics.payload_bytes needs
--   setup(m, c) -> state: buffers and deterministic inputs
--   run(m, c, s) -> one whole operation (one or more launches, see op.launch)
--   check(m, c, s) -> wrong [, index, pe, expected, actual]  (reference in C)
--   active_pes(c) (optional) -> the PEs that take part (p2p); metrics use them only
local lab = require("shmemlab")

local op = {}

local required = { "name", "collective", "dtypes", "unused", "describe", "payload",
                   "setup", "run", "check" }

-- validate an operator table and give it its defaults
function op.define(t)
  if type(t) ~= "table" then
    error("bad argument #1 to 'define' (operator table expected)", 2)
  end
  for _, f in ipairs(required) do
    if t[f] == nil then
      error("operator '" .. tostring(t.name) .. "' has no field '" .. f .. "'", 2)
    end
  end
  for id, reason in pairs(t.unused) do
    if lab.frames.names[id] == nil or type(reason) ~= "string" or reason == "" then
      error("operator '" .. t.name .. "': unused frame " .. tostring(id)
            .. " needs a frame id and a reason", 2)
    end
  end
  t.defaults = t.defaults or {}
  return t
end

-- the launch results of one operation, summed: kernel_us per PE, e2e_us
function op.total(results, n_pes)
  local kernel, e2e = {}, 0
  for pe = 1, n_pes do kernel[pe] = 0 end
  for _, r in ipairs(results) do
    for pe = 1, n_pes do kernel[pe] = kernel[pe] + r.kernel_us[pe] end
    e2e = e2e + r.e2e_us
  end
  return { kernel_us = kernel, e2e_us = e2e, launches = #results }
end

-- elements per block-slice of n elements split over blocks, rounded up to
-- whole 32-byte blocks
function op.split(n, blocks, esize)
  local per32 = 32 // esize
  local per = (n + blocks - 1) // blocks
  return ((per + per32 - 1) // per32) * per32
end

-- CpGM2GM: copy count elements GM -> GM through the UB tensor ub in chunks
-- (DataCopy when the chunk is whole 32-byte blocks, DataCopyPad otherwise)
function op.copy_gm(k, dst, src, count, ub)
  local chunk = #ub
  local done = 0
  local bytes = lab.core.dtype_size(ub.dtype)
  while done < count do
    local n = math.min(chunk, count - done)
    local copy = (n * bytes) % 32 == 0 and k.data_copy or k.data_copy_pad
    copy(k, ub, src:sub(done, n), n)
    k:set_flag("MTE2_MTE3", 0); k:wait_flag("MTE2_MTE3", 0)
    copy(k, dst:sub(done, n), ub, n)
    done = done + n
    if done < count then k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0) end
  end
end

-- the block's share [first, first + n) of count elements split over the blocks
function op.share(k, count, esize)
  local per = op.split(count, k.block_num, esize)
  local first = k.block * per
  if first >= count then return first, 0 end
  return first, math.min(per, count - first)
end

-- fill an input with an integer-exact pattern that differs per PE and per
-- element: iota over the whole machine for integers and fp32, seeded random
-- integers in a range the type holds exactly for fp16/bf16
function op.fill_input(buf, dtype, seed)
  if dtype == "fp16" then
    buf:fill("random", -1024, 1024, seed or 1)
  elseif dtype == "bf16" then
    buf:fill("random", -128, 128, seed or 1)
  else
    buf:fill("iota_pe")
  end
  return buf
end

-- fill an input of a reduction: small integers whose sums over the PEs stay
-- exact in every dtype (|sum| <= 8 * n_pes; int8 sums wrap, as they would)
function op.fill_reduce_input(buf, seed)
  return buf:fill("random", -8, 8, seed or 1)
end

-- elements of a symmetric staging buffer that fit in bytes, rounded down to
-- whole 32-byte blocks (at least one block)
function op.fit(bytes, esize)
  local per32 = 32 // esize
  return math.max(per32, (bytes // esize) // per32 * per32)
end

return op
