-- scripts/op_outputs.lua DIR -- write what `lua run_op.lua OP` and `lua run_op.lua OP
-- --tool all` print for every operator of ops/ into DIR/OP.txt and DIR/OP.all.txt
-- (run from the checkout's root). The virtual times are deterministic, so two builds
-- that schedule alike write the same files: `make op-outputs OUT=DIR` with each build,
-- then `diff -r` the two folders, is the check that a change left every op's
-- times, frames and records as they were.
local dir = assert(arg[1], "usage: lua5.4 scripts/op_outputs.lua DIR")
local lua = arg[-1] or "lua5.4"
assert(os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'"), "cannot make " .. dir)

-- run_op.lua's output for args into file
local function keep(args, file)
  local p = assert(io.popen(string.format("%s run_op.lua %s 2>&1", lua, args)))
  local out = p:read("a")
  p:close()
  local f = assert(io.open(dir .. "/" .. file, "w"))
  f:write(out)
  f:close()
end

local n = 0
local ls = assert(io.popen("ls ops/*.lua"))
for path in ls:lines() do
  local op = path:match("ops/([%w_]+)%.lua$")
  keep(op, op .. ".txt")
  keep(op .. " --tool all", op .. ".all.txt")
  n = n + 1
end
ls:close()
print(string.format("op-outputs: %d operators, plain and --tool all, in %s", n, dir))
