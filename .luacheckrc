-- luacheck configuration (`make lint`).
std = "lua54"
globals = {}
max_line_length = 110
exclude_files = { "build*/**" }

-- specs and their helpers use busted's globals (describe, it, assert, ...)
files["spec"] = { std = "+busted" }
