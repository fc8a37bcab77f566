-- The check shadows are sparse (4 KiB chunks kept as one cell, or one byte
-- map, until an access covers part of one): what they report must be what a
-- shadow per granule and per byte reports, at chunk edges, inside whole
-- chunks, across launches and after a new UB allocation.
local lab = require("shmemlab")

-- the Lua lines of the reports, sorted, and the other side's lines
local function lines(m, reports)
  local sites, own, other = m:state().sites, {}, {}
  for _, r in ipairs(reports) do
    own[#own + 1] = tonumber(sites[r.site]:match(":(%d+)"))
    if r.other_site then other[#other + 1] = tonumber(sites[r.other_site]:match(":(%d+)")) end
  end
  table.sort(own)
  return own, other
end

-- the line of the caller (where the kernel below issues its access)
local function here() return debug.getinfo(2, "l").currentline end

describe("sparse check shadows", function()
  it("racecheck: races inside a whole chunk, across a chunk edge and in a partial granule", function()
    local m = lab.machine{ pes = 1, check = "racecheck" }
    local gm = m:alloc("int32", 4096, "gm"):fill("iota")      -- 4 chunks of 4 KiB
    local want = {}
    local read_line
    -- block 0 reads elements [0, 3172) (12688 bytes: three whole chunks and
    -- part of the fourth, ending 16 bytes into a granule) first; block 1's
    -- unordered writes race where they overlap it, and only there
    m:launch(function(k)
      local ub = k:ub("int32", 4096)
      if k.block == 0 then
        read_line = here() + 1
        k:data_copy_pad(ub, gm, 3172)
      else
        want[1] = here() + 1
        k:data_copy(gm:sub(2000, 8), ub, 8)                   -- inside chunk 1
        k:data_copy(gm:sub(3172, 8), ub, 8)                   -- the granule's other half
        want[3] = here() + 1
        k:data_copy(gm:sub(3168, 8), ub, 8)                   -- overlaps its end
        want[2] = here() + 1
        k:data_copy(gm:sub(1020, 8), ub, 8)                   -- across chunks 0 and 1
        k:data_copy(gm:sub(3200, 800), ub, 800)               -- past it
      end
    end, 2)
    local reports = m:check_reports(true)
    local own, other = lines(m, reports)
    table.sort(want)
    assert.same(want, own)
    assert.same({ read_line, read_line, read_line }, other)
    -- a new launch forgets the shadow: the same writes alone race with nothing
    m:launch(function(k)
      if k.block == 1 then
        local ub = k:ub("int32", 4096)
        k:data_copy(gm:sub(2000, 8), ub, 8)
        k:data_copy(gm:sub(1020, 8), ub, 8)
      end
    end, 2)
    assert.same({}, m:check_reports())
  end)

  it("racecheck: a chunk written whole after a partial write is judged whole", function()
    local m = lab.machine{ pes = 1, check = "racecheck" }
    local gm = m:alloc("int32", 2048, "gm"):fill("iota")      -- 2 chunks
    local write_line, read_line
    -- block 1's read comes first; block 0's whole write, after it split
    -- chunk 0 with a 12-byte write, races with it
    m:launch(function(k)
      local ub = k:ub("int32", 2048)
      if k.block == 0 then
        k:data_copy_pad(gm:sub(5, 3), ub, 3)                  -- splits chunk 0
        k:pipe_barrier("ALL")
        write_line = here() + 1
        k:data_copy(gm, ub, 2048)                             -- then covers it all
      else
        read_line = here() + 1
        k:data_copy_pad(ub, gm:sub(700, 4), 4)
      end
    end, 2)
    local reports = m:check_reports()
    assert.equal(1, #reports)
    local own, other = lines(m, reports)
    assert.same({ { write_line }, { read_line } }, { own, other })
    assert.equal("race", reports[1].kind)
  end)

  it("initcheck: the first unwritten byte across chunks, and a new UB holds nothing", function()
    local m = lab.machine{ pes = 1, check = "initcheck" }
    local src = m:alloc("int32", 4096, "src"):fill("iota")
    local gm = m:alloc("int32", 4096, "gm")                   -- never filled
    local out = m:alloc("int32", 4096, "out")
    m:launch(function(k)
      local ub = k:ub("int32", 4096)
      k:data_copy_pad(ub, src, 3172)
      k:set_flag("MTE2_MTE3", 0); k:wait_flag("MTE2_MTE3", 0)
      k:data_copy_pad(gm, ub, 3172)                           -- 12688 bytes written
      k:pipe_barrier("ALL")
      k:data_copy_pad(ub, gm:sub(1000, 2000), 2000)           -- all written
      k:data_copy(ub, gm:sub(3000, 200), 200)                 -- runs past the end
    end, 1)
    local reports = m:check_reports(true)
    assert.equal(1, #reports)
    assert.equal("uninitialized_read", reports[1].kind)
    assert.equal("gm", reports[1].buffer)
    assert.matches("first uninitialised byte at +688", reports[1].what, 1, true)
    -- the UB written in the first launch is a new allocation in the second
    m:launch(function(k)
      local ub = k:ub("int32", 1100)
      k:pipe_barrier("ALL")
      k:data_copy_pad(out, ub, 1100)
    end, 1)
    reports = m:check_reports()
    assert.equal(1, #reports)
    assert.equal("UB", reports[1].buffer)
    assert.matches("first uninitialised byte at +0", reports[1].what, 1, true)
  end)
  it("racecheck: many writers sharing a granule are judged each by its own thread", function()
    -- blocks 0..7 each write one int32 of the same 32-byte granule and signal it;
    -- block 8 waits for block 0's signal only, reads block 0's element (ordered:
    -- no race) and block 7's (unordered: one race). A granule remembers four
    -- writers; before, a third one took over the oldest's bytes, so the ordered
    -- read was blamed on a block it never waited for
    local m = lab.machine{ pes = 1, check = "racecheck" }
    local gm = m:alloc("int32", 8, "gm"):fill("zero")
    local flags = m:malloc("int32", 8, "flags"):fill("zero")
    local race_line
    m:launch(function(k)
      local ub = k:ub("int32", 8)
      if k.block < 8 then
        k:data_copy_pad(gm:sub(k.block, 1), ub, 1)
        k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
        k:signal_op(flags:sub(k.block, 1), 1, lab.SIGNAL_SET, 0)
      else
        k:signal_wait_until(flags:sub(0, 1), lab.CMP_EQ, 1)
        k:data_copy_pad(ub, gm:sub(0, 1), 1)
        race_line = here() + 1
        k:data_copy_pad(ub, gm:sub(7, 1), 1)
      end
    end, 9)
    local own = lines(m, m:check_reports(true))
    assert.same({ race_line }, own)
  end)
end)
