-- scripts/outputs_readme.lua [--check] FILE... -- the generated blocks of the docs
-- (README.md doc/*.md), in whichever file holds them:
--   * every fenced block that starts with a "$ lua run_op.lua ARGS" line holds what that
--     command prints, run from the checkout's root. A --plot PATH is written to a
--     temporary name; when the block is followed by an image line `![...](IMAGE.svg)`,
--     IMAGE (relative to the doc) is that plot, byte for byte;
--   * a line `<!-- include PATH -->` followed by a fenced block: the block is PATH's text;
--   * a block that starts with "$ make && ... lua5.4 -i" is a REPL session: its "> " and
--     ">> " lines are fed to that command, and the block is what it prints (the input
--     echoed by readline, the results), less the interpreter's banner.
-- Without --check the blocks (and images) are rewritten (`make outputs-readme`); with it,
-- the first one that differs is named and the exit status is 1 (spec/cli_spec.lua).
-- The virtual times are deterministic, so the blocks are the program's own output.
local check = arg[1] == "--check"
local paths = table.move(arg, check and 2 or 1, #arg, 1, {})
assert(#paths > 0, "usage: lua5.4 scripts/outputs_readme.lua [--check] FILE...")
local lua = arg[-1] or "lua5.4"

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

local function spill(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- what `lua run_op.lua args` prints (stdout and stderr), and the plot it wrote, if any
local function output(args)
  local tmp = os.tmpname()
  local cmd = args:gsub("%-%-plot%s+%S+", "--plot " .. tmp .. ".svg")
  local p = assert(io.popen(string.format("%s run_op.lua %s 2>&1", lua, cmd)))
  local out = p:read("a")
  p:close()
  local svg = slurp(tmp .. ".svg")
  os.remove(tmp)
  os.remove(tmp .. ".svg")
  if out:sub(-1) ~= "\n" then out = out .. "\n" end
  return out, svg
end

-- what the interpreter of `$ make && CMD` prints for the session's input lines
local function session(cmd, body)
  local input = {}
  for line in body:gmatch("[^\n]*\n") do
    local l = line:match("^>>? (.*%S.*\n)$")
    if l then input[#input + 1] = l end
  end
  local tmp = os.tmpname()
  spill(tmp, table.concat(input))
  local p = assert(io.popen(string.format("%s < %s 2>&1", cmd, tmp)))
  local out = p:read("a")
  p:close()
  os.remove(tmp)
  out = out:gsub("^Lua [^\n]*\n", ""):gsub("\n> ?\n?$", "\n")  -- the banner, the prompt at EOF
  return out
end

local n, stale = 0, nil
local function note(what) if stale == nil then stale = what end end

-- the text of one doc with its blocks made current; images rewritten unless checking
local function refresh(path)
  local dir = path:match("^(.*)/[^/]*$") or "."
  local text, parts, at = slurp(path), {}, 1
  while true do
    local s, e, args, body = text:find("```\n%$ lua run_op%.lua ([^\n]*)\n(.-)```\n", at)
    if not s then break end
    n = n + 1
    local out, svg = output(args)
    if out ~= body then note(path .. ": the block of 'lua run_op.lua " .. args .. "'") end
    local img = text:match("^\n?!%[[^\n]-%]%(([^)\n]+%.svg)%)", e + 1)
    if img and svg and slurp(dir .. "/" .. img) ~= svg then
      note(path .. ": the image " .. img .. " of 'lua run_op.lua " .. args .. "'")
      if not check then spill(dir .. "/" .. img, svg) end
    end
    parts[#parts + 1] = text:sub(at, s - 1) .. "```\n$ lua run_op.lua " .. args .. "\n" .. out .. "```\n"
    at = e + 1
  end
  text = table.concat(parts) .. text:sub(at)
  text = text:gsub("(```\n%$ make && ([^\n]*lua5%.4 %-i)\n)(.-)(```\n)", function(head, cmd, body, tail)
    n = n + 1
    local out = session(cmd, body)
    if out ~= body then note(path .. ": the REPL session of '" .. cmd .. "'") end
    return head .. out .. tail
  end)
  return (text:gsub("(<!%-%- include (%S+) %-%->\n```%w*\n)(.-)(```\n)", function(head, file, body, tail)
    n = n + 1
    local want = assert(slurp(file), path .. ": include " .. file .. ": no such file")
    if want ~= body then note(path .. ": the include of " .. file) end
    return head .. want .. tail
  end))
end

local texts = {}
for i, path in ipairs(paths) do texts[i] = refresh(path) end
assert(n > 0, table.concat(paths, " ") .. ": no block starts with '$ lua run_op.lua'")
if check then
  if stale then
    io.stderr:write(stale .. " is not what it is now (make outputs-readme rewrites it)\n")
    os.exit(1)
  end
  print(string.format("outputs-readme: %d generated blocks of %d docs are current", n, #paths))
  return
end
for i, path in ipairs(paths) do                -- only the docs whose blocks moved
  if texts[i] ~= slurp(path) then spill(path, texts[i]) end
end
print(string.format("outputs-readme: %d generated blocks of %d docs rewritten", n, #paths))
