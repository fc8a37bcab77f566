-- shmemlab.lua54: a script started by another Lua re-runs itself under lua5.4.
-- Debian's `lua` can be 5.1 (both installed), and the lab's modules are Lua 5.4, so
-- run_op.lua and the runnable examples/*.lua call, before requiring anything else:
--   require("shmemlab.lua54").ensure()
-- Under Lua 5.4 it returns; under another Lua it runs `lua5.4 SCRIPT ARGS...` and exits
-- with that run's status. This file must stay readable by Lua 5.1 (no //, no goto,
-- no integer-only functions), and it requires nothing.
local M = {}

-- a word quoted for sh
local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

function M.ensure()
  if _VERSION == "Lua 5.4" then return end
  local args = {}
  for i = 0, #arg do args[#args + 1] = quote(arg[i]) end
  local ok, _, code = os.execute("lua5.4 " .. table.concat(args, " "))
  if type(ok) == "number" then          -- Lua 5.1: the raw wait status
    code = ok >= 256 and math.floor(ok / 256) or ok
    if code == 127 then
      local name = tostring(arg[0]):match("[^/\\]*$")
      io.stderr:write(name .. " needs Lua 5.4 (apt-get install lua5.4)\n")
    end
  end
  os.exit(type(code) == "number" and code or 1)
end

return M
