-- run_op.lua: the lab's command line.   lua run_op.lua allgather [options]
-- (lua run_op.lua --help lists the options)
local root = debug.getinfo(1, "S").source:match("^@(.*)[/\\][^/\\]*$") or "."
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
package.cpath = root .. "/build/?.so;" .. package.cpath
-- started by another Lua (Debian's `lua` can be 5.1): re-run under lua5.4
require("shmemlab.lua54").ensure()

os.exit(require("shmemlab.cli").main(arg))
