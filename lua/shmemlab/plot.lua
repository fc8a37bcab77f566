-- shmemlab.plot: SVG charts. plot.svg draws bus bandwidth against message size (log-scaled
-- size axis, labelled axes, a legend) for a sweep of an operator and its baseline;
-- plot.frames_svg the share of each cycle-profiling frame per PE or per block, stacked;
-- plot.pes_svg bus bandwidth and efficiency against PE count (a PE sweep).
-- Value axes tick at round numbers (1, 2, 2.5 or 5 times a power of ten); a wide size
-- axis labels every 2nd, 5th or 10th power of two so that its labels keep apart.
local plot = {}

plot.LABEL_GAP_PX = 8          -- the least room between two axis labels
plot.CHAR_PX = 7               -- the width of a label's character at font-size 12

-- a size in bytes as 8K / 64M
local function size_label(b)
  local units = { { 1 << 30, "G" }, { 1 << 20, "M" }, { 1 << 10, "K" } }
  for _, u in ipairs(units) do
    if b >= u[1] and b % u[1] == 0 then return string.format("%d%s", b // u[1], u[2]) end
  end
  return tostring(b)
end
plot.size_label = size_label

-- escape text for XML
local function esc(s)
  return (tostring(s):gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;",
                                        ['"'] = "&quot;" }))
end

-- a tick value as text: at most the decimals its step needs
local function tick_text(v, step)
  local dec = math.max(0, -math.floor(math.log(step, 10) + 1e-9))
  if step * 10 ^ dec % 1 > 1e-9 then dec = dec + 1 end          -- 2.5, 0.25, ...
  return string.format("%." .. dec .. "f", v)
end

-- plot.ticks(vmax [, n]) -> top, step: a round step (1, 2, 2.5 or 5 times a power of ten)
-- giving about n (5) intervals, and the first multiple of it at or above vmax
function plot.ticks(vmax, n)
  n = n or 5
  if vmax ~= vmax or vmax <= 0 then return 1, 0.2 end
  local raw = vmax / n
  local mag = 10 ^ math.floor(math.log(raw, 10))
  local step
  for _, m in ipairs({ 1, 2, 2.5, 5, 10 }) do
    step = m * mag
    if step >= raw * (1 - 1e-9) then break end
  end
  return math.ceil(vmax / step - 1e-9) * step, step
end

