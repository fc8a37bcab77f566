-- run_op.lua: the lab's command line.   lua run_op.lua allgather [options]
-- (lua run_op.lua --help lists the options)
if _VERSION ~= "Lua 5.4" then
  -- started by another Lua (Debian's `lua` can be 5.1): run under lua5.4
  local args = {}
  for i = 0, #arg do args[#args + 1] = "'" .. tostring(arg[i]):gsub("'", "'\\''") .. "'" end
  local ok, _, code = os.execute("lua5.4 " .. table.concat(args, " "))
  if type(ok) == "number" then          -- Lua 5.1: the raw wait status
    code = ok >= 256 and math.floor(ok / 256) or ok
    if code == 127 then io.stderr:write("run_op.lua needs Lua 5.4 (apt-get install lua5.4)\n") end
  end
  os.exit(type(code) == "number" and code or 1)
end

local root = debug.getinfo(1, "S").source:match("^@(.*)[/\\][^/\\]*$") or "."
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
package.cpath = root .. "/build/?.so;" .. package.cpath

os.exit(require("shmemlab.cli").main(arg))
