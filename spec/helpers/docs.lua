-- Helpers of the specs that read the docs: the front door README.md and the manual's
-- doc/*.md, where the generated blocks live (in whichever file holds them).
local lfs = require("lfs")
local T = require("shmemlab.doc_table")

local H = {}

-- README.md, then doc/*.md sorted
function H.files()
  local out = {}
  for name in lfs.dir("doc") do
    if name:match("%.md$") then out[#out + 1] = "doc/" .. name end
  end
  table.sort(out)
  table.insert(out, 1, "README.md")
  return out
end

-- a file's text
function H.read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

-- {path = text} of every doc, and the list of paths
function H.texts()
  local t = {}
  for _, path in ipairs(H.files()) do t[path] = H.read(path) end
  return t, H.files()
end

-- the doc that holds generated table b (shmemlab.doc_table): its path, its rows
-- and its text
function H.table_rows(b)
  local texts, files = H.texts()
  for _, path in ipairs(files) do
    local rows = T.rows(b, texts[path])
    if rows then return path, rows, texts[path] end
  end
  error("no doc holds the " .. b.name .. " block: run make " .. b.target)
end

-- the shell-quoted list of the docs, for the scripts that take them
function H.args() return table.concat(H.files(), " ") end

return H
