-- shmemlab.scale_fit: the growth exponent of time over events that bench/scale.lua
-- prints under its data-mode rows (`make scale`, doc/performance.md), and each row's
-- events per second, computed from the times as the table prints them, so
-- spec/scale_table_spec.lua (and a reader) recomputes them from the rows.
local M = {}

-- the goal of issue 24: time near linear in events
M.GOAL = 1.15

-- a time (s) as the table shows it: two decimals
local function shown(s) return tonumber(string.format("%.2f", s)) end

-- a time (s) as the table prints it, 0.00 read as 0.01
function M.printed(s) return math.max(shown(s), 0.01) end

-- a row's events per second, from its wall time as printed ("-" when that is 0.00)
function M.rate(events, wall)
  local w = shown(wall)
  return w > 0 and string.format("%.0f", events / w) or "-"
end

-- the least-squares slope of log ys over log xs
function M.slope(xs, ys)
  local n, sx, sy, sxx, sxy = #xs, 0, 0, 0, 0
  for i = 1, n do
    local x, y = math.log(xs[i]), math.log(ys[i])
    sx, sy, sxx, sxy = sx + x, sy + y, sxx + x * x, sxy + x * y
  end
  return (n * sxy - sx * sy) / (n * sxx - sx * sx)
end

-- the slope of the last two points
local function last_two(xs, ys)
  local n = #xs
  return math.log(ys[n] / ys[n - 1]) / math.log(xs[n] / xs[n - 1])
end

-- the exponent line from the events and the printed wall and CPU times of the
-- rows (two or more, in order)
function M.line(events, wall, cpu)
  local w, c = {}, {}
  for i = 1, #events do w[i], c[i] = M.printed(wall[i]), M.printed(cpu[i]) end
  return string.format("growth exponent of wall over events: %.2f (least squares), %.2f "
    .. "(last two sizes); of CPU: %.2f, %.2f (from the times printed, 0.00 read as 0.01; "
    .. "goal <= %.2f)", M.slope(events, w), last_two(events, w), M.slope(events, c),
    last_two(events, c), M.GOAL)
end

return M
