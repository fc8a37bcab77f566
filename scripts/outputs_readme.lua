-- scripts/outputs_readme.lua [--check] README.md -- every fenced block of README.md that
-- starts with a "$ lua run_op.lua ARGS" line holds what that command prints (run from
-- the checkout's root, a --plot file written to a temporary name and removed). Without
-- --check the blocks are rewritten with the output (`make outputs-readme`); with it,
-- the first block that differs is named and the exit status is 1 (spec/cli_spec.lua).
-- The virtual times are deterministic, so the blocks are the program's own output.
local check = arg[1] == "--check"
local path = assert(arg[check and 2 or 1], "usage: lua5.4 scripts/outputs_readme.lua [--check] README.md")
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
  if out:sub(-1) ~= "\n" then out = out .. "\n" end
  return out
end

local f = assert(io.open(path, "r"))
local text = f:read("a")
f:close()
local n, stale = 0, nil
text = text:gsub("(```\n%$ lua run_op%.lua ([^\n]*)\n)(.-)(```\n)", function(head, args, body, tail)
  n = n + 1
  local out = output(args)
  if out ~= body and stale == nil then stale = args end
  return head .. out .. tail
end)
assert(n > 0, path .. ": no block starts with '$ lua run_op.lua'")
if check then
  if stale then
    io.stderr:write(string.format("%s: the block of 'lua run_op.lua %s' is not what it prints "
      .. "now (make outputs-readme rewrites it)\n", path, stale))
    os.exit(1)
  end
  print(string.format("outputs-readme: %d run_op blocks of %s are current", n, path))
  return
end
f = assert(io.open(path, "w"))
f:write(text)
f:close()
print(string.format("outputs-readme: %d run_op blocks of %s rewritten", n, path))
