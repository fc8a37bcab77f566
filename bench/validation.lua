-- bench/validation.lua: the validation table (`make validation`). Runs every case
-- of shmemlab.validation (published operator-level measurements of the shipping
-- MoE kernels, never used to calibrate) and prints the README's Markdown table.
-- Virtual time only: the numbers do not depend on this machine, but the largest
-- cases take minutes. `-j N` runs N cases at a time, each in its own process
-- (the table is the same; the Makefile passes the machine's core count);
-- `--readme FILE` (`make validation-readme`) also rewrites FILE between its
-- validation markers, with the fingerprint of the inputs
-- spec/validation_spec.lua checks. `--case I` is how a worker runs case I.
local V = require("shmemlab.validation")

local BEGIN = "<!-- validation:begin (make validation-readme writes this block) -->"
local END = "<!-- validation:end -->"

local write_readme = require("scripts.readme_block")

-- the options: { jobs = N, readme = FILE, case = I }
local function options(argv)
  local o, i = { jobs = 1 }, 1
  while argv[i] do
    local a, v = argv[i], argv[i + 1]
    if a == "-j" then o.jobs = assert(math.tointeger(tonumber(v)), "-j N")
    elseif a == "--readme" then o.readme = assert(v, "--readme FILE")
    elseif a == "--case" then o.case = assert(math.tointeger(tonumber(v)), "--case I")
    else error("unknown option " .. a, 0) end
    i = i + 2
  end
  return o
end

-- a worker's line for a row, and the row back from it
local function encode(r)
  return r.modeled and string.format("modeled %.17g", r.modeled) or "refused " .. r.refused
end

local function decode(i, line)
  local c = V.cases[i]
  local kind, rest = assert(line, "worker of case " .. i .. " printed nothing"):match("^(%a+) (.*)$")
  if kind == "modeled" then
    local x = tonumber(rest)
    return { case = c, modeled = x, err = (x - c.published) / c.published * 100 }
  end
  assert(kind == "refused", "worker of case " .. i .. " printed " .. line)
  return { case = c, refused = rest }
end

-- every row, `jobs` worker processes at a time, read back in case order
local function run_workers(jobs, progress)
  local cmd = string.format("%q %q --case %%d 2>&1", arg[-1], arg[0])
  local open, rows = {}, {}
  for i = 1, #V.cases do
    for j = i, math.min(i + jobs - 1, #V.cases) do
      open[j] = open[j] or assert(io.popen(string.format(cmd, j)))
    end
    local out = open[i]:read("a")
    if not open[i]:close() then error("worker of case " .. i .. " failed:\n" .. out, 0) end
    rows[i], open[i] = decode(i, out:match("([^\n]+)\n*$")), nil
    progress(rows[i])
  end
  return rows
end

local o = options(arg)
if o.case then
  print(encode(V.row(o.case)))
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
