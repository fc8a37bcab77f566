-- bench/hccl_tables.lua: doc/hccl.md's two tables (`make hccl-tables`). Runs every
-- case of shmemlab.hccl_cases: the task plan of each (SoC, op, PEs, size) against
-- cann-hccl's alpha-beta formula, and inside one server the AIV kernels beside the
-- task plan; prints both Markdown tables and how many cases agree within 15%.
-- Virtual time only: the figures do not depend on this machine.
-- `lua5.4 bench/hccl_tables.lua --readme README.md doc/*.md` (`make hccl-tables`) also
-- rewrites the two blocks of the doc that holds their markers (doc/hccl.md);
-- spec/hccl_plan_spec.lua fails when a row there is not the one a case computes.
local H = require("shmemlab.hccl_cases")
local write_readme = require("scripts.readme_block")

local plans, gap, within, of = {}, {}, {}, {}
for _, c in ipairs(H.cases()) do
  local r = H.run(c)
  plans[#plans + 1] = H.plan_row(r)
  if H.ONE_SERVER[r.soc] == r.pes then gap[#gap + 1] = H.gap_row(r, H.aiv(r)) end
  of[r.bytes] = (of[r.bytes] or 0) + 1
  within[r.bytes] = (within[r.bytes] or 0) + (math.abs(r.dev) <= 15 and 1 or 0)
end

local gap_block, plans_block = H.block(H.GAP, gap), H.block(H.PLANS, plans)
print("inside one server, kernel time of the baseline (us): the AIV kernels and the task plan")
print(gap_block)
print()
print("every task plan against cann-hccl's formula (us)")
print(plans_block)
print()
local total, agree, parts = 0, 0, {}
for i = #H.SIZES, 1, -1 do
  local b = H.SIZES[i]
  total, agree = total + of[b], agree + within[b]
  parts[#parts + 1] = string.format("%d of %d at %s", within[b], of[b], H.size(b))
end
print(string.format("of %d cases, %d agree within 15%%: %s", total, agree, table.concat(parts, ", ")))
if arg[1] == "--readme" then      -- the docs to look in: README.md doc/*.md
  assert(arg[2], "--readme FILE...")
  local docs = table.move(arg, 2, #arg, 1, {})
  write_readme(docs, H.GAP.first, H.GAP.last, gap_block, H.GAP.name)
  write_readme(docs, H.PLANS.first, H.PLANS.last, plans_block, H.PLANS.name)
end
