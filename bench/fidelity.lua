-- bench/fidelity.lua: the fidelity table (`make fidelity`). Models every case
-- of shmemlab.fidelity (published single-pair transfer measurements), prints
-- the README's Markdown table, the fits the profiles were calibrated from,
-- the modeled per-descriptor cost beside the published one, and each source
-- once. Virtual time only: the numbers do not depend on this machine.
local lab = require("shmemlab")
local F = require("shmemlab.fidelity")

local rows = F.run_all()
print(string.format("shmemlab fidelity: %d cases, %d MiB per case as 1-8 MiB descriptors, "
  .. "%d AIV blocks, tolerance %d%%", #F.cases, F.total_bytes // (1024 * 1024), F.blocks,
  F.tolerance_pct))
print()
print(F.markdown(rows))
print()

-- the calibration: t(N) = t0 + N * c fitted over each family's published
-- figures (N descriptors of 128 MiB), and the same fit over the modeled ones
print(string.format("%-22s %9s %8s %9s %8s %6s %9s %6s  %s", "fit t = t0 + N c",
  "pub GB/s", "us/desc", "mod GB/s", "us/desc", "link", "pub/link", "eff", "use"))
local families, order = {}, {}
for _, r in ipairs(rows) do
  local c = r.case
  local key = c.soc .. " " .. c.path .. " " .. c.op
  if not families[key] then families[key] = {}; order[#order + 1] = key end
  table.insert(families[key], { desc_bytes = c.desc_bytes, gib_s = r.modeled, role = c.role })
end
for _, key in ipairs(order) do
  local soc, path, op = key:match("^(%S+) (%S+) (%S+)$")
  local p = lab.soc(soc)
  local bw, cost = F.fit(F.published(soc, op, path))
  local mbw, mcost = F.fit(families[key])
  local link = path == "RDMA" and p.rdma_GBps or p.hccs_GBps
  local eff = "-"
  if path == "HCCS" then
    eff = string.format("%.3f", op == "get" and p.hccs_read_eff or p.hccs_write_eff)
  end
  print(string.format("%-22s %9.2f %8.3f %9.2f %8.3f %6.1f %9.3f %6s  %s",
    key, bw, cost, mbw, mcost, link, bw / link, eff, families[key][1].role))
end
print("(pub/link is the published asymptote over the profile's link; eff is the "
  .. "profile's hccs_*_eff, calibrated to it)")
print()
print("sources of the cases:")
for _, line in ipairs(F.source_lines()) do print("  " .. line) end
print()
print("every source of the calibrated profiles (lab.soc(name).sources), each once:")
local seen = {}
for _, soc in ipairs({ "Ascend910B", "Ascend910_93" }) do
  local src = lab.soc(soc).sources
  local keys = {}
  for k in pairs(src) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    if not seen[src[k]] then
      seen[src[k]] = true
      print(string.format("  %s %s: %s", soc, k, src[k]))
    end
  end
end
