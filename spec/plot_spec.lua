-- Plots people can read (issue 12, part 5): round value ticks, size labels that keep
-- apart on wide sweeps, and the frame breakdown written with --output.
local plot = require("shmemlab.plot")
local lfs = require("lfs")
local run = require("spec.helpers.cli").run

-- the (x, text) of an SVG's text elements with the given anchor
local function labels(svg, anchor)
  local t = {}
  for x, y, text in svg:gmatch('<text x="([%d.]+)" y="([%d.]+)" text%-anchor="' .. anchor
                               .. '">([^<]*)</text>') do
    t[#t + 1] = { x = tonumber(x), y = tonumber(y), text = text }
  end
  return t
end

-- is step 1, 2, 2.5 or 5 times a power of ten?
local function round_step(step)
  local m = step / 10 ^ math.floor(math.log(step, 10) + 1e-9)
  for _, want in ipairs({ 1, 2, 2.5, 5 }) do if math.abs(m - want) < 1e-6 then return true end end
  return false
end

describe("plot ticks", function()
  it("steps by 1, 2, 2.5 or 5 times a power of ten, from 0 past the largest value", function()
    for _, vmax in ipairs({ 171.7, 34.3 * 5, 0.52, 7.3, 1234.5, 0.003, 99.9, 100 }) do
      local top, step = plot.ticks(vmax)
      assert.is_true(round_step(step), vmax .. ": step " .. step)
      assert.is_true(top >= vmax - 1e-12 and top - step < vmax, vmax .. ": top " .. top)
      local n = math.floor(top / step + 0.5)
      assert.is_true(n >= 3 and n <= 8, vmax .. ": " .. n .. " intervals")
    end
  end)

  it("labels the bandwidth axis at round numbers", function()
    local svg = plot.svg{ title = "t", series = { { name = "a", color = "#000",
      points = { { 1024, 34.3 }, { 2048, 68.7 }, { 4096, 171.7 } } } } }
    local ys = labels(svg, "end")
    assert.is_true(#ys >= 4)
    local step = tonumber(ys[2].text) - tonumber(ys[1].text)
    assert.is_true(round_step(step), "step " .. step)
    for i, l in ipairs(ys) do
      assert.near((i - 1) * step, tonumber(l.text), 1e-9)
      assert.is_nil(l.text:find("%.%d%d"), l.text)       -- no 34.34-like labels
    end
  end)

  it("keeps the size labels of an 8 B .. 1 GiB sweep apart", function()
    local pts, b = {}, 8
    while b <= 1 << 30 do pts[#pts + 1] = { b, b / (b + 2 ^ 20) * 170 }; b = b * 2 end
    local svg = plot.svg{ title = "wide", series = { { name = "a", color = "#000", points = pts } } }
    local xs = {}
    for _, l in ipairs(labels(svg, "middle")) do
      if l.text:match("^%d+[KMG]?$") then xs[#xs + 1] = l end
    end
    assert.is_true(#xs >= 5)
    for i = 2, #xs do
      local a, c = xs[i - 1], xs[i]
      local room = (#a.text + #c.text) / 2 * plot.CHAR_PX + plot.LABEL_GAP_PX
      assert.is_true(c.x - a.x >= room, a.text .. " and " .. c.text .. " overlap")
    end
    assert.equal("1G", xs[#xs].text)
    -- a narrow sweep labels every size
    local few = plot.svg{ series = { { name = "a", color = "#000",
      points = { { 1024, 1 }, { 2048, 2 }, { 4096, 3 } } } } }
    local n = 0
    for _, l in ipairs(labels(few, "middle")) do if l.text:match("^%dK$") then n = n + 1 end end
    assert.equal(3, n)
  end)
end)

describe("the frame breakdown", function()
  it("stacks each frame's share per PE, per block on one PE", function()
    local rows = {
      { pe = 0, block = 0, frame = 1, cycles = 300, count = 1 },
      { pe = 0, block = 1, frame = 2, cycles = 100, count = 1 },
      { pe = 1, block = 0, frame = 1, cycles = 50, count = 1 },
      { pe = 1, block = 0, frame = 2, cycles = 150, count = 1 },
    }
    local names = require("shmemlab").frames.names
    local bars, by = plot.frame_bars(rows, names)
    assert.equal("pe", by)
    assert.same({ "PE 0", "PE 1" }, { bars[1].label, bars[2].label })
    assert.same({ 400, 200 }, { bars[1].total, bars[2].total })
    assert.same({ "remote_put_get", "signal_or_barrier_wait" }, { bars[2].parts[1].name,
                                                                  bars[2].parts[2].name })
    local one = plot.frame_bars({ rows[1], rows[2] }, names)
    assert.same({ "block 0", "block 1" }, { one[1].label, one[2].label })
    local svg = plot.frames_svg{ title = "f", bars = bars }
    local h = {}
    for height, title in svg:gmatch('height="([%d.]+)" fill="[^"]+"><title>([^<]+)</title>') do
      h[#h + 1] = { tonumber(height), title }
    end
    assert.equal(4, #h)
    assert.near(h[1][1] * 100 / 75, h[2][1] * 100 / 25, 0.2)     -- 75% and 25% of one height
    assert.matches("PE 1 signal_or_barrier_wait: 75.0%", svg, 1, true)
  end)

  it("is written with --output for the op and its baseline", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert.equal(0, (run({ "allgather", "--pes", "3", "--count", "2048", "-w", "0", "-n", "1",
                           "--output", dir })))
    for _, path in ipairs({ dir .. "/frames.svg", dir .. "/hccl/frames.svg" }) do
      assert.equal("file", lfs.attributes(path, "mode"))
      local svg = io.open(path):read("a")
      assert.matches("^<svg", svg)
      for pe = 0, 2 do assert.matches(">PE " .. pe .. "</text>", svg, 1, true) end
      assert.matches("remote_put_get", svg, 1, true)
      assert.matches("share of the frame cycles", svg, 1, true)
    end
  end)
end)
