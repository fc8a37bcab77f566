-- shmemlab.doc_table: a generated Markdown table of the docs, between two marker
-- lines, as the case modules (hccl_cases, chain_cases, hier_cases) keep theirs: the
-- bench that measures it writes the block, and a spec reads its rows back to
-- compare them with what its cases compute now.
local M = {}

-- the table named name that `make target` writes, with its header lines
function M.new(name, target, header)
  return { name = name, target = target, header = header,
           first = "<!-- " .. name .. ":begin (make " .. target .. " writes this block) -->",
           last = "<!-- " .. name .. ":end -->" }
end

-- table b's block of doc text: its markers around its header and rows
function M.block(b, rows)
  return table.concat({ b.first, b.header, table.concat(rows, "\n"), b.last }, "\n")
end

-- the rows of table b in text (nil when the markers are missing), in order
function M.rows(b, text)
  local a = text:find(b.first, 1, true)
  if not a then return nil end
  local z = assert(text:find(b.last, a, true), b.name .. " block has no end marker")
  local out = {}
  for line in text:sub(a, z - 1):gmatch("[^\n]+") do
    if line:find("^| ") and not b.header:find(line, 1, true) then out[#out + 1] = line end
  end
  return out
end

-- an integer with thousands separators, as the tables print counts: "1,690,112"
function M.thousands(n)
  local s = string.format("%d", n)
  return (s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end

return M
