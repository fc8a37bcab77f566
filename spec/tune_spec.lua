-- --tune: the knobs an operator declares (op.define{tune}), their constraints, the
-- search (exhaustive, coordinate descent), the ranked table, the best as a command line
-- and JSON, and its check with data. Virtual times, exact.
local op = require("shmemlab.op")
local runner = require("shmemlab.runner")
local tune = require("shmemlab.tune")
local cjson = require("cjson")
local H = require("spec.helpers.cli")

-- a minimal operator table with tune field t
local function define(t)
  return op.define { name = "toy", collective = "allgather", dtypes = { "int32" }, unused = {},
    describe = function() end, payload = function() end, setup = function() end,
    run = function() end, check = function() end, tune = t }
end

-- the data rows of a tune table: {rank, knob values..., kernel_us, bound_us, eff, ratio}
local function table_rows(text)
  local rows = {}
  for line in text:gmatch("[^\n]+") do
    if line:match("^%s+%d+ ") then
      local cells = {}
      for w in line:gsub("|", " "):gmatch("%S+") do cells[#cells + 1] = w end
      rows[#rows + 1] = cells
    end
  end
  return rows
end

-- a small allgather: 8 PEs, 64 Ki elements, 1 warm-up and 2 measured launches
local SMALL = { "allgather", "--count", "65536", "-w", "1", "-n", "2", "-j", "1" }

describe("op.define's tune field", function()
  it("expands a range and takes a list", function()
    assert.same({ 1, 2, 4, 8, 16, 32 }, op.knob_values({ name = "t", range = { 1, 32, "x2" } }))
    assert.same({ 8, 16, 24 }, op.knob_values({ name = "t", range = { 8, 30, "+8" } }))
    assert.same({ "put", "get" }, op.knob_values({ name = "mode", values = { "put", "get" } }))
  end)

  it("refuses a knob without a name or values, a knob twice, a bad range or constraint", function()
    local cases = {
      { {}, "needs knobs" },
      { { knobs = { { values = { 1 } } } }, "knob 1 needs a name" },
      { { knobs = { { name = "a" } } }, "knob 'a': needs values" },
      { { knobs = { { name = "a", range = { 4, 2, "x2" } } } }, "knob 'a': needs values" },
      { { knobs = { { name = "a", values = {} } } }, "knob 'a': values must be a non-empty list" },
      { { knobs = { { name = "a", values = { 1 } }, { name = "a", values = { 2 } } } },
        "knob 'a' is declared twice" },
      { { knobs = { { name = "a", values = { 1 } } }, constraints = { { why = "x" } } },
        "constraint 1 needs why" },
    }
    for _, case in ipairs(cases) do
      local ok, err = pcall(define, case[1])
      assert.is_false(ok)
      assert.matches("operator 'toy': tune: " .. case[2], err, 1, true)
    end
  end)

  it("is declared by every built-in op: block_dim and ub_bytes, and each op's own", function()
    local own = { allgather = { "buffers", "algo" }, alltoall = { "buffers" },
      allreduce = { "buffers" }, reduce_scatter = { "buffers" }, broadcast = {},
      p2p = { "mode" }, dispatch = { "tile_tokens" }, combine = { "tile_tokens" } }
    for name, extra in pairs(own) do
      local o = runner.load_op(name)
      local names = {}
      for i, k in ipairs(o.tune.knobs) do names[i] = k.name end
      local want = { "block_dim", "ub_bytes" }
      for _, e in ipairs(extra) do want[#want + 1] = e end
      assert.same(want, names, name)
    end
  end)
end)

describe("the tune space", function()
  it("of allgather at 8 PEs of Ascend910B: 60 points, the relays refused", function()
    local o = runner.load_op("allgather")
    local c = runner.config(o, { count = 65536 })
    local points, refused, why = tune.space(o, c)
    assert.equal(60, #points)
    assert.equal(60, refused)
    for reason, n in pairs(why) do
      assert.equal(60, n)
      assert.matches("hier needs several whole servers or cards of two dies", reason, 1, true)
    end
    assert.same({ block_dim = 16, ub_bytes = 194560, buffers = 2, algo = "flat" },
                tune.defaults(o, c))
  end)

  it("of dispatch: tile_tokens bounded by what the UB holds", function()
    local o = runner.load_op("dispatch")
    local c = runner.config(o, { timing_only = true })
    assert.equal(31, tune.defaults(o, c).tile_tokens)       -- 190 KiB / (3 rows of 2 KiB)
    local points, refused = tune.space(o, c)
    local tiles = {}
    for _, p in ipairs(points) do tiles[p.tile_tokens] = true end
    assert.is_nil(tiles[32])                                 -- beyond the UB
    assert.is_true(tiles[16])
    assert.is_true(refused > 0)
  end)

  it("a run outside the constraints is a usage error naming the constraint", function()
    local status, _, err = H.run({ "allgather", "--algo", "hier" })
    assert.equal(2, status)
    assert.matches("operator allgather refuses this configuration: it needs algo flat or hier; "
      .. "hier needs several whole servers or cards of two dies", err, 1, true)
    status, _, err = H.run({ "allgather", "--knob", "buffers=3" })
    assert.equal(2, status)
    assert.matches("it needs buffers 1 (single) or 2 (double)", err, 1, true)
    status, _, err = H.run({ "allgather", "--knob", "tile_tokens=4" })
    assert.equal(2, status)
    assert.matches("operator allgather has no tune knob 'tile_tokens' (its knobs: block_dim, "
      .. "ub_bytes, buffers, algo)", err, 1, true)
  end)
end)

describe("the knobs", function()
  -- kernel_us of a timing-only small allgather with more options
  local function kernel(extra)
    local argv = H.append(SMALL, { "--timing-only", "--baseline", "none", "--json" })
    local status, out = H.run(H.append(argv, extra))
    assert.equal(0, status)
    return cjson.decode(out).rows[1].shmem.latency_us
  end

  it("buffers=2 is the default; buffers=1 waits for each write (exact virtual times)", function()
    assert.equal(11.827, tonumber(string.format("%.3f", kernel({}))))
    assert.equal(11.827, tonumber(string.format("%.3f", kernel({ "--knob", "buffers=2" }))))
    assert.equal(12.962, tonumber(string.format("%.3f", kernel({ "--knob", "buffers=1" }))))
  end)

  it("dispatch's tile_tokens sets the tile (the chunk describe reports)", function()
    local status, out = H.run({ "dispatch", "--timing-only", "--baseline", "none", "-w", "1",
                                "-n", "1", "--knob", "tile_tokens=4" })
    assert.equal(0, status)
    assert.matches("chunk 4096 elements", out, 1, true)       -- 4 tokens x hidden 1024
  end)
end)

describe("--tune", function()
  local status, out, err = H.run(H.append(SMALL, { "--tune" }))

  it("searches allgather's space exhaustively and finds one at least as good as the default", function()
    assert.equal(0, status, err)
    assert.matches("# tune: exhaustive, 60 of 60 valid points run; 60 refused", out, 1, true)
    local rows = table_rows(out)
    assert.equal(60, #rows)
    local default
    for _, r in ipairs(rows) do if r[#r] == "default" then default = r end end
    assert.same({ "9", "16", "194560", "2", "flat", "11.827", "10.063", "85.1", "213.8%",
                  "default" }, default)
    assert.same({ "1", "48", "16384", "2", "flat", "11.523", "10.063", "87.3", "219.5%" },
                rows[1])
    assert.is_true(tonumber(rows[1][6]) <= tonumber(default[6]))
    for i = 2, #rows do assert.is_true(tonumber(rows[i - 1][6]) <= tonumber(rows[i][6])) end
  end)

  it("prints every eff_% and ratio from the printed figures", function()
    for _, r in ipairs(table_rows(out)) do
      local k, b = tonumber(r[6]), tonumber(r[7])
      assert.equal(string.format("%.1f", b / k * 100), r[8])
      assert.equal(string.format("%.1f%%", 25.288 / k * 100), r[9])
    end
    assert.matches("hccl_kern = 25.288 us", out, 1, true)
  end)

  it("prints the best as a command line that reproduces it, and as JSON", function()
    local line = out:match("\nbest: ([^\n]+)")
    assert.equal("lua run_op.lua allgather --count 65536 --algo flat --block-dim 48 --ub-bytes "
      .. "16384 --warmup 1 --iters 2 --knob buffers=2", line)
    local doc = cjson.decode(out:match("\nbest %(JSON%): ([^\n]+)"))
    assert.same({ block_dim = 48, ub_bytes = 16384, buffers = 2, algo = "flat" }, doc.knobs)
    assert.equal(11.523, doc.kernel_us)
    local argv = H.append(doc.argv, { "--timing-only", "--baseline", "none", "--json" })
    local st, again = H.run(argv)
    assert.equal(0, st)
    assert.equal(11.523, tonumber(string.format("%.3f", cjson.decode(again).rows[1].shmem.latency_us)))
  end)

  it("re-runs the best with data and checks it", function()
    assert.matches("\ncheck of the best, with data: 0 wrong elements; kernel_us 11.523 "
      .. "(timing-only 11.523: equal)\n", out, 1, true)
  end)

  it("gives the same search as JSON", function()
    local st, text = H.run(H.append(SMALL, { "--tune", "--json" }))
    assert.equal(0, st)
    local g = cjson.decode(text).tune[1]
    assert.equal("exhaustive", g.search)
    assert.equal(60, g.points_run)
    assert.equal(60, #g.rows)
    assert.equal(11.523, g.best.kernel_us)
    assert.same({ wrong = 0, kernel_us = 11.523, equal = true }, g.data_check)
  end)

  it("runs a coordinate descent beyond --tune-points and says how many points it ran", function()
    local st, text = H.run(H.append(SMALL, { "--tune", "--tune-points", "10" }))
    assert.equal(0, st)
    local run = text:match("# tune: coordinate descent from the default %(at most 4 passes; "
      .. "the space exceeds %-%-tune%-points 10%), (%d+) of 60 valid points run")
    assert.is_not_nil(run)
    local rows = table_rows(text)
    assert.equal(tonumber(run), #rows)
    assert.is_true(#rows < 60)
    local default
    for _, r in ipairs(rows) do if r[#r] == "default" then default = r end end
    assert.is_true(tonumber(rows[1][6]) <= tonumber(default[6]))
  end)

  it("holds the knobs the command line sets", function()
    local st, text = H.run(H.append(SMALL, { "--tune", "--block-dim", "48", "--knob", "buffers=2" }))
    assert.equal(0, st)
    assert.matches("# tune: exhaustive, 5 of 5 valid points run; 5 refused by the op's constraints "
      .. "(5: algo flat or hier;", text, 1, true)
    assert.matches("; held by the command line: block_dim 48, buffers 2\n", text, 1, true)
    local rows = table_rows(text)
    assert.equal(5, #rows)
    for _, r in ipairs(rows) do assert.same({ "48", "2" }, { r[2], r[4] }) end
    assert.same({ "1", "48", "16384", "2", "flat", "11.523" }, { table.unpack(rows[1], 1, 6) })
  end)

  it("refuses --plot and --output (the best's command line takes them)", function()
    for _, opt in ipairs({ { "--plot", "t.svg" }, { "--output", "t_out" } }) do
      local st, _, e = H.run(H.append(SMALL, { "--tune", opt[1], opt[2] }))
      assert.equal(2, st)
      assert.matches(opt[1] .. " does not combine with --tune", e, 1, true)
    end
  end)

  it("refuses an op without knobs", function()
    local dir = H.tmpdir()
    local path = dir .. "/plain.lua"
    local f = assert(io.open(path, "w"))
    f:write([[local op = require("shmemlab.op")
return op.define { name = "plain", collective = "allgather", dtypes = { "int32" }, unused = {},
  describe = function() return {} end, payload = op.shard_payload,
  setup = function() return {} end, run = function() return {} end, check = function() return 0 end }
]])
    f:close()
    local st, _, e = H.run({ path, "--tune" })
    os.remove(path)
    os.remove(dir)
    assert.equal(2, st)
    assert.matches("operator plain declares no tune knobs", e, 1, true)
  end)
end)
