-- doc/performance.md's scale block (`make scale`, bench/scale.lua): the growth
-- exponent it prints under the data-mode allgather rows must recompute, by
-- shmemlab.scale_fit, from the events and the wall and CPU seconds those rows print.
-- The block is measured (wall clock), so only its consistency is checked here;
-- spec/docs_spec.lua fails when it is stale.
local fit = require("shmemlab.scale_fit")
local docs = require("spec.helpers.docs")

-- the scale block's data-mode rows ({events, wall, cpu} each) and its exponent line
local function scale_block()
  local text = docs.read("doc/performance.md")
  local block = assert(text:match("<!%-%- measured:scale:begin.-<!%-%- measured:scale:end"),
                       "doc/performance.md has no scale block: run make scale")
  local ev, wall, cpu = {}, {}, {}
  for events, w, c in block:gmatch("\nallgather %d+ PEs%s+(%d+)%s+[%d.]+%s+([%d.]+)%s+([%d.]+)") do
    ev[#ev + 1], wall[#wall + 1], cpu[#cpu + 1] = tonumber(events), tonumber(w), tonumber(c)
  end
  return ev, wall, cpu, block:match("\n(growth exponent of [^\n]*)")
end

describe("doc/performance.md's scale block (make scale)", function()
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
