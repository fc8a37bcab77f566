-- shmemlab.plot: bus bandwidth against message size as an SVG (log-scaled size
-- axis, labelled axes, a legend), for a sweep of an operator and its baseline; and bus
-- bandwidth and efficiency against PE count (a PE sweep).
local plot = {}

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
  ymax = ymax > 0 and ymax * 1.1 or 1
  local lx0, lx1 = math.log(xmin, 2), math.log(xmax, 2)
  local function X(b) return L + (math.log(b, 2) - lx0) / (lx1 - lx0) * (W - L - R) end
  local function Y(v) return H - B - v / ymax * (H - T - B) end
  local out = {}
  local function add(fmt, ...) out[#out + 1] = string.format(fmt, ...) end
  add('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
      .. 'font-family="sans-serif" font-size="12">', W, H)
  add('<rect width="%d" height="%d" fill="white"/>', W, H)
  add('<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>', W // 2, esc(p.title or ""))
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>', L, H - B, W - R, H - B)
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>', L, T, L, H - B)
  local b = xmin
  while b <= xmax * 1.0001 do                     -- x ticks at powers of two
    add('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ccc"/>', X(b), T, X(b), H - B)
    add('<text x="%.1f" y="%d" text-anchor="middle">%s</text>', X(b), H - B + 16, size_label(b))
    b = b * 2
  end
  for i = 0, 5 do                                 -- y ticks
    local v = ymax * i / 5
    add('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>', L, Y(v), W - R, Y(v))
    add('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>', L - 6, Y(v) + 4, v)
  end
  add('<text x="%d" y="%d" text-anchor="middle">message size (bytes per PE, log scale)</text>',
      (L + W - R) // 2, H - 18)
  add('<text x="18" y="%d" text-anchor="middle" transform="rotate(-90 18 %d)">'
      .. 'bus bandwidth (GB/s)</text>', (T + H - B) // 2, (T + H - B) // 2)
  for i, s in ipairs(p.series) do
    local pts = {}
    for _, pt in ipairs(s.points) do pts[#pts + 1] = string.format("%.1f,%.1f", X(pt[1]), Y(pt[2])) end
    add('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>', s.color,
        table.concat(pts, " "))
    for _, pt in ipairs(s.points) do
      add('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>', X(pt[1]), Y(pt[2]), s.color)
    end
    local ly = T + 10 + (i - 1) * 18                -- legend
    add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>',
        L + 12, ly, L + 36, ly, s.color)
    add('<text x="%d" y="%d">%s</text>', L + 42, ly + 4, esc(s.name))
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

-- a round tick step (1, 2 or 5 times a power of ten) giving at most 6 steps up to top
local function tick_step(top)
  local step = 10 ^ math.floor(math.log(top / 6, 10))
  for _, m in ipairs({ 1, 2, 5, 10 }) do
    if top / (step * m) <= 6 then return step * m end
  end
  return step * 10
end

-- one panel of pes_svg: axes, y ticks at round values, the series' points (value
-- panel.value of each point)
local function pes_panel(add, X, xs, box, panel, series)
  local L, R, T, B = box.L, box.R, box.T, box.B
  local top = panel.min_top or 0
  for _, s in ipairs(series) do
    for _, pt in ipairs(s.points) do top = math.max(top, pt[panel.value] * 1.05) end
  end
  if top <= 0 then top = 1 end
  local step = tick_step(top)
  local ymax = math.ceil(top / step - 1e-9) * step
  local function Y(v) return B - v / ymax * (B - T) end
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>', L, B, R, B)
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>', L, T, L, B)
  for _, x in ipairs(xs) do
    add('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ccc"/>', X(x), T, X(x), B)
  end
  for i = 0, math.floor(ymax / step + 0.5) do
    local v = i * step
    add('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>', L, Y(v), R, Y(v))
    add('<text x="%d" y="%.1f" text-anchor="end">%s</text>', L - 6, Y(v) + 4,
        string.format(step < 1 and "%.2g" or "%d", step < 1 and v or math.floor(v + 0.5)))
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
  add('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
      .. 'font-family="sans-serif" font-size="12">', W, H)
  add('<rect width="%d" height="%d" fill="white"/>', W, H)
  add('<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>', W // 2, esc(p.title or ""))
  pes_panel(add, X, xs, { L = L, R = R, T = 60, B = 300 },
            { value = 2, label = "bus bandwidth (GB/s)", class = "busbw" }, p.series)
  pes_panel(add, X, xs, { L = L, R = R, T = 330, B = 580 },
            { value = 3, label = "efficiency (% of bound)", class = "eff", min_top = 100 }, p.series)
  local sp = p.split
  for i = 2, sp and #xs or 0 do
    if xs[i - 1] <= sp.after and xs[i] > sp.after then
      local x = (X(xs[i - 1]) + X(xs[i])) / 2
      add('<line class="split" x1="%.1f" y1="60" x2="%.1f" y2="580" stroke="#888" '
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
  for i, s in ipairs(p.series) do                 -- legend, one row under the title
    local lx = L + (i - 1) * (R - L) // 2
    add('<line x1="%d" y1="42" x2="%d" y2="42" stroke="%s" stroke-width="2"/>', lx, lx + 24, s.color)
    add('<text x="%d" y="46">%s</text>', lx + 30, esc(s.name))
  end
  add("</svg>")
  return table.concat(out, "\n") .. "\n"
end

return plot
