-- shmemlab.frames -- the cycle-profiling frame ids (the only place they are defined).
--
-- The five frame kinds of the CANN SHMEM device-profiling guide, with stable ids:
--   COPY_IN        = 0  "copy_in/copy_out"        GM / UB / symmetric buffer moves
--   REMOTE_PUT_GET = 1  "remote_put_get"          MTE / SDMA / RDMA put and get
--   SIGNAL_WAIT    = 2  "signal_or_barrier_wait"  signal wait, barrier, quiet
--   LOCAL_COMPUTE  = 3  "local_compute"           reduce, matmul, packing
--   FINALIZE       = 4  "finalize"                write-back, metadata, tail
-- Frames are recorded only when id < MAX_FRAME and block < MAX_BLOCK (as on hardware).
-- An operator adds its own ids with frames.custom(frames, {MY_FRAME = 5}).

local M = {}

M.MAX_FRAME = 1024   -- ACLSHMEM_CYCLE_PROF_FRAME_CNT
M.MAX_BLOCK = 64     -- ACLSHMEM_CYCLE_PROF_MAX_BLOCK
M.FIRST_CUSTOM = 5   -- ids below this belong to the five standard kinds

M.kinds = {
  { id = 0, key = "COPY_IN", name = "copy_in/copy_out" },
  { id = 1, key = "REMOTE_PUT_GET", name = "remote_put_get" },
  { id = 2, key = "SIGNAL_WAIT", name = "signal_or_barrier_wait" },
  { id = 3, key = "LOCAL_COMPUTE", name = "local_compute" },
  { id = 4, key = "FINALIZE", name = "finalize" },
}

-- custom_kinds: the operator's own frames, sorted by id (empty in the base table)
M.custom_kinds = {}

M.names = {}
for _, k in ipairs(M.kinds) do
  M[k.key] = k.id
  M.names[k.id] = k.name
end

local function copy_list(list)
  local out = {}
  for i, k in ipairs(list) do out[i] = { id = k.id, key = k.key, name = k.name } end
  return out
end

-- frames.custom(base, extra) -> a new frames table: base's ids plus extra's.
-- extra maps KEY -> id, or KEY -> {id = n, name = "text"}; the default name is the
-- key in lower case. Ids must be integers in [FIRST_CUSTOM, MAX_FRAME) and unique.
function M.custom(base, extra)
  if type(base) ~= "table" or type(base.names) ~= "table" or type(base.kinds) ~= "table" then
    error("bad argument #1 to 'custom' (frames table expected)", 2)
  end
  if type(extra) ~= "table" then
    error("bad argument #2 to 'custom' (table of KEY = id expected, got " .. type(extra) .. ")", 2)
  end
  local out = {}
  for k, v in pairs(base) do out[k] = v end
  out.kinds = copy_list(base.kinds)
  out.custom_kinds = copy_list(base.custom_kinds or {})
  out.names = {}
  for id, name in pairs(base.names) do out.names[id] = name end

  local added = {}
  for key, v in pairs(extra) do
    if type(key) ~= "string" or not key:match("^[%a_][%w_]*$") then
      error("bad argument #2 to 'custom' (frame keys must be identifiers, got " .. tostring(key) .. ")", 2)
    end
    local id, name = v, nil
    if type(v) == "table" then id, name = v.id, v.name end
    if math.type(id) ~= "integer" then
      error("bad argument #2 to 'custom' (frame " .. key .. " needs an integer id)", 2)
    end
    if id < M.FIRST_CUSTOM or id >= M.MAX_FRAME then
      error(string.format("bad argument #2 to 'custom' (frame %s = %d out of range: custom ids "
        .. "must be >= %d and < %d)", key, id, M.FIRST_CUSTOM, M.MAX_FRAME), 2)
    end
    if out[key] ~= nil then
      error("bad argument #2 to 'custom' (frame key " .. key .. " already defined)", 2)
    end
    added[#added + 1] = { id = id, key = key, name = name or key:lower() }
  end
  table.sort(added, function(a, b) return a.id < b.id or (a.id == b.id and a.key < b.key) end)
  for _, k in ipairs(added) do
    if out.names[k.id] ~= nil then
      error(string.format("bad argument #2 to 'custom' (frame id %d of %s duplicates '%s')",
        k.id, k.key, out.names[k.id]), 2)
    end
    out[k.key] = k.id
    out.names[k.id] = k.name
    out.custom_kinds[#out.custom_kinds + 1] = k
  end
  table.sort(out.custom_kinds, function(a, b) return a.id < b.id end)
  return out
end

-- frames.name(id [, fr]) -> the frame's name, or "frame <id>" for an id with no name
function M.name(id, fr)
  local names = (fr or M).names
  return names[id] or ("frame " .. tostring(id))
end

return M
