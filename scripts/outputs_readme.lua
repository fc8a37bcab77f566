-- scripts/outputs_readme.lua README.md -- rewrite every fenced block of README.md that
-- starts with a "$ lua run_op.lua ARGS" line with what that command prints now (run
-- from the checkout's root, a --plot file written to a temporary name and removed).
-- The virtual times are deterministic, so the blocks are the program's own output.
-- `make outputs-readme` runs it.
local path = assert(arg[1], "usage: lua5.4 scripts/outputs_readme.lua README.md")
local lua = arg[-1] or "lua5.4"

-- what `lua run_op.lua args` prints (stdout and stderr), a --plot FILE kept out of the tree
local function output(args)
  local tmp = os.tmpname()
  local cmd = args:gsub("%-%-plot%s+%S+", "--plot " .. tmp .. ".svg")
  local p = assert(io.popen(string.format("%s run_op.lua %s 2>&1", lua, cmd)))
  local out = p:read("a")
  p:close()
  os.remove(tmp)
  os.remove(tmp .. ".svg")
  return out
end

local f = assert(io.open(path, "r"))
local text = f:read("a")
f:close()
local n = 0
text = text:gsub("(```\n%$ lua run_op%.lua ([^\n]*)\n)(.-)(```\n)", function(head, args, _, tail)
  n = n + 1
  local out = output(args)
  if out:sub(-1) ~= "\n" then out = out .. "\n" end
  return head .. out .. tail
end)
assert(n > 0, path .. ": no block starts with '$ lua run_op.lua'")
f = assert(io.open(path, "w"))
f:write(text)
f:close()
print(string.format("outputs-readme: %d run_op blocks of %s rewritten", n, path))
