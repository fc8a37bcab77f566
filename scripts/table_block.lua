-- scripts/table_block.lua: print a generated table of the docs (shmemlab.doc_table)
-- from its rows and, when the bench was run with `--readme FILE...`, rewrite its
-- block in whichever of those docs holds its markers.
-- require("scripts.table_block")(b, rows, arg, t0): t0 the bench's os.clock() at its
-- start, for the CPU seconds it reports on stderr
local T = require("shmemlab.doc_table")
local write_readme = require("scripts.readme_block")

return function(b, rows, args, t0)
  local block = T.block(b, rows)
  print(block)
  io.stderr:write(string.format("%.1f s CPU in all\n", os.clock() - t0))
  if args[1] == "--readme" then      -- the docs to look in: README.md doc/*.md
    assert(args[2], "--readme FILE...")
    write_readme(table.move(args, 2, #args, 1, {}), b.first, b.last, block, b.name)
  end
end
