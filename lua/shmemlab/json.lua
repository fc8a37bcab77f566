-- shmemlab.json -- deterministic JSON encoder (pure Lua) and a decoder (cjson or dkjson).
--
-- encode(v [, opts]) writes objects with sorted keys so that output files diff cleanly.
--   * a table whose keys are exactly 1..n is an array; any other non-empty table is an
--     object (integer keys become strings); an empty table is {} unless json.array(t)
--   * integers print as integers; floats print with the fewest digits (15..17) that read
--     back to the same double; NaN and +-Inf are errors; json.null encodes as null
--   * opts.indent = n pretty-prints with n spaces per level
-- decode(s) uses cjson when installed, else dkjson. JSON null becomes json.null, and
-- integral numbers become Lua integers (cjson alone would return floats).

local M = {}

local ok_cjson, cjson = pcall(require, "cjson")
local dkjson
if not ok_cjson then
  local ok_dk, dk = pcall(require, "dkjson")
  if ok_dk then dkjson = dk end
end
M.backend = ok_cjson and "cjson" or (dkjson and "dkjson" or nil)

M.null = setmetatable({}, { __name = "json.null", __tostring = function() return "null" end })

local ARRAY_MT = { __jsontype = "array" }      -- dkjson understands this marker too
local OBJECT_MT = { __jsontype = "object" }

-- json.array(t) marks t (default a new table) as an array so that {} encodes as []
function M.array(t)
  t = t or {}
  return setmetatable(t, ARRAY_MT)
end

-- json.object(t) marks t as an object, so that {1, 2} encodes as {"1":1,"2":2}
function M.object(t)
  t = t or {}
  return setmetatable(t, OBJECT_MT)
end

function M.is_array(t)
  return getmetatable(t) == ARRAY_MT
end

local ESC = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f',
  ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t' }

local function encode_string(s)
  if not utf8.len(s) then
    error("json.encode: string is not valid UTF-8: " .. string.format("%q", s:sub(1, 40)), 0)
  end
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESC[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

local function encode_number(x)
  if math.type(x) == "integer" then return string.format("%d", x) end
  if x ~= x or x == math.huge or x == -math.huge then
    error("json.encode: cannot encode " .. tostring(x) .. " (JSON has no NaN or Inf)", 0)
  end
  for digits = 15, 17 do
    local s = string.format("%." .. digits .. "g", x)
    if tonumber(s) == x then return s end
  end
  return string.format("%.17g", x)
end

-- kind(t) -> "array", n  |  "object", sorted list of {string key, value}
local function classify(t)
  local mt = getmetatable(t)
  local jt = type(mt) == "table" and mt.__jsontype or nil   -- ours, or dkjson's marker
  local n, count = #t, 0
  for _ in pairs(t) do count = count + 1 end
  if jt == "array" then
    if count ~= n then error("json.encode: table marked as array has non-sequence keys", 0) end
    return "array", n
  end
  if jt ~= "object" and count > 0 and count == n then return "array", n end
  local entries, seen = {}, {}
  for k, v in pairs(t) do
    local ks
    if type(k) == "string" then ks = k
    elseif math.type(k) == "integer" then ks = string.format("%d", k)
    else error("json.encode: object keys must be strings or integers, got " .. type(k), 0) end
    if seen[ks] then error("json.encode: key '" .. ks .. "' appears twice (as string and integer)", 0) end
    seen[ks] = true
    entries[#entries + 1] = { ks, v }
  end
  table.sort(entries, function(a, b) return a[1] < b[1] end)
  return "object", entries
end

local function encode_value(v, out, stack, indent, depth)
  local tv = type(v)
  if v == nil or v == M.null or (ok_cjson and v == cjson.null) then out[#out + 1] = "null"
  elseif tv == "boolean" then out[#out + 1] = v and "true" or "false"
  elseif tv == "number" then out[#out + 1] = encode_number(v)
  elseif tv == "string" then out[#out + 1] = encode_string(v)
  elseif tv == "table" then
    if stack[v] then error("json.encode: circular reference", 0) end
    stack[v] = true
    local kind, items = classify(v)
    local nl, pad, pad_in, colon = "", "", "", ":"
    if indent then
      nl = "\n"
      pad = string.rep(" ", indent * depth)
      pad_in = string.rep(" ", indent * (depth + 1))
      colon = ": "
    end
    if kind == "array" then
      if items == 0 then out[#out + 1] = "[]"
      else
        out[#out + 1] = "[" .. nl
        for i = 1, items do
          if i > 1 then out[#out + 1] = "," .. nl end
          out[#out + 1] = pad_in
          encode_value(v[i], out, stack, indent, depth + 1)
        end
        out[#out + 1] = nl .. pad .. "]"
      end
    else
      if #items == 0 then out[#out + 1] = "{}"
      else
        out[#out + 1] = "{" .. nl
        for i, e in ipairs(items) do
          if i > 1 then out[#out + 1] = "," .. nl end
          out[#out + 1] = pad_in .. encode_string(e[1]) .. colon
          encode_value(e[2], out, stack, indent, depth + 1)
        end
        out[#out + 1] = nl .. pad .. "}"
      end
    end
    stack[v] = nil
  else
    error("json.encode: cannot encode a " .. tv, 0)
  end
end

-- json.encode(v [, opts]) -> string; errors are raised at the caller's level
function M.encode(v, opts)
  local indent = opts and opts.indent
  if indent ~= nil and (math.type(indent) ~= "integer" or indent < 0) then
    error("bad argument #2 to 'encode' (indent must be a non-negative integer)", 2)
  end
  local out = {}
  local ok, err = pcall(encode_value, v, out, {}, indent, 0)
  if not ok then error(err, 2) end
  return table.concat(out)
end

local function normalise(v)
  if ok_cjson and v == cjson.null then return M.null end
  if math.type(v) == "float" and v == math.floor(v) and math.abs(v) < 2 ^ 53 then
    return math.tointeger(v)
  end
  if type(v) == "table" and v ~= M.null then
    for k, x in pairs(v) do v[k] = normalise(x) end
  end
  return v
end

-- json.decode(s) -> value; raises "bad argument #1 to 'decode' (invalid JSON: ...)"
function M.decode(s)
  if type(s) ~= "string" then
    error("bad argument #1 to 'decode' (string expected, got " .. type(s) .. ")", 2)
  end
  if ok_cjson then
    local ok, v = pcall(cjson.decode, s)
    if not ok then error("bad argument #1 to 'decode' (invalid JSON: " .. tostring(v) .. ")", 2) end
    return normalise(v)
  elseif dkjson then
    local v, _, err = dkjson.decode(s, 1, M.null)
    if err then error("bad argument #1 to 'decode' (invalid JSON: " .. err .. ")", 2) end
    return normalise(v)
  end
  error("json.decode: neither cjson nor dkjson is installed", 2)
end

return M
