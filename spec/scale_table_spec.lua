-- doc/performance.md's scale block (`make scale`, bench/scale.lua): the growth
-- exponent it prints under the data-mode allgather rows, and every row's events per
-- second, must recompute, by shmemlab.scale_fit, from the events and the wall and CPU
-- seconds the rows print.
-- The block is measured (wall clock), so only its consistency is checked here;
-- spec/docs_spec.lua fails when it is stale.
local fit = require("shmemlab.scale_fit")
local docs = require("spec.helpers.docs")

-- the scale block of doc/performance.md
local function block()
  return assert(docs.read("doc/performance.md")
                  :match("<!%-%- measured:scale:begin.-<!%-%- measured:scale:end"),
                "doc/performance.md has no scale block: run make scale")
end

-- the scale block's data-mode rows ({events, wall, cpu} each) and its exponent line
local function scale_block()
  local b, ev, wall, cpu = block(), {}, {}, {}
  for events, w, c in b:gmatch("\nallgather %d+ PEs%s+(%d+)%s+%S+%s+([%d.]+)%s+([%d.]+)") do
    ev[#ev + 1], wall[#wall + 1], cpu[#cpu + 1] = tonumber(events), tonumber(w), tonumber(c)
  end
  return ev, wall, cpu, b:match("\n(growth exponent of [^\n]*)")
end

-- every measured row of the block: {name, events, events/s as printed, wall}
local function scale_rows()
  local rows = {}
  local row = "\n(%S[^\n]-)%s+(%d+)%s+(%S+)%s+(%d+%.%d%d)%s+%d+%.%d%d%s"
  for name, events, rate, wall in block():gmatch(row) do
    rows[#rows + 1] = { name, tonumber(events), rate, tonumber(wall) }
  end
  return rows
end

describe("doc/performance.md's scale block (make scale)", function()
  it("prints each row's events per second from its events and printed wall time", function()
    local rows = scale_rows()
    assert.is_true(#rows >= 6, "the scale block has fewer than six measured rows")
    for _, r in ipairs(rows) do
      assert.are.equal(fit.rate(r[2], r[4]), r[3], r[1])
    end
  end)

  it("prints no rate for a wall time of 0.00", function()
    assert.are.equal("-", fit.rate(962, 0.004))
    assert.are.equal("481", fit.rate(962, 2))
  end)

  it("prints a growth exponent that recomputes from its rows", function()
    local ev, wall, cpu, line = scale_block()
    assert.is_true(#ev >= 2, "the scale block has fewer than two data-mode allgather rows")
    assert.are.equal(fit.line(ev, wall, cpu), line)
  end)

  it("reads a time printed as 0.00 as 0.01, and fits a line exactly", function()
    assert.are.equal(0.01, fit.printed(0.004))
    assert.are.equal(0.96, fit.printed(0.9551))
    local l = fit.line({ 10, 100, 1000 }, { 0.1, 1, 10 }, { 0.001, 0.1, 10 })
    assert.matches("of wall over events: 1.00 (least squares), 1.00 (last two sizes); of CPU: "
                   .. "1.50, 2.00", l, 1, true)
  end)
end)
