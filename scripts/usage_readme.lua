-- scripts/usage_readme.lua FILE... -- rewrite the usage block (the fenced block that
-- starts with "usage: lua run_op.lua") of whichever doc holds it (README.md doc/*.md)
-- with shmemlab.cli's generated help, which cli_spec checks it against.
-- `make usage-readme` runs it.
local paths = { ... }
assert(#paths > 0, "usage: lua5.4 scripts/usage_readme.lua FILE...")
local usage = require("shmemlab.cli").usage
local done = 0
for _, path in ipairs(paths) do
  local f = assert(io.open(path, "r"))
  local text = f:read("a")
  f:close()
  local s = text:find("```\nusage: lua run_op.lua", 1, true)
  if s then
    local e = assert(text:find("\n```\n", s + 4, true), path .. ": the usage block does not end")
    text = text:sub(1, s - 1) .. "```\n" .. usage .. text:sub(e + 1)
    f = assert(io.open(path, "w"))
    f:write(text)
    f:close()
    done = done + 1
    print("usage-readme: " .. path .. "'s usage block is cli.usage")
  end
end
assert(done > 0, table.concat(paths, " ") .. ": no usage block (```\\nusage: lua run_op.lua ...)")
