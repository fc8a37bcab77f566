-- bench/validation.lua: the validation table (`make validation`). Runs every case
-- of shmemlab.validation (published operator-level measurements of the shipping
-- MoE kernels, never used to calibrate) and prints the manual's Markdown table.
-- Virtual time only: the numbers do not depend on this machine, but the largest
-- cases take minutes. `-j N` runs N cases at a time, each in its own process
-- (the table is the same; the Makefile passes the machine's core count);
-- `--readme FILE` (`make validation-readme`, once per doc: README.md doc/*.md) also
-- rewrites the one FILE that holds the validation markers (doc/validation.md), with
-- the fingerprint of the inputs spec/validation_spec.lua checks. `--case I` is how a
-- worker runs case I.
local V = require("shmemlab.validation")

local BEGIN = "<!-- validation:begin (make validation-readme writes this block) -->"
local END = "<!-- validation:end -->"

local write_readme = require("scripts.readme_block")

-- the options: { jobs = N, readme = {FILE...}, case = I }
local function options(argv)
  local o, i = { jobs = 1 }, 1
  while argv[i] do
    local a, v = argv[i], argv[i + 1]
    if a == "-j" then o.jobs = assert(math.tointeger(tonumber(v)), "-j N")
    elseif a == "--readme" then                   -- repeated: the docs to look in
      o.readme = o.readme or {}
      o.readme[#o.readme + 1] = assert(v, "--readme FILE")
    elseif a == "--case" then o.case = assert(math.tointeger(tonumber(v)), "--case I")
    else error("unknown option " .. a, 0) end
    i = i + 2
  end
  return o
end

-- a worker's line for case i's row, and the row back from it
local function encode(i, r)
  return string.format("row %d ", i) ..
    (r.modeled and string.format("modeled %.17g", r.modeled) or "refused " .. r.refused)
end

local function decode(line)
  local i, kind, rest = line:match("^row (%d+) (%a+) (.*)$")
  local c = V.cases[tonumber(i)]
  if kind == "modeled" then
    local x = tonumber(rest)
    return tonumber(i), { case = c, modeled = x, err = (x - c.published) / c.published * 100 }
  end
  assert(kind == "refused", "worker of case " .. i .. " printed " .. line)
  return tonumber(i), { case = c, refused = rest }
end

-- the case numbers, the costliest first (PEs x tokens), so no worker idles at the end
local function costliest_first()
  local order = {}
  for i = 1, #V.cases do order[i] = i end
  local function cost(i) return V.cases[i].opts.pes * V.cases[i].opts.local_tokens end
  table.sort(order, function(a, b)
    if cost(a) ~= cost(b) then return cost(a) > cost(b) end
    return a < b
  end)
  return order
end

-- every row, `jobs` worker processes at a time (xargs -P: a worker starts the moment
-- one ends); rows are read back as they finish and returned in case order
local function run_workers(jobs, progress)
  local list = os.tmpname()
  local fh = assert(io.open(list, "w"))
  fh:write(table.concat(costliest_first(), "\n"), "\n")
  fh:close()
  local p = assert(io.popen(string.format("xargs -n 1 -P %d %q %q --case < %q 2>&1", jobs,
    arg[-1], arg[0], list)))
  local rows, other = {}, {}
  for line in p:lines() do
    if line:find("^row %d+ %a+ ") then
      local i, r = decode(line)
      rows[i] = r
      progress(r)
    else
      other[#other + 1] = line
    end
  end
  local ok = p:close()
  os.remove(list)
  for i = 1, #V.cases do
    if not rows[i] or not ok then
      error("a validation worker failed:\n" .. table.concat(other, "\n"), 0)
    end
  end
  return rows
end

local o = options(arg)
if o.case then
  print(encode(o.case, V.row(o.case)))
  return
end
local t0 = os.time()
local function progress(r)
  io.stderr:write(string.format("  %-28s %s (%d s so far)\n", r.case.name, r.modeled
    and string.format("%.1f %s", r.modeled, r.case.unit) or r.refused, os.time() - t0))
end
local rows = o.jobs > 1 and run_workers(o.jobs, progress) or V.run_all(progress)
local table_text = V.markdown(rows)
print(string.format("shmemlab validation: %d cases, source: %s", #V.cases, V.SOURCE))
print()
print(table_text)
if o.readme then
  write_readme(o.readme, BEGIN, END, table.concat({ BEGIN, table_text, "",
    "Source: " .. V.SOURCE .. ". Inputs fingerprint " .. V.fingerprint() .. " (`make "
    .. "validation-readme`; spec/validation_spec.lua fails when the inputs change).", END }, "\n"),
    "validation")
end
