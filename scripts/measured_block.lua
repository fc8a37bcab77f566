-- scripts/measured_block.lua: the measurement tables of the manual (wall clock, CPU,
-- memory: figures of the machine that ran them, unlike the virtual times). The make
-- target that measures a table writes it, with the machine and the date, into
-- whichever doc holds its markers; nobody edits it by hand:
--   lua5.4 scripts/measured_block.lua NAME 'COMMAND' FILE...
-- runs COMMAND (its output also goes to stdout) and rewrites the block NAME of FILE...
-- (README.md doc/*.md). spec/docs_spec.lua fails when a block's body is not what its
-- checksum says (edited by hand) or its bench fingerprint is not that of the bench's
-- current files (the bench measures something else now: run its target again).
-- As a module (require("scripts.measured_block")) it gives BLOCKS, fingerprint,
-- checksum and parse.
local M = {}

-- each table: the target that writes it and the files whose text decides what it measures
M.BLOCKS = {
  engine = { target = "make bench", inputs = { "bench/engine.lua" } },
  check = { target = "make bench", inputs = { "bench/check.lua" } },
  dtype = { target = "make bench", inputs = { "bench/dtype_bench.c" } },
  scale = { target = "make scale", inputs = { "bench/scale.lua" } },
  moe = { target = "make scale", inputs = { "bench/moe.lua" } },
  chain = { target = "make chain", inputs = { "bench/chain.lua" } },
  runahead = { target = "make chain", inputs = { "bench/chain.lua" } },
  settle = { target = "make chain", inputs = { "bench/chain.lua" } },
  peers = { target = "make bench-peers", inputs = { "bench/peers/peers.lua", "bench/shell.lua",
            "bench/peers/collectives.c", "bench/peers/floor.c", "bench/peers/data.h" } },
  peerscale = { target = "make bench-peers-scale",
                inputs = { "bench/peers/scale.lua", "bench/peers/window.c", "bench/shell.lua" } },
}

-- FNV-1a 64 of a string, as 16 hex digits
function M.checksum(text)
  local h, prime = 0xcbf29ce484222325, 0x100000001b3
  for i = 1, #text do h = (h ~ text:byte(i)) * prime end
  return string.format("%016x", h)
end

-- the checksum of the named files' names and bytes
function M.fingerprint(files)
  local parts = {}
  for _, name in ipairs(files) do
    local f = assert(io.open(name, "rb"))
    parts[#parts + 1] = name .. "\0" .. f:read("a") .. "\0"
    f:close()
  end
  return M.checksum(table.concat(parts))
end

function M.begin_marker(name)
  return "<!-- measured:" .. name .. ":begin (" .. M.BLOCKS[name].target
    .. " writes this block; do not edit it) -->"
end
function M.end_marker(name) return "<!-- measured:" .. name .. ":end -->" end

-- every measured block of text: {name, fingerprint, checksum, body}
function M.parse(text)
  local out = {}
  for name, rest in text:gmatch("<!%-%- measured:(%w+):begin [^\n]*\n(.-)<!%-%- measured:%w+:end %-%->") do
    local fp, sum = rest:match("[Bb]ench fingerprint (%x+), table checksum (%x+)")
    out[#out + 1] = { name = name, fingerprint = fp, checksum = sum,
                      body = rest:match("\n```\n(.*)```\n$") }
  end
  return out
end

local function first_line(path)
  local f = io.open(path)
  if not f then return nil end
  local l = f:read("l")
  f:close()
  return l
end

-- the machine: CPU model, cores, load average when the measurement started
local function machine()
  local cpu = "an unknown CPU"
  for line in (io.open("/proc/cpuinfo") or io.open("/dev/null")):lines() do
    local m = line:match("^model name%s*:%s*(.-)%s*$")
    if m then cpu = m break end
  end
  local p = io.popen("nproc 2>/dev/null")
  local cores = p and p:read("n")
  if p then p:close() end
  local load = (first_line("/proc/loadavg") or "?"):match("^(%S+)")
  return string.format("%s, %s cores, load average %s at the start", cpu, tostring(cores or "?"), load)
end

local function main(name, cmd, paths)
  local spec = assert(M.BLOCKS[name], "unknown measured block " .. tostring(name))
  cmd = cmd:gsub("%s+$", "")
  local stamp = os.date("!%Y-%m-%d %H:%M UTC")
  local where = machine()
  local p = assert(io.popen(cmd))
  local lines = {}
  for line in p:lines() do
    print(line)
    io.stdout:flush()
    lines[#lines + 1] = line
  end
  local ok = p:close()
  if not ok then io.stderr:write(cmd .. " failed: the block was left as it was\n") os.exit(1) end
  local body = table.concat(lines, "\n") .. "\n"
  local block = table.concat({ M.begin_marker(name),
    string.format("Measured by `%s` (`%s`) on %s, %s. Bench fingerprint %s, table checksum %s.",
                  cmd, spec.target, where, stamp, M.fingerprint(spec.inputs), M.checksum(body)),
    "", "```", body .. "```", M.end_marker(name) }, "\n")
  require("scripts.readme_block")(paths, M.begin_marker(name), M.end_marker(name), block,
                                  "measured " .. name)
end

if arg and arg[0] and arg[0]:match("measured_block%.lua$") and ... ~= "scripts.measured_block" then
  assert(arg[3], "usage: lua5.4 scripts/measured_block.lua NAME 'COMMAND' FILE...")
  main(arg[1], arg[2], table.move(arg, 3, #arg, 1, {}))
end
return M