-- the exponents of two to label on a log2 axis from x0 to x1 bytes, px pixels per octave:
-- every k-th (k of 1, 2, 5, 10; exponents divisible by k) so that the labels keep apart
function plot.size_ticks(x0, x1, px)
  local e0, e1 = math.ceil(math.log(x0, 2) - 1e-9), math.floor(math.log(x1, 2) + 1e-9)
  local widest = 0
  for e = e0, e1 do widest = math.max(widest, #size_label(1 << e)) end
  local need = widest * plot.CHAR_PX + plot.LABEL_GAP_PX
  local k = 10
  for _, c in ipairs({ 1, 2, 5, 10 }) do
    if c * px >= need then k = c; break end
  end
  local list = {}
  for e = e0, e1 do if e % k == 0 then list[#list + 1] = e end end
  if #list == 0 then list[1] = e0 end
  return list, k
end

-- the SVG opening, background and title of a W x H chart
local function svg_open(add, W, H, title)
  add('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
      .. 'font-family="sans-serif" font-size="12">', W, H)
  add('<rect width="%d" height="%d" fill="white"/>', W, H)
  add('<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>', W // 2, esc(title or ""))
end

-- a line chart's legend: a short line of each series' colour and its name, from (x, y0) down
local function legend(add, series, x, y0)
  for i, s in ipairs(series) do
    local ly = y0 + (i - 1) * 18
    add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>',
        x, ly, x + 24, ly, s.color)
    add('<text x="%d" y="%d">%s</text>', x + 30, ly + 4, esc(s.name))
  end
end

-- the SVG opening, background, title and axes of a W x H chart with plot area L, T, R, B
local function frame_svg(add, W, H, L, R, T, B, title)
  svg_open(add, W, H, title)
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>', L, H - B, W - R, H - B)
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>', L, T, L, H - B)
end

-- the y axis: round ticks from 0 to top by step, grid lines, a rotated label
local function y_axis(add, Y, L, R, W, T, H, B, top, step, label)
  for i = 0, math.floor(top / step + 0.5) do
    local v = i * step
    add('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>', L, Y(v), W - R, Y(v))
    add('<text x="%d" y="%.1f" text-anchor="end">%s</text>', L - 6, Y(v) + 4, tick_text(v, step))
  end
  add('<text x="18" y="%d" text-anchor="middle" transform="rotate(-90 18 %d)">%s</text>',
      (T + H - B) // 2, (T + H - B) // 2, esc(label))
end

-- plot.svg{title=, series = {{name=, color=, points = {{bytes, GBps}, ...}}, ...}}
function plot.svg(p)
  local W, H, L, R, T, B = 720, 420, 70, 20, 40, 60
  local xmin, xmax, ymax = math.huge, -math.huge, 0
  for _, s in ipairs(p.series) do
    for _, pt in ipairs(s.points) do
      xmin = math.min(xmin, pt[1]); xmax = math.max(xmax, pt[1]); ymax = math.max(ymax, pt[2])
    end
  end
  if xmin == math.huge then error("bad argument #1 to 'svg' (no points)", 2) end
  if xmax == xmin then xmax = xmin * 2 end
  local top, step = plot.ticks(ymax * 1.05)
  local lx0, lx1 = math.log(xmin, 2), math.log(xmax, 2)
  local function X(b) return L + (math.log(b, 2) - lx0) / (lx1 - lx0) * (W - L - R) end
  local function Y(v) return H - B - v / top * (H - T - B) end
  local out = {}
  local function add(fmt, ...) out[#out + 1] = string.format(fmt, ...) end
  frame_svg(add, W, H, L, R, T, B, p.title)
  local labelled = {}
  for _, e in ipairs((plot.size_ticks(xmin, xmax, (W - L - R) / (lx1 - lx0)))) do labelled[e] = true end
  for e = math.ceil(lx0 - 1e-9), math.floor(lx1 + 1e-9) do   -- grid at powers of two
    local x = X(2 ^ e)
    add('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>', x, T, x, H - B,
        labelled[e] and "#ccc" or "#eee")
    if labelled[e] then
      add('<text x="%.1f" y="%d" text-anchor="middle">%s</text>', x, H - B + 16, size_label(1 << e))
    end
  end
  y_axis(add, Y, L, R, W, T, H, B, top, step, "bus bandwidth (GB/s)")
  add('<text x="%d" y="%d" text-anchor="middle">message size (bytes per PE, log scale)</text>',
      (L + W - R) // 2, H - 18)
  for _, s in ipairs(p.series) do
    local pts = {}
    for _, pt in ipairs(s.points) do pts[#pts + 1] = string.format("%.1f,%.1f", X(pt[1]), Y(pt[2])) end
    add('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>', s.color,
        table.concat(pts, " "))
    for _, pt in ipairs(s.points) do
      add('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>', X(pt[1]), Y(pt[2]), s.color)
    end
  end
  legend(add, p.series, L + 12, T + 10)
  add("</svg>")
  return table.concat(out, "\n") .. "\n"
end

-- colours of the frames, by id (the five kinds, then custom ids in turn)
plot.FRAME_COLORS = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf" }

-- plot.frame_bars(rows, names [, by]) -> bars: shadow rows {pe=, block=, frame=, cycles=}
-- summed per PE (by "pe"; by default when they hold more than one PE) or per block of the
-- first PE (by "block"); each bar {label=, total=, parts = {{frame=, name=, cycles=}}} in
-- frame order. names[frame] names a frame.
function plot.frame_bars(rows, names, by)
  local pes = {}
  for _, r in ipairs(rows) do pes[r.pe] = true end
  local first, n = nil, 0
  for pe in pairs(pes) do n = n + 1; first = (first == nil or pe < first) and pe or first end
  by = by or (n > 1 and "pe" or "block")
  local bars, keys = {}, {}
  for _, r in ipairs(rows) do
    if r.cycles > 0 and (by == "pe" or r.pe == first) then
      local key = by == "pe" and r.pe or r.block
      local bar = bars[key]
      if not bar then
        bar = { key = key, label = (by == "pe" and "PE " or "block ") .. key, total = 0, by = {} }
        bars[key] = bar
        keys[#keys + 1] = key
      end
      bar.by[r.frame] = (bar.by[r.frame] or 0) + r.cycles
      bar.total = bar.total + r.cycles
    end
  end
  table.sort(keys)
  local list = {}
  for _, key in ipairs(keys) do
    local bar, ids = bars[key], {}
    for id in pairs(bar.by) do ids[#ids + 1] = id end
    table.sort(ids)
    bar.parts = {}
    for _, id in ipairs(ids) do
      bar.parts[#bar.parts + 1] = { frame = id, name = names[id] or ("frame " .. id), cycles = bar.by[id] }
    end
    bar.by = nil
    list[#list + 1] = bar
  end
  return list, by
end

-- plot.frames_svg{title=, bars = plot.frame_bars(...)}: a stacked bar per PE or block, each
-- frame's share of that bar's frame cycles (frames may nest: the shares are of the sum)
function plot.frames_svg(p)
  local bars = p.bars
  if type(bars) ~= "table" or #bars == 0 then error("bad argument #1 to 'frames_svg' (no bars)", 2) end
  local W, H, L, R, T, B = 720, 420, 70, 190, 40, 60
  local function Y(v) return H - B - v / 100 * (H - T - B) end
  local out = {}
  local function add(fmt, ...) out[#out + 1] = string.format(fmt, ...) end
  frame_svg(add, W, H, L, R, T, B, p.title)
  y_axis(add, Y, L, R, W, T, H, B, 100, 20, "share of the frame cycles (%)")
  local slot = (W - L - R) / #bars
  local every = math.max(1, math.ceil((#bars[#bars].label * plot.CHAR_PX + plot.LABEL_GAP_PX) / slot))
  local seen, keys = {}, {}
  for i, bar in ipairs(bars) do
    local x, acc = L + (i - 1) * slot + slot * 0.1, 0
    for _, part in ipairs(bar.parts) do
      local share = part.cycles / bar.total * 100
      local color = plot.FRAME_COLORS[part.frame % #plot.FRAME_COLORS + 1]
      add('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.1f%%'
        .. '</title></rect>', x, Y(acc + share), slot * 0.8, Y(acc) - Y(acc + share), color,
        esc(bar.label), esc(part.name), share)
      acc = acc + share
      if not seen[part.frame] then
        seen[part.frame] = true
        keys[#keys + 1] = { frame = part.frame, name = part.name, color = color }
      end
    end
    if (i - 1) % every == 0 then
      add('<text x="%.1f" y="%d" text-anchor="middle">%s</text>', x + slot * 0.4, H - B + 16,
          esc(bar.label))
    end
  end
  table.sort(keys, function(a, b) return a.frame < b.frame end)
  for i, l in ipairs(keys) do
    local ly = T + 10 + (i - 1) * 18
    add('<rect x="%d" y="%d" width="14" height="10" fill="%s"/>', W - R + 12, ly - 5, l.color)
    add('<text x="%d" y="%d">%s</text>', W - R + 32, ly + 4, esc(l.name))
  end
  add("</svg>")
  return table.concat(out, "\n") .. "\n"
end

-- the x scale of PE counts xs over pixels x0..x1: log2 when the counts span a factor of 8
-- or more, else linear; one count sits in the middle
local function pes_scale(xs, x0, x1)
  local lo, hi = xs[1], xs[1]
  for _, x in ipairs(xs) do lo, hi = math.min(lo, x), math.max(hi, x) end
  local log = hi >= 8 * lo
  local f = log and function(x) return math.log(x, 2) end or function(x) return x end
  local a, b = f(lo), f(hi)
  if a == b then a, b = a - 1, b + 1 end
  return function(x) return x0 + (f(x) - a) / (b - a) * (x1 - x0) end, log
end

-- one panel of pes_svg: axes, y ticks at round values (plot.ticks), the series' points
-- (value panel.value of each point)
local function pes_panel(add, X, xs, box, panel, series)
  local L, R, T, B = box.L, box.R, box.T, box.B
  local vmax = panel.min_top or 0
  for _, s in ipairs(series) do
    for _, pt in ipairs(s.points) do vmax = math.max(vmax, pt[panel.value] * 1.05) end
  end
  local ymax, step = plot.ticks(vmax)
  local function Y(v) return B - v / ymax * (B - T) end
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>', L, B, R, B)
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>', L, T, L, B)
  for _, x in ipairs(xs) do
    add('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ccc"/>', X(x), T, X(x), B)
  end
  for i = 0, math.floor(ymax / step + 0.5) do         -- round ticks (plot.ticks)
    local v = i * step
    add('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>', L, Y(v), R, Y(v))
    add('<text x="%d" y="%.1f" text-anchor="end">%s</text>', L - 6, Y(v) + 4, tick_text(v, step))
  end
  add('<text x="18" y="%d" text-anchor="middle" transform="rotate(-90 18 %d)">%s</text>',
      (T + B) // 2, (T + B) // 2, esc(panel.label))
  for _, s in ipairs(series) do
    local pts = {}
    for _, pt in ipairs(s.points) do
      pts[#pts + 1] = string.format("%.1f,%.1f", X(pt[1]), Y(pt[panel.value]))
    end
    add('<polyline class="%s" fill="none" stroke="%s" stroke-width="2" points="%s"/>', panel.class,
        s.color, table.concat(pts, " "))
    for _, pt in ipairs(s.points) do
      add('<circle class="%s" cx="%.1f" cy="%.1f" r="3" fill="%s"/>', panel.class, X(pt[1]),
          Y(pt[panel.value]), s.color)
    end
  end
end

-- plot.pes_svg{title=, series = {{name=, color=, points = {{pes, busbw_GBps, eff_pct}, ...}},
-- ...}, split = {after = D, label =} or nil}: bus bandwidth (top) and efficiency against the
-- bound (bottom) over PE count, one x tick per count (log2 axis when the counts span a
-- factor of 8 or more); split draws a dashed line between the last count <= D and the
-- first above it (where RDMA between domains starts)
function plot.pes_svg(p)
  local W, H, L, R = 720, 640, 70, 700
  local xs, seen = {}, {}
  for _, s in ipairs(p.series) do
    for _, pt in ipairs(s.points) do
      if not seen[pt[1]] then seen[pt[1]] = true; xs[#xs + 1] = pt[1] end
    end
  end
  if #xs == 0 then error("bad argument #1 to 'pes_svg' (no points)", 2) end
  table.sort(xs)
  local X, log = pes_scale(xs, L, R)
  local out = {}
  local function add(fmt, ...) out[#out + 1] = string.format(fmt, ...) end
  svg_open(add, W, H, p.title)
  pes_panel(add, X, xs, { L = L, R = R, T = 76, B = 300 },
            { value = 2, label = "bus bandwidth (GB/s)", class = "busbw" }, p.series)
  pes_panel(add, X, xs, { L = L, R = R, T = 330, B = 580 },
            { value = 3, label = "efficiency (% of bound)", class = "eff", min_top = 100 }, p.series)
  local sp = p.split
  for i = 2, sp and #xs or 0 do
    if xs[i - 1] <= sp.after and xs[i] > sp.after then
      local x = (X(xs[i - 1]) + X(xs[i])) / 2
      add('<line class="split" x1="%.1f" y1="76" x2="%.1f" y2="580" stroke="#888" '
          .. 'stroke-dasharray="5,4"/>', x, x)
      add('<text x="%.1f" y="318" text-anchor="middle" fill="#555">%s</text>', x, esc(sp.label))
    end
  end
  local last = -math.huge
  for _, x in ipairs(xs) do                       -- x labels, none on top of the last one
    if X(x) - last >= 28 then
      add('<text class="pes" x="%.1f" y="596" text-anchor="middle">%d</text>', X(x), x)
      last = X(x)
    end
  end
  add('<text x="%d" y="%d" text-anchor="middle">PEs%s</text>', (L + R) // 2, H - 18,
      log and " (log scale)" or "")
  legend(add, p.series, L + 12, 40)                -- above the top panel, clear of the data
  add("</svg>")
  return table.concat(out, "\n") .. "\n"
end

return plot
