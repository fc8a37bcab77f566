-- shmemlab.tune: `--tune`, an operator's own tuning space searched (doc/tune.md). The
-- space is the product of the knobs the op declares (op.define's tune), less what its
-- constraints refuse. At most --tune-points valid points: every one runs (exhaustive);
-- more: a coordinate descent from the default configuration (each knob in turn over all
-- its values, the others held, until a whole pass changes nothing), which says how
-- many points it ran. The points run timing-only (the virtual times are those of a run
-- with data), the default one with the baseline; the best is run again with data and
-- checked. Rows rank by kernel time; ties keep the space's order.
local runner = require("shmemlab.runner")
local metrics = require("shmemlab.metrics")
local op_lib = require("shmemlab.op")

local tune = {}

-- valid points beyond which the search is a coordinate descent (--tune-points)
tune.EXHAUSTIVE = 64

-- passes of the coordinate descent at most
tune.PASSES = 4

-- a copy of table t
local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- the knobs of op, or a usage error when it declares none
function tune.knobs(op)
  if not (op.tune and op.tune.knobs) then
    runner.usage("operator %s declares no tune knobs (op.define{tune = ...}; doc/tune.md)", op.name)
  end
  return op.tune.knobs
end

-- the default value of each knob under configuration c: c's, else the knob's default
function tune.defaults(op, c)
  local d = {}
  for _, k in ipairs(tune.knobs(op)) do
    local v = c[k.name]
    if v == nil then
      v = k.default
      if type(v) == "function" then v = v(c) end
    end
    d[k.name] = v
  end
  return d
end

-- a point's key: its knob values in knob order
function tune.key(op, knobs)
  local t = {}
  for i, k in ipairs(tune.knobs(op)) do t[i] = tostring(knobs[k.name]) end
  return table.concat(t, "\0")
end

-- the configuration c with the knobs' values in place (what the constraints see)
local function with(c, knobs)
  local t = copy(c)
  for k, v in pairs(knobs) do t[k] = v end
  return t
end

-- the values a knob takes in a search: the one fixed[name] names (a knob the command line
-- set), else all of the knob's
local function values_of(knob, fixed)
  local v = fixed and fixed[knob.name]
  if v ~= nil then return { v } end
  return (op_lib.knob_values(knob))
end

-- tune.space(op, c [, fixed]) -> the valid points (knob tables, the last knob fastest), the
-- number refused, and {why = count} of the refusals; fixed = {knob = value} holds knobs
function tune.space(op, c, fixed)
  local knobs, points, refused, why = tune.knobs(op), {}, 0, {}
  local function walk(i, cur)
    if i > #knobs then
      local reason = runner.refused(op, with(c, cur))
      if reason then
        refused, why[reason] = refused + 1, (why[reason] or 0) + 1
      else
        points[#points + 1] = copy(cur)
      end
      return
    end
    for _, v in ipairs(values_of(knobs[i], fixed)) do
      cur[knobs[i].name] = v
      walk(i + 1, cur)
    end
    cur[knobs[i].name] = nil
  end
  walk(1, {})
  return points, refused, why
end

-- the runner options of a point of group opts ro: timing-only, the knobs set; the default
-- one keeps the baseline, the others run none
local function point_opts(ro, knobs, is_default)
  local t = copy(ro)
  for k, v in pairs(knobs) do t[k] = v end
  t.timing_only, t.trace = true, false
  if not is_default then t.baseline = "none" end
  return t
end

-- a new group: ro (its runner options), c (its configuration), the default knobs, the
-- space; exhaustive when it has at most max (default tune.EXHAUSTIVE) points. A knob that
-- ro sets (the command line: --block-dim, --knob ...) is held at its value
function tune.group(op, ro, max)
  local c = runner.config(op, ro)
  local g = { opts = ro, config = c, default = tune.defaults(op, c), evaluated = {}, order = {},
              fixed = {}, knobs = tune.knobs(op) }
  for _, k in ipairs(g.knobs) do g.fixed[k.name] = ro[k.name] end
  g.space, g.refused, g.why = tune.space(op, c, g.fixed)
  g.index = {}
  for i, p in ipairs(g.space) do g.index[tune.key(op, p)] = i end
  g.default_key = tune.key(op, g.default)
  if not g.index[g.default_key] then                 -- the default is always a point
    g.space[#g.space + 1] = g.default
    g.index[g.default_key] = #g.space
  end
  g.max = max or tune.EXHAUSTIVE
  g.exhaustive = #g.space <= g.max
  return g
end

-- the points of g not evaluated yet among list (knob tables), as par points
local function pending(op, g, list)
  local pts = {}
  for _, knobs in ipairs(list) do
    local key = tune.key(op, knobs)
    if not g.evaluated[key] and not g.queued[key] then
      g.queued[key] = true
      pts[#pts + 1] = { opts = point_opts(g.opts, knobs, key == g.default_key), group = g,
                        knobs = knobs, key = key }
    end
  end
  return pts
end

-- record the results of points (par points with .group, .knobs, .key)
local function record(pts, results)
  for i, pt in ipairs(pts) do
    local g, r = pt.group, results[i]
    g.evaluated[pt.key] = { knobs = pt.knobs, result = r, at = g.index[pt.key], key = pt.key,
                            kernel_us = r.metrics.summary.latency_us }
    g.order[#g.order + 1] = pt.key
    if pt.key == g.default_key then g.default_result = r end
  end
end

-- the first points of every group: the whole space (exhaustive) or the default (descent)
function tune.first_points(op, groups)
  local pts = {}
  for _, g in ipairs(groups) do
    g.queued = {}
    for _, pt in ipairs(pending(op, g, g.exhaustive and g.space or { g.default })) do
      pts[#pts + 1] = pt
    end
  end
  return pts
end

-- the best evaluated point of g: least kernel time, then the earliest in the space
local function best_of(g)
  local best
  for _, e in pairs(g.evaluated) do
    if not best or e.kernel_us < best.kernel_us
       or (e.kernel_us == best.kernel_us and e.at < best.at) then
      best = e
    end
  end
  return best
end

-- one coordinate of a descent: every valid value of knob i with the others at g's
-- current best
local function line_of(op, g, i)
  local knob, cur, list = tune.knobs(op)[i], best_of(g).knobs, {}
  for _, v in ipairs(values_of(knob, g.fixed)) do
    local p = copy(cur)
    p[knob.name] = v
    if g.index[tune.key(op, p)] then list[#list + 1] = p end
  end
  return list
end

-- tune.search(op, groups, run) -> true: evaluate the groups' points; run(points) ->
-- results runs a batch (in parallel), or nil when the batch went to a shard's file (the
-- search stops, false). Exhaustive groups in one batch; descents in lockstep, one
-- knob at a time over every group still moving
function tune.search(op, groups, run)
  local pts = tune.first_points(op, groups)
  local got = run(pts)
  if not got then return false end                  -- a shard: its points are in its file
  record(pts, got)
  local knobs = tune.knobs(op)
  for pass = 1, tune.PASSES do
    local moved = false
    for i = 1, #knobs do
      local batch = {}
      for _, g in ipairs(groups) do
        if not g.exhaustive and (pass == 1 or g.moving) then
          g.before = best_of(g).at
          for _, pt in ipairs(pending(op, g, line_of(op, g, i))) do batch[#batch + 1] = pt end
        end
      end
      if #batch > 0 then record(batch, run(batch)) end
      for _, g in ipairs(groups) do
        if not g.exhaustive and g.before and best_of(g).at ~= g.before then
          g.moved_now, moved = true, true
        end
      end
    end
    for _, g in ipairs(groups) do g.moving, g.moved_now = g.moved_now, nil end
    if not moved then break end
  end
  return true
end

------------------------------------------------------------------------------
-- the report

local printed = require("shmemlab.sweep").printed     -- a printed figure and its number

-- tune.rows(g) -> the ranked rows of a searched group: {rank, knobs, kernel_us, bound_us,
-- eff, ratio (strings as printed), default = true on the default point}; eff and ratio
-- from the printed kernel_us, bound_us and the baseline's printed kernel_us
function tune.rows(g)
  local list = {}
  for _, e in pairs(g.evaluated) do list[#list + 1] = e end
  table.sort(list, function(a, b)
    if a.kernel_us ~= b.kernel_us then return a.kernel_us < b.kernel_us end
    return a.at < b.at
  end)
  local base = g.default_result.baseline
  local base_s, base_us
  if base then base_s, base_us = printed(base.metrics.summary.latency_us) end
  local rows = {}
  for i, e in ipairs(list) do
    local k_s, k = printed(e.kernel_us)
    local b_s, b = printed(e.result.bound.us)
    rows[i] = { rank = i, knobs = e.knobs, kernel_us = k_s, bound_us = b_s,
                eff = metrics.fmt(b / k * 100, 1),
                ratio = base_us and metrics.fmt(base_us / k * 100, 1) .. "%" or "-",
                default = e.key == g.default_key, entry = e }
  end
  return rows, base_s
end

-- the search line of a group
function tune.search_text(g)
  local refused = ""
  if g.refused > 0 then
    local list = {}
    for why, n in pairs(g.why) do list[#list + 1] = string.format("%d: %s", n, why) end
    table.sort(list)
    refused = string.format("; %d refused by the op's constraints (%s)", g.refused,
                            table.concat(list, "; "))
  end
  local how = g.exhaustive and "exhaustive" or string.format("coordinate descent from the "
    .. "default (at most %d passes; the space exceeds --tune-points %d)", tune.PASSES,
    g.max)
  local held = {}
  for _, k in ipairs(g.knobs) do
    if g.fixed[k.name] ~= nil then held[#held + 1] = k.name .. " " .. tostring(g.fixed[k.name]) end
  end
  return string.format("# tune: %s, %d of %d valid points run%s%s\n", how, #g.order, #g.space,
                       refused, #held > 0 and "; held by the command line: "
                       .. table.concat(held, ", ") or "")
end

-- the ranked table of a group: legend, header, rows
function tune.table(op, g)
  local knobs = tune.knobs(op)
  local rows, base_s = tune.rows(g)
  local family = g.config.baseline
  local out = { string.format("# ranked by kernel_us (timing-only); eff_%% = bound_us / "
    .. "kernel_us * 100; ratio = %s_kern / kernel_us * 100, %s_kern = %s us (the baseline "
    .. "at the default configuration)\n", family, family, base_s or "-") }
  local widths, head = {}, { string.format("#%4s", "rank") }
  for i, k in ipairs(knobs) do
    local w = #k.name
    for _, v in ipairs((op_lib.knob_values(k))) do w = math.max(w, #tostring(v)) end
    for _, r in ipairs(rows) do w = math.max(w, #tostring(r.knobs[k.name])) end
    widths[i] = w
    head[#head + 1] = string.format("%" .. w .. "s", k.name)
  end
  out[#out + 1] = table.concat(head, " ") .. string.format(" | %10s %10s %8s %8s |\n",
    "kernel_us", "bound_us", "eff_%", "ratio")
  for _, r in ipairs(rows) do
    local cells = { string.format("%5d", r.rank) }
    for i, k in ipairs(knobs) do
      cells[#cells + 1] = string.format("%" .. widths[i] .. "s", tostring(r.knobs[k.name]))
    end
    out[#out + 1] = table.concat(cells, " ") .. string.format(" | %10s %10s %8s %8s |%s\n",
      r.kernel_us, r.bound_us, r.eff, r.ratio, r.default and " default" or "")
  end
  return table.concat(out), rows
end

return tune
