-- bench/shell.lua: what the benches that run other processes share (bench/par.lua,
-- bench/peers/peers.lua, bench/peers/scale.lua): quoting for sh, sizes such as 64K, and a
-- command line's output, exit status, wall and CPU seconds
local shell = {}

-- single-quote s for sh
function shell.q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- "64K" -> 65536
function shell.bytes_of(s)
  local n, unit = s:match("^(%d+)([KMG]?)$")
  assert(n, "bad size '" .. s .. "' (like 1K, 4M)")
  return tonumber(n) * ({ [""] = 1, K = 1024, M = 1024 ^ 2, G = 1024 ^ 3 })[unit] // 1
end

-- seconds of a `times` figure: "1m2.500000s" -> 62.5
function shell.secs(t)
  local mins, sec = t:match("(%d+)m([%d.]+)s")
  return tonumber(mins) * 60 + tonumber(sec)
end

-- shell.timed(cmd) -> output, wall seconds, exit status, CPU seconds: run a shell command
-- line (stderr with stdout); CPU is user + system of its processes (the shell's `times`)
function shell.timed(cmd)
  local sh = "t0=$(date +%s%N); " .. cmd .. "; echo \"RC $?\"; t1=$(date +%s%N); " ..
             "echo \"WALL $((t1 - t0))\"; echo CPU; times"
  local p = assert(io.popen("sh -c " .. shell.q(sh) .. " 2>&1"))
  local out = p:read("a")
  p:close()
  local user, sys = out:match("CPU\n[^\n]*\n(%S+) (%S+)")
  return out, tonumber(out:match("WALL (%d+)")) / 1e9, tonumber(out:match("RC (%d+)")),
         shell.secs(user) + shell.secs(sys)
end

return shell
