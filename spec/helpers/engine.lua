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

-- time to move bytes at GBps, in ns (1 GB/s = 1 byte per ns)
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
