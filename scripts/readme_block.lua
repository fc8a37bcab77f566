-- scripts/readme_block.lua: replace the block of a README between two marker lines
-- (the generated tables of bench/fidelity.lua and bench/validation.lua).
-- require("scripts.readme_block")(path, begin_marker, end_marker, block, what)
return function(path, first, last, block, what)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  local a = text:find(first, 1, true)
  local _, b = text:find(last, 1, true)
  assert(a and b and b > a, path .. ": " .. what .. " markers not found")
  f = assert(io.open(path, "wb"))
  f:write(text:sub(1, a - 1), block, text:sub(b + 1))
  f:close()
  print("rewrote the " .. what .. " block of " .. path)
end
