-- bench/validation.lua: the validation table (`make validation`). Runs every case
-- of shmemlab.validation (published operator-level measurements of the shipping
-- MoE kernels, never used to calibrate) and prints the README's Markdown table.
-- Virtual time only: the numbers do not depend on this machine, but the largest
-- cases take minutes. `lua5.4 bench/validation.lua --readme README.md` (`make
-- validation-readme`) also rewrites the README between its validation markers,
-- with the fingerprint of the inputs spec/validation_spec.lua checks.
local V = require("shmemlab.validation")

local BEGIN = "<!-- validation:begin (make validation-readme writes this block) -->"
local END = "<!-- validation:end -->"

-- replace the marked block of a README file
local function write_readme(path, block)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  local a = text:find(BEGIN, 1, true)
  local _, b = text:find(END, 1, true)
  assert(a and b and b > a, path .. ": validation markers not found")
  f = assert(io.open(path, "wb"))
  f:write(text:sub(1, a - 1), block, text:sub(b + 1))
  f:close()
  print("rewrote the validation block of " .. path)
end

local t0 = os.clock()
local rows = V.run_all(function(r)
  io.stderr:write(string.format("  %-28s %s (%.0f s CPU so far)\n", r.case.name,
    r.modeled and string.format("%.1f %s", r.modeled, r.case.unit) or "no op yet", os.clock() - t0))
end)
local table_text = V.markdown(rows)
print(string.format("shmemlab validation: %d cases, source: %s", #V.cases, V.SOURCE))
print()
print(table_text)
if arg[1] == "--readme" then
  write_readme(assert(arg[2], "--readme FILE"), table.concat({ BEGIN, table_text, "",
    "Source: " .. V.SOURCE .. ". Inputs fingerprint " .. V.fingerprint() .. " (`make "
    .. "validation-readme`; spec/validation_spec.lua fails when the inputs change).", END }, "\n"))
end
