-- A fuzz of run_op.lua's command line (issue 9, defect 11): a few hundred random
-- bad argument vectors, seeded (SHMEMLAB_CLI_FUZZ_SEED, else a fixed seed; the seed
-- is printed). Each must exit 2 with one line on stderr, no traceback, no internal
-- file:line, nothing on stdout and nothing written.
local cli = require("shmemlab.cli")
local lfs = require("lfs")

local sink = require("spec.helpers.cli").sink

local SEED = math.tointeger(tonumber(os.getenv("SHMEMLAB_CLI_FUZZ_SEED") or "")) or 20261202
local N = 300

-- a random word of letters, digits and punctuation
local function word(rnd)
  local chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789_-.,=%/"
  local t = {}
  for i = 1, rnd(1, 10) do
    local j = rnd(1, #chars)
    t[i] = chars:sub(j, j)
  end
  return table.concat(t)
end

-- the bad part of a vector: one mistake, placed last so nothing overrides it
local function mistakes(rnd, dir)
  local pick = {
    function() return { "--" .. word(rnd):gsub("^%-+", "") .. "zz" } end,       -- unknown option
    function() return { ({ "--pes", "--count", "--soc", "--set", "--root" })[rnd(1, 5)] } end,
    function() return { ({ "--pes", "--count", "-w", "-n", "--root" })[rnd(1, 5)], word(rnd) .. "x" } end,
    function() return { "--pes", tostring(({ 0, -1, 1025, 4096, rnd(1025, 100000) })[rnd(1, 5)]) } end,
    function() return { "--count", tostring(-rnd(0, 1000)) } end,
    function() return { "--iters", tostring(-rnd(0, 5)) } end,
    function() return { "--warmup", tostring(-rnd(1, 5)) } end,
    function() return { "--block-dim", tostring(-rnd(0, 5)) } end,
    function() return { "--prof-pe", tostring(rnd(1024, 5000)) } end,
    function() return { "--root", tostring(({ -1, rnd(1024, 9999) })[rnd(1, 2)]) } end,
    function() return { "--reduce", ({ "avg", "prod", "SUM", word(rnd) })[rnd(1, 4)] } end,
    function() return { "--mode", "x" .. word(rnd) } end,
    function() return { "--tool", ({ "0", "racechek", "memcheck,bogus", word(rnd) .. "q" })[rnd(1, 4)] } end,
    function()
      return { ({ "-c", "--check" })[rnd(1, 2)], ({ "2", "racecheck", "-1", word(rnd) })[rnd(1, 4)] }
    end,
    function()
      return { ({ "-a", "--average" })[rnd(1, 2)], ({ "4", "-1", "avg", word(rnd) .. "q" })[rnd(1, 4)] }
    end,
    function() return { "--baseline", "n" .. word(rnd) } end,
    function() return { "--soc", "Ascend" .. word(rnd) } end,
    function() return { "--dtype", ({ "fp64", "double", "int4", "q" .. word(rnd) })[rnd(1, 4)] } end,
    function() return { "--set", word(rnd):gsub("=", "") .. "q=1" } end,
    function() return { "--set", "hccs_GBps=" .. ({ "fast", "-3", "true" })[rnd(1, 3)] } end,
    function() return { "--set", "nokey" } end,
    function() return { "-b", "8M", "-e", "8K" } end,
    function() return { "-b", "8K" } end,
    function() return { "-b", "1K", "-e", "4K", "-f", tostring(rnd(-3, 1)) } end,
    function() return { "-b", word(rnd) .. "Q", "-e", "1M" } end,
    function() return { "--shape", word(rnd) .. "," } end,
    function() return { "extra" .. word(rnd) } end,
    function() return { "--output", "/proc/no/" .. word(rnd):gsub("/", "") } end,
    function() return { "--plot", "/proc/no/such/p.svg" } end,   -- a folder --plot cannot create
    function() return { "--plot", dir } end,
    function() return { "--ub-bytes", "0" } end,
  }
  return pick[rnd(1, #pick)]()
end

-- valid options that never make a mistake good
local function extras(rnd, dir, i)
  local pool = {
    { "--pes", tostring(rnd(1, 16)) }, { "--count", tostring(rnd(1, 4096)) }, { "-w", "0" },
    { "-n", "1" }, { "--json" }, { "--baseline", "none" }, { "--dtype", "fp16" },
    { "--output", dir .. "/out" .. i }, { "--plot", dir .. "/plot" .. i .. ".svg" },
    { "--set", "hccs_GBps=14" }, { "--tool", "memcheck" }, { "-c", "0" }, { "-a", "1" },
    { "--block-dim", "2" },
  }
  local t = {}
  for _ = 1, rnd(0, 4) do
    for _, a in ipairs(pool[rnd(1, #pool)]) do t[#t + 1] = a end
  end
  return t
end

describe("run_op.lua's command line fuzz", function()
  it("exits 2 with one line and writes nothing for " .. N .. " bad vectors", function()
    print(string.format("cli fuzz: seed %d (SHMEMLAB_CLI_FUZZ_SEED), %d vectors", SEED, N))
    local dir = os.tmpname()
    os.remove(dir)
    assert(lfs.mkdir(dir))
    local rng = math.random
    math.randomseed(SEED)
    local ops = { "allgather", "allreduce", "alltoall", "broadcast", "reduce_scatter", "p2p" }
    for i = 1, N do
      local argv = { ops[rng(1, #ops)] }
      if rng(1, 20) == 1 then argv[1] = "nosuchop" .. i end
      for _, a in ipairs(extras(rng, dir, i)) do argv[#argv + 1] = a end
      for _, a in ipairs(mistakes(rng, dir)) do argv[#argv + 1] = a end
      local out, err = sink(), sink()
      local status = cli.main(argv, out, err)
      local label = string.format("seed %d vector %d: %s", SEED, i, table.concat(argv, " "))
      assert.equal(2, status, label .. "\n" .. err:text())
      assert.equal("", out:text(), label)
      assert.matches("^run_op.lua: [^\n]+\n$", err:text(), nil, nil, label)
      assert.is_nil(err:text():find("traceback", 1, true), label)
      assert.is_nil(err:text():find("%.lua:%d+:"), label .. "\n" .. err:text())
    end
    local left = {}
    for f in lfs.dir(dir) do if f ~= "." and f ~= ".." then left[#left + 1] = f end end
    lfs.rmdir(dir)
    assert.same({}, left)
  end)
end)
