-- shmemlab.check: the reports of a checked run (lab.machine{check = ...},
-- run_op.lua --check MODE) in mssanitizer's manner, and their summary.
local lab = require("shmemlab")

local check = {}

local TITLE = {
  out_of_bounds = "out of bounds", use_after_free = "use of a freed buffer",
  uninitialized_read = "read of uninitialized memory", race = "data race",
  sync = "synchronisation error",
}
check.TITLE = TITLE

-- the text of a site id of machine m
local function site_text(m, id)
  if id == nil or id < 0 then return "(engine)" end
  local sites = m:state().sites
  return sites and sites[id] or ("site " .. id)
end

-- the space a report names: GM / symmetric heap / UB, remote when another PE's
local function space_text(r)
  local s = r.space == "UB" and "UB" or r.space
  if r.pe ~= nil and r.pe >= 0 and r.pe ~= r.by_pe and r.space ~= "UB" and r.space ~= "host" then
    s = s .. ", remote PE " .. r.pe
  end
  return s
end

-- who did it: PE, block, pipe, frame, time
local function who(r)
  local s = string.format("PE %d block %d", r.by_pe, r.by_block)
  if r.pipe then s = s .. " (" .. r.pipe .. ")" end
  if r.frame and r.frame >= 0 then
    s = s .. " in frame " .. r.frame .. " " .. (lab.frames.names[r.frame] or "")
  end
  return s .. string.format(" at %.3f us", r.time_us)
end

-- the lines of one report
function check.format(m, r)
  local L = {}
  local access = r.write and "write" or "read"
  if r.kind == "race" then
    L[1] = string.format("====== ERROR: data race: %s of %d bytes unordered with an earlier %s",
                         access, r.bytes, r.other_write and "write" or "read")
    L[#L + 1] = string.format("======    this side:  %s by %s", site_text(m, r.site), who(r))
    L[#L + 1] = string.format("======    other side: %s by PE %d block %d%s", site_text(m, r.other_site),
                              r.other_pe, r.other_block,
                              r.other_pipe and (" (" .. r.other_pipe .. ")") or "")
  elseif r.kind == "sync" then
    L[1] = "====== ERROR: synccheck: " .. (r.what or "")
    L[#L + 1] = string.format("======    at %s by %s", site_text(m, r.site), who(r))
  else
    L[1] = string.format("====== ERROR: %s: %s of %d bytes%s", TITLE[r.kind], access, r.bytes,
                         r.what and r.kind ~= "uninitialized_read" and (" (" .. r.what .. ")") or "")
    L[#L + 1] = string.format("======    at %s by %s", site_text(m, r.site), who(r))
  end
  if r.buffer then
    local where = r.space == "UB" and string.format("UB of PE %d core %d", r.pe, r.by_block)
      or string.format("%s buffer '%s' (%s)", r.space, r.buffer, space_text(r))
    L[#L + 1] = string.format("======    %s, byte offset %d, length %d%s%s", where, r.offset,
                              r.bytes, r.size > 0 and string.format(", allocation %d bytes", r.size)
                              or "", r.kind == "uninitialized_read" and r.what and ("; " .. r.what)
                              or "")
  end
  if r.count > 1 then L[#L + 1] = string.format("======    (%d occurrences)", r.count) end
  return table.concat(L, "\n") .. "\n"
end

-- number of errors (occurrences) in reports
function check.errors(reports)
  local n = 0
  for _, r in ipairs(reports) do n = n + r.count end
  return n
end

-- every report of machine m and the summary line; returns text, errors
function check.summary(m, label)
  local reports = m:check_reports()
  local out = {}
  for _, r in ipairs(reports) do out[#out + 1] = check.format(m, r) end
  local n = check.errors(reports)
  out[#out + 1] = string.format("====== %sERROR SUMMARY: %d error%s (%d distinct)\n",
                                label and (label .. ": ") or "", n, n == 1 and "" or "s", #reports)
  return table.concat(out), n, reports
end

return check
