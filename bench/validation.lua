-- bench/validation.lua: the validation table (`make validation`). Runs every case
-- of shmemlab.validation (published operator-level measurements of the shipping
-- MoE kernels, never used to calibrate) and prints the manual's Markdown table.
-- Virtual time only: the numbers do not depend on this machine, but the largest
-- cases take minutes. `lua5.4 bench/validation.lua --readme README.md doc/*.md`
-- (`make validation`) also rewrites the doc that holds the validation markers,
-- with the fingerprint of the inputs spec/validation_spec.lua checks.
local V = require("shmemlab.validation")

local BEGIN = "<!-- validation:begin (make validation-readme writes this block) -->"
local END = "<!-- validation:end -->"

local write_readme = require("scripts.readme_block")

local t0 = os.clock()
local rows = V.run_all(function(r)
  io.stderr:write(string.format("  %-28s %s (%.0f s CPU so far)\n", r.case.name,
    r.modeled and string.format("%.1f %s", r.modeled, r.case.unit) or r.refused, os.clock() - t0))
end)
local table_text = V.markdown(rows)
print(string.format("shmemlab validation: %d cases, source: %s", #V.cases, V.SOURCE))
print()
print(table_text)
if arg[1] == "--readme" then
  assert(arg[2], "--readme FILE...")                 -- the docs to look in: README.md doc/*.md
  write_readme(table.move(arg, 2, #arg, 1, {}), BEGIN, END, table.concat({ BEGIN, table_text, "",
    "Source: " .. V.SOURCE .. ". Inputs fingerprint " .. V.fingerprint() .. " (`make "
    .. "validation-readme`; spec/validation_spec.lua fails when the inputs change).", END }, "\n"),
    "validation")
end
