-- scripts/usage_readme.lua README.md -- rewrite README's usage block (the fenced block
-- that starts with "usage: lua run_op.lua") with shmemlab.cli's generated help, which
-- cli_spec checks it against. `make usage-readme` runs it.
local path = assert(arg[1], "usage: lua5.4 scripts/usage_readme.lua README.md")
local f = assert(io.open(path, "r"))
local text = f:read("a")
f:close()
local s = text:find("```\nusage: lua run_op.lua", 1, true)
assert(s, path .. ": no usage block (```\\nusage: lua run_op.lua ...)")
local e = assert(text:find("\n```\n", s + 4, true), path .. ": the usage block does not end")
local usage = require("shmemlab.cli").usage
text = text:sub(1, s - 1) .. "```\n" .. usage .. text:sub(e + 1)
f = assert(io.open(path, "w"))
f:write(text)
f:close()
print("usage-readme: " .. path .. "'s usage block is cli.usage")
