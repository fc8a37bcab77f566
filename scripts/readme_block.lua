-- scripts/readme_block.lua: replace the block between two marker lines in whichever
-- of the docs holds it (the generated tables of bench/fidelity.lua, bench/validation.lua
-- and scripts/measured_block.lua). paths: one file or a list (README.md doc/*.md);
-- exactly one of them must hold the markers.
-- require("scripts.readme_block")(paths, begin_marker, end_marker, block, what)
local function read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

return function(paths, first, last, block, what)
  if type(paths) == "string" then paths = { paths } end
  local found
  for _, path in ipairs(paths) do
    local text = read(path)
    local a = text:find(first, 1, true)
    if a then
      assert(found == nil, what .. " markers in both " .. tostring(found) .. " and " .. path)
      found = path
      local _, b = text:find(last, a, true)
      assert(b, path .. ": " .. what .. " block has no end marker")
      local f = assert(io.open(path, "wb"))
      f:write(text:sub(1, a - 1), block, text:sub(b + 1))
      f:close()
    end
  end
  assert(found, table.concat(paths, " ") .. ": " .. what .. " markers not found")
  print("rewrote the " .. what .. " block of " .. found)
end
