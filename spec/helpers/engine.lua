-- Shared helpers of the engine specs (spec/engine_*_spec.lua).
-- require("spec.helpers.engine") from the repo root (busted keeps ./?.lua).

local lab = require("shmemlab")
local luassert = require("luassert")   -- busted's assert is not a global here

local H = { lab = lab }

-- every element type, and its size in bytes
H.DTYPES = { "int8", "int16", "int32", "int64", "uint8", "fp16", "bf16", "fp32" }
H.SIZE = { int8 = 1, int16 = 2, int32 = 4, int64 = 8, uint8 = 1, fp16 = 2, bf16 = 2,
           fp32 = 4 }
H.FLOAT = { fp16 = true, bf16 = true, fp32 = true }

-- the message of the error fn(...) raises (fails the spec when it does not)
function H.err(fn, ...)
  local ok, e = pcall(fn, ...)
  assert(not ok, "expected an error, got none")
  return tostring(e)
end

-- the message without a leading "file:line: " position
function H.strip(msg)
  return (msg:gsub("^[^\n:]+:%d+: ", "", 1))
end

-- does msg contain plain (not a pattern)?
function H.has(msg, plain)
  return msg:find(plain, 1, true) ~= nil
end

-- assert that msg contains every plain string of the list
function H.contains(msg, ...)
  for i = 1, select("#", ...) do
    local want = select(i, ...)
    luassert.is_true(H.has(msg, want),
                     string.format("expected the message to contain\n  %q\ngot\n  %q", want, msg))
  end
end

-- the message of a launch that must fail
function H.launch_err(m, kernel, block_dim, ...)
  local args = table.pack(...)
  return H.err(function() return m:launch(kernel, block_dim, table.unpack(args, 1, args.n)) end)
end

-- one set_flag + wait_flag pair
function H.sync(k, ev, id)
  k:set_flag(ev, id or 0)
  k:wait_flag(ev, id or 0)
end

-- a UB view's first n elements as a Lua list (read from the kernel)
function H.ub_values(k, ub, n)
  local t = {}
  for i = 0, n - 1 do t[#t + 1] = k:get_value(ub, i) end
  return t
end

-- a kernel writes GM dst with from's n elements through the UB tmp (MTE2,
-- then MTE3 after the flag pair), and lets its pipes drain: a source written
-- after the puts that staged it
function H.overwrite(k, dst, tmp, from, n)
  k:data_copy(tmp, from, n)
  H.sync(k, "MTE2_MTE3")
  k:data_copy(dst, tmp, n)
  k:pipe_barrier()
end

-- time to move bytes at GBps, in ns (1 GB/s = 1 byte per ns)
-- the row loop of DeepEP's cam_moe_dispatch_normal port on 2 PEs x 4 blocks of
-- unequal row counts (their clocks interleave): each row's slot by a scalar read
-- of its index table, GM -> UB, MTE3_S, a triple by set_value into the row,
-- S_MTE3, UB -> GM at the slot. Its times, the output's checksums, its events and
-- its events by kind (m:event_kinds() over the launch)
function H.dispatch_rows(run_ahead)
  local m = lab.machine{ pes = 2, run_ahead = run_ahead }
  local n, h, blocks = 24, 64, 4
  local x = m:alloc("int32", blocks * n * h, "x", "backed"):fill("random", 1, 1000, 7)
  local slot = m:alloc("int32", blocks * n, "slot", "backed"):fill("iota")
  local out = m:alloc("int32", blocks * n * (h + 8), "out", "backed"):fill("zero")
  local e0, k0 = m:events(), m:event_kinds()
  local r = m:launch(function(k)
    local cnt, R = n - 4 * k.block, h + 8
    local q, idx = k:ub("int32", 2 * R), k:ub("int32", n, "backed")
    k:data_copy_pad(idx, slot:sub(k.block * n, n), n)
    H.sync(k, "MTE2_S")
    for j = 0, cnt - 1 do
      local b, s = j % 2, k:get_value(idx, j)             -- pending: the other buffer's copies
      local row = q:sub(b * R, R)
      if j >= 2 then k:wait_flag("MTE3_MTE2", b) end
      k:data_copy_pad(row, x:sub((k.block * n + j) * h, h), h)
      k:set_flag("MTE2_MTE3", b); k:wait_flag("MTE2_MTE3", b)
      H.sync(k, "MTE3_S")
      k:set_value(row, h, k.pe); k:set_value(row, h + 1, s)
      H.sync(k, "S_MTE3")
      k:data_copy_pad(out:sub(s * R, R), row, R)
      k:set_flag("MTE3_MTE2", b)
    end
    for b = 0, math.min(cnt, 2) - 1 do k:wait_flag("MTE3_MTE2", (cnt - 1 - b) % 2) end
  end, blocks)
  local kinds = m:event_kinds()
  for kind, v in pairs(k0) do kinds[kind] = kinds[kind] - v end
  return { now = m:now(), kernel_us = r.kernel_us, out = { out:on(0):checksum(), out:on(1):checksum() },
           events = m:events() - e0, wake = kinds.wake, pipe = kinds.pipe }
end

function H.ns(bytes, GBps) return bytes / GBps end

-- the line number of the line that calls this (for file:line checks)
function H.line()
  return debug.getinfo(2, "l").currentline
end

-- this spec file's path as Lua reports it in messages
function H.here()
  return (debug.getinfo(2, "S").short_src)
end

-- run code in a fresh lua5.4 (memory-limited, time-limited): its output
function H.subprocess(code)
  local file = os.tmpname()
  local f = assert(io.open(file, "w"))
  f:write(string.format("package.path = %q\npackage.cpath = %q\n", package.path,
                        package.cpath), code)
  f:close()
  -- a memory limit stops a runaway case; AddressSanitizer needs its own huge
  -- mappings, so under it (LD_PRELOAD of libasan) the limit is left out
  local limit = (os.getenv("LD_PRELOAD") or ""):find("asan") and "" or "ulimit -v 2000000; "
  local p = assert(io.popen("sh -c '" .. limit .. "exec timeout 20 lua5.4 " .. file
                            .. "' 2>&1; echo \"exit=$?\""))
  local out = p:read("a")
  p:close()
  os.remove(file)
  return out
end

return H
