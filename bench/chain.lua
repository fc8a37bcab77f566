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
-- `--settle` prints doc/scale.md's settle-window table: what each window moves
-- and saves, each case exact and then windowed (virtual time and its drift from
-- exact, the solver's settled instants, the launch's events and CPU): the flat
-- allgather at 64-512 PEs, the server relay at 16 and 64, the data-mode flat
-- allgather (1024 int32 a PE x 16 blocks) at 256, and DeepEP main's dispatch
-- (ops/deepep/dispatch_hccl.lua) at EP16 on Ascend910_93.
local runner = require("shmemlab.runner")
local group = require("shmemlab.doc_table").thousands

local WINDOWS = { 0, 1000 }
local CASES = { { "flat", 64 }, { "flat", 128 }, { "flat", 256 },
                { "relay", 64 }, { "relay", 128 }, { "relay", 256 }, { "relay", 512 } }

-- --settle's cases: name, op, options, windows (ns) after the exact run
local ALL = { 10, 50, 100, 1000 }
local function ag(pes, algo, count, windows)
  return { string.format("allgather %s %s %d PEs", algo == "hier" and "relay" or "flat",
                         count == 1024 and "data 1024" or "1 MiB", pes), "allgather",
           { pes = pes, algo = algo, count = count, block_dim = count == 1024 and 16 or 48,
             timing_only = count ~= 1024 }, windows }
end
local SETTLE = { ag(64, "flat", 262144, ALL), ag(128, "flat", 262144, ALL),
                 ag(256, "flat", 262144, ALL), ag(512, "flat", 262144, { 100, 1000 }),
                 ag(16, "hier", 262144, { 100, 1000 }), ag(64, "hier", 262144, { 100, 1000 }),
                 ag(256, "flat", 1024, { 10, 100 }),
                 { "deepep dispatch_hccl EP16 x 1024", "deepep/dispatch_hccl",
                   { soc = "Ascend910_93", pes = 16, timing_only = true, local_tokens = 1024,
                     hidden = 7168, topk = 8, experts = 256 }, { 10, 100, 1000 } } }

-- one launch of opname (a name in ops/, or family/name) with options opts (the
-- machine's run_ahead apart), PE profiling off: its figures
local function launch(opname, opts, run_ahead)
  local op, c, m = runner.one_launch(opname, opts, { run_ahead = run_ahead })
  local s = op.setup(m, c)
  local e0, k0, f0, c0 = m:events(), m:event_kinds(), m:flow_stats(), os.clock()
  op.run(m, c, s)
  local r = { now = m:now(), events = m:events() - e0, cpu = os.clock() - c0,
              settles = m:flow_stats().settles - f0.settles, chains = m:chains(),
              ghosts = m:ghosts(), kinds = m:event_kinds() }
  for kind, n in pairs(k0) do r.kinds[kind] = r.kinds[kind] - n end
  m:close()
  collectgarbage()
  return r
end

-- one launch of the allgather: its figures
local function run(algo, pes, window, chain_flow, run_ahead)
  return launch("allgather", { pes = pes, block_dim = 48, timing_only = true, count = 262144,
                               algo = algo == "relay" and "hier" or "flat", settle_ns = window,
                               chain_flow = chain_flow }, run_ahead)
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

-- the settle-window table: each case exact, then at each of its windows
local function settle(max_pes)
  local function line(name, window, r, exact)
    local drift = exact and string.format("%+.4f%%", (r.now - exact.now) / exact.now * 100) or "-"
    print(string.format("%-34s %-8s %15.6f %10s %12s %10s %8.2f", name, window, r.now, drift,
                        group(r.events), group(r.settles), r.cpu))
    io.stdout:flush()
  end
  print(string.format("%-34s %-8s %15s %10s %12s %10s %8s", "case", "window", "virtual us",
                      "drift", "events", "settles", "CPU s"))
  for _, cs in ipairs(SETTLE) do
    local name, opname, opts, windows = cs[1], cs[2], cs[3], cs[4]
    if opts.pes <= max_pes then
      local function at(w)                  -- a copy of opts with the window
        local o = { settle_ns = w }
        for k, v in pairs(opts) do o[k] = v end
        return launch(opname, o)
      end
      local exact = at(0)
      line(name, "exact", exact)
      for _, w in ipairs(windows) do line("", w .. " ns", at(w), exact) end
    end
  end
  print("(drift: the windowed run's virtual time against the exact run's; settles: the flow "
        .. "solver's settled instants; events and CPU: the launch's, setup apart)")
end

local function main(args)
  local max_pes, ahead = 512, false
  for i = 1, #args do
    if args[i] == "--max-pes" then max_pes = assert(math.tointeger(tonumber(args[i + 1])),
                                                    "--max-pes N") end
    if args[i] == "--run-ahead" then ahead = true end
    if args[i] == "--settle" then ahead = "settle" end
  end
  if ahead == "settle" then settle(max_pes)
  elseif ahead then run_ahead(max_pes) else chains(max_pes) end
end

main(arg)
