-- bench/chain.lua: how close a pipelined chain issued as one flow times to the
-- chunked chain it stands for (doc/chain.md). Each row is the timing-only
-- allgather of 1 MiB per PE (count 262144 int32) x 48 blocks on Ascend910B, one
-- launch, PE profiling off, run twice in this process: chain_flow = false (every
-- chunk its own flow and events) and true (one flow a chain); `flat` is --algo
-- flat, `relay` the server relay. Virtual time is m:now() (exact, the same on
-- every machine); events and CPU are the launch's (setup apart); chains and
-- ghosts are the one-flow run's m:chains() and m:ghosts(). Run with `make chain`
-- (it writes doc/chain.md's block); `--max-pes N` stops earlier (default 512).
-- `--run-ahead` prints doc/scale.md's table instead: the flat allgather exact,
-- run_ahead = false against the default, its events by kind (m:event_kinds()).
local runner = require("shmemlab.runner")
local lab = require("shmemlab")

local WINDOWS = { 0, 1000 }
local CASES = { { "flat", 64 }, { "flat", 128 }, { "flat", 256 },
                { "relay", 64 }, { "relay", 128 }, { "relay", 256 }, { "relay", 512 } }

-- one launch of the allgather: its figures
local function run(algo, pes, window, chain_flow, run_ahead)
  local op = runner.load_op("allgather")
  local c = runner.config(op, { pes = pes, block_dim = 48, timing_only = true, count = 262144,
                                algo = algo == "relay" and "hier" or "flat", settle_ns = window,
                                chain_flow = chain_flow, warmup = 0, iters = 1,
                                baseline = "none" })
  local m = lab.machine{ profile = c.profile, pes = c.pes, prof_pe = -1, data = false,
                         chain_flow = c.chain_flow, run_ahead = run_ahead }
  local s = op.setup(m, c)
  local e0, k0, c0 = m:events(), m:event_kinds(), os.clock()
  op.run(m, c, s)
  local r = { now = m:now(), events = m:events() - e0, cpu = os.clock() - c0,
              chains = m:chains(), ghosts = m:ghosts(), kinds = m:event_kinds() }
  for kind, n in pairs(k0) do r.kinds[kind] = r.kinds[kind] - n end
  m:close()
  collectgarbage()
  return r
end

-- "a -> b" of two integers with thousands separators
local function group(n)
  local s = string.format("%d", n)
  return (s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end

-- the virtual-time cell: the same, or chunked -> one flow and the difference
local function time_cell(a, b)
  if string.format("%.6f", a) == string.format("%.6f", b) then
    return string.format("%.6f us, the same", a)
  end
  return string.format("%.6f -> %.6f us (%+.3f%%)", a, b, (b - a) / a * 100)
end

-- the chains table: each case chunked, then one flow a chain
local function chains(max_pes)
  print(string.format("%-10s %-7s %-44s %-25s %-14s %-16s %s", "run", "window",
                      "virtual time, chunked -> one flow", "events", "CPU s",
                      "chains one/chunked", "ghosts (late)"))
  for _, cs in ipairs(CASES) do
    local algo, pes = cs[1], cs[2]
    if pes <= max_pes then
      for _, w in ipairs(WINDOWS) do
        local a, b = run(algo, pes, w, false), run(algo, pes, w, true)
        print(string.format("%-10s %-7s %-44s %-25s %-14s %-16s %s", pes .. " " .. algo,
                            w == 0 and "0" or w .. " ns", time_cell(a.now, b.now),
                            group(a.events) .. " -> " .. group(b.events),
                            string.format("%.2f -> %.2f", a.cpu, b.cpu),
                            group(b.chains.one) .. " / " .. group(b.chains.chunked),
                            string.format("%s (%s)", group(b.ghosts.ghosts), group(b.ghosts.late))))
        io.stdout:flush()
      end
    end
  end
end

-- the run-ahead table: the flat allgather exact, run_ahead false then true
local function run_ahead(max_pes)
  local cols = { "events", "wake", "pipe", "copy", "flow", "signal" }
  print(string.format("%-5s %-9s %11s %11s %11s %11s %11s %8s %7s  %s", "PEs", "run_ahead",
                      "events", "wake-ups", "pipe steps", "copies", "flow ends", "signals",
                      "CPU s", "virtual time"))
  for _, pes in ipairs({ 64, 128, 256 }) do
    if pes <= max_pes then
      for _, ahead in ipairs({ false, true }) do
        local r, cells = run("flat", pes, 0, true, ahead), {}
        r.kinds.events = r.events
        for i, k in ipairs(cols) do cells[i] = group(r.kinds[k]) end
        print(string.format("%-5d %-9s %11s %11s %11s %11s %11s %8s %7.2f  %.6f us", pes,
                            tostring(ahead), cells[1], cells[2], cells[3], cells[4], cells[5],
                            cells[6], r.cpu, r.now))
        io.stdout:flush()
      end
    end
  end
end

local function main(args)
  local max_pes, ahead = 512, false
  for i = 1, #args do
    if args[i] == "--max-pes" then max_pes = assert(math.tointeger(tonumber(args[i + 1])),
                                                    "--max-pes N") end
    if args[i] == "--run-ahead" then ahead = true end
  end
  if ahead then run_ahead(max_pes) else chains(max_pes) end
end

main(arg)
