-- bench/fidelity.lua: the fidelity table (`make fidelity`). Models every case
-- of shmemlab.fidelity (published single-pair transfer measurements), prints
-- the manual's Markdown table, the fits the profiles were calibrated from
-- (with the modeled per-descriptor cost beside the published one) and every
-- source once. Virtual time only: the numbers do not depend on this machine.
-- `lua5.4 bench/fidelity.lua --readme README.md doc/*.md` (`make fidelity`) also
-- rewrites the doc that holds the fidelity markers (doc/fidelity.md) with this output.
local lab = require("shmemlab")
local F = require("shmemlab.fidelity")

local BEGIN = "<!-- fidelity:begin (make fidelity-readme writes this block) -->"
local END = "<!-- fidelity:end -->"

-- the fit t(N) = t0 + N * c of each family, published and modeled, as text lines
local function fit_lines(rows)
  local out = { string.format("%-30s %9s %8s %9s %8s %6s %9s %6s  %s", "fit t = t0 + N c",
    "pub GB/s", "us/desc", "mod GB/s", "us/desc", "link", "pub/link", "eff", "use") }
  local families, order = {}, {}
  for _, r in ipairs(rows) do
    local c = r.case
    local key = table.concat({ c.soc, c.path, c.op, c.source }, " ")
    if not families[key] then families[key] = {}; order[#order + 1] = key end
    table.insert(families[key], { desc_bytes = c.desc_bytes, bps = F.bps(c, r.modeled),
                                  role = c.role })
  end
  for _, key in ipairs(order) do
    local soc, path, op, source = key:match("^(%S+) (%S+) (%S+) (%S+)$")
    local p = lab.soc(soc)
    local bw, cost = F.fit(F.published(soc, op, path, source))
    local mbw, mcost = F.fit(families[key])
    local link = path == "RDMA" and p.rdma_GBps or p.hccs_GBps
    local eff = "-"
    if path == "HCCS" then
      eff = string.format("%.3f", op == "get" and p.hccs_read_eff or p.hccs_write_eff)
    end
    out[#out + 1] = string.format("%-30s %9.2f %8.3f %9.2f %8.3f %6.1f %9.3f %6s  %s",
      key, bw, cost, mbw, mcost, link, bw / link, eff, families[key][1].role)
  end
  out[#out + 1] = "(pub/link: the published asymptote over the profile's link; eff: the "
    .. "profile's hccs_*_eff, calibrated on the families whose use says fits)"
  return out
end

-- the doc block: table, fits, sources (Markdown)
local function readme_block(rows)
  local src = {}
  for _, l in ipairs(F.source_lines()) do src[#src + 1] = "- " .. l end
  return table.concat({ BEGIN, F.markdown(rows), "", "```",
    table.concat(fit_lines(rows), "\n"), "```", "",
    "Sources of the calibrated profiles, each once (`lab.soc(name).sources`):", "",
    table.concat(src, "\n"), END }, "\n")
end

local write_readme = require("scripts.readme_block")

local rows = F.run_all()
print(string.format("shmemlab fidelity: %d cases, %d MiB per case as 16 KiB-8 MiB descriptors "
  .. "on one engine queue (a fence every %d), tolerance %d%%", #F.cases,
  F.total_bytes // (1024 * 1024), F.chunk, F.tolerance_pct))
print()
print(F.markdown(rows))
print()
print(table.concat(fit_lines(rows), "\n"))
print()
print("sources of the calibrated profiles (lab.soc(name).sources), each once:")
for _, l in ipairs(F.source_lines()) do print("  " .. l) end
if arg[1] == "--readme" then      -- the docs to look in: README.md doc/*.md
  assert(arg[2], "--readme FILE...")
  write_readme(table.move(arg, 2, #arg, 1, {}), BEGIN, END, readme_block(rows), "fidelity")
end
