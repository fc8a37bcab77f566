-- Specs of shmemlab.frames (the frame id table) and shmemlab.prof (the host print table of
-- cycle profiling, its CSV form and the perftest bandwidth CSV).

local frames = require("shmemlab.frames")
local prof = require("shmemlab.prof")

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

describe("frames", function()
  it("has the five stable ids of the guide", function()
    assert.are.equal(0, frames.COPY_IN)
    assert.are.equal(1, frames.REMOTE_PUT_GET)
    assert.are.equal(2, frames.SIGNAL_WAIT)
    assert.are.equal(3, frames.LOCAL_COMPUTE)
    assert.are.equal(4, frames.FINALIZE)
    assert.are.equal("copy_in/copy_out", frames.names[0])
    assert.are.equal("remote_put_get", frames.names[1])
    assert.are.equal("signal_or_barrier_wait", frames.names[2])
    assert.are.equal("local_compute", frames.names[3])
    assert.are.equal("finalize", frames.names[4])
    assert.is_nil(frames.names[5])
    assert.are.equal(1024, frames.MAX_FRAME)
    assert.are.equal(64, frames.MAX_BLOCK)
  end)

  it("lists the kinds in id order with key and name", function()
    assert.are.same({
      { id = 0, key = "COPY_IN", name = "copy_in/copy_out" },
      { id = 1, key = "REMOTE_PUT_GET", name = "remote_put_get" },
      { id = 2, key = "SIGNAL_WAIT", name = "signal_or_barrier_wait" },
      { id = 3, key = "LOCAL_COMPUTE", name = "local_compute" },
      { id = 4, key = "FINALIZE", name = "finalize" },
    }, frames.kinds)
    assert.are.same({}, frames.custom_kinds)
  end)

  it("adds an operator's own frames in a new table", function()
    local f = frames.custom(frames, { PACK = 5, UNPACK = { id = 9, name = "unpack tokens" }, TAIL = 1023 })
    assert.are.equal(5, f.PACK)
    assert.are.equal(9, f.UNPACK)
    assert.are.equal(1023, f.TAIL)
    assert.are.equal("pack", f.names[5])
    assert.are.equal("unpack tokens", f.names[9])
    assert.are.equal("copy_in/copy_out", f.names[0])
    assert.are.equal(2, f.SIGNAL_WAIT)
    assert.are.equal(5, #f.kinds)
    assert.are.same({ 5, 9, 1023 }, { f.custom_kinds[1].id, f.custom_kinds[2].id, f.custom_kinds[3].id })
    assert.are.equal("UNPACK", f.custom_kinds[2].key)
    assert.are.equal("unpack tokens", frames.name(9, f))
    assert.are.equal("frame 7", frames.name(7, f))
    -- the base table is untouched
    assert.is_nil(frames.PACK)
    assert.is_nil(frames.names[5])
    assert.are.same({}, frames.custom_kinds)
    -- and a custom table can be extended again
    local g = frames.custom(f, { MORE = 6 })
    assert.are.equal(5, g.PACK)
    assert.are.equal(6, g.MORE)
    assert.are.equal(4, #g.custom_kinds)
    assert.is_nil(f.MORE)
  end)

  it("rejects reserved, out-of-range and duplicated ids", function()
    assert.has_error(function() frames.custom(frames, { MINE = 3 }) end,
      "bad argument #2 to 'custom' (frame MINE = 3 out of range: custom ids must be >= 5 and < 1024)")
    assert.has_error(function() frames.custom(frames, { MINE = 1024 }) end,
      "bad argument #2 to 'custom' (frame MINE = 1024 out of range: custom ids must be >= 5 and < 1024)")
    assert.has_error(function() frames.custom(frames, { MINE = 5.5 }) end,
      "bad argument #2 to 'custom' (frame MINE needs an integer id)")
    assert.has_error(function() frames.custom(frames, { A = 7, B = 7 }) end,
      "bad argument #2 to 'custom' (frame id 7 of B duplicates 'a')")
    local f = frames.custom(frames, { A = 7 })
    assert.has_error(function() frames.custom(f, { C = 7 }) end,
      "bad argument #2 to 'custom' (frame id 7 of C duplicates 'a')")
    assert.has_error(function() frames.custom(f, { A = 8 }) end,
      "bad argument #2 to 'custom' (frame key A already defined)")
    assert.has_error(function() frames.custom(frames, { COPY_IN = 8 }) end,
      "bad argument #2 to 'custom' (frame key COPY_IN already defined)")
    assert.has_error(function() frames.custom(frames, 5) end,
      "bad argument #2 to 'custom' (table of KEY = id expected, got number)")
    assert.has_error(function() frames.custom({}, {}) end,
      "bad argument #1 to 'custom' (frames table expected)")
  end)
end)

describe("prof.format", function()
  -- the seed's three rows, plus rows that test the sort (block 10 after block 2), a
  -- frame with a non-terminating average, and a row with count 0 that must not print.
  -- By the rule AvgTime = Cycles / Count / cycle2us, 12345678 / 4 / 50 = 61728.390: the
  -- seed's printed 61.728 (and 43.827, 117.284) is 1000 times smaller than its own formula.
  local data = {
    cycle2us = 50,
    rows = {
      { block = 10, frame = 4, cycles = 123, count = 1 },
      { block = 0, frame = 2, cycles = 23456789, count = 4 },
      { block = 2, frame = 0, cycles = 1000, count = 3 },
      { block = 1, frame = 3, cycles = 0, count = 0 },
      { block = 0, frame = 0, cycles = 12345678, count = 4 },
      { block = 0, frame = 1, cycles = 8765432, count = 4 },
    },
  }

  it("prints the host table byte for byte (golden file written by hand)", function()
    assert.are.equal(read("spec/fixtures/prof_table.txt"), prof.format(data))
  end)

  it("has the rule widths, column widths and AvgTime of the layout", function()
    local text = prof.format(data)
    local lines = {}
    for l in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    assert.are.equal(9, #lines)
    assert.are.equal(string.rep("=", 60), lines[1])
    assert.are.equal(string.rep("-", 60), lines[3])
    assert.are.equal(string.rep("=", 60), lines[9])
    assert.are.equal("BlockID   FrameID   Cycles         Count          AvgTime(us)    ", lines[2])
    assert.are.equal("0         0         12345678       4              61728.390      ", lines[4])
    assert.are.equal("\n", text:sub(-1))
  end)

  it("prints only the rules and header when nothing was recorded", function()
    local t = prof.format({ cycle2us = 1000, rows = { { block = 0, frame = 0, cycles = 5, count = 0 } } })
    assert.are.equal(string.rep("=", 60) .. "\n"
      .. "BlockID   FrameID   Cycles         Count          AvgTime(us)    \n"
      .. string.rep("-", 60) .. "\n" .. string.rep("=", 60) .. "\n", t)
  end)

  it("divides by cycle2us (1000 on Ascend950)", function()
    local t = prof.format({ cycle2us = 1000,
      rows = { { block = 3, frame = 7, cycles = 2000001, count = 2 } } })
    assert.truthy(t:find("3         7         2000001        2              1000.000       \n", 1, true), t)
  end)

  it("rejects rows that hardware cannot record", function()
    assert.has_error(function()
      prof.format({ cycle2us = 50, rows = { { block = 64, frame = 0, cycles = 1, count = 1 } } })
    end, "bad argument #1 to 'format' (rows[1].block must be an integer in [0, 64))")
    assert.has_error(function()
      prof.format({ cycle2us = 50, rows = { { block = 0, frame = 1024, cycles = 1, count = 1 } } })
    end, "bad argument #1 to 'format' (rows[1].frame must be an integer in [0, 1024))")
    assert.has_error(function()
      prof.format({ cycle2us = 50, rows = { { block = 0, frame = 1, cycles = 1, count = 1 },
        { block = 0, frame = 1, cycles = 2, count = 1 } } })
    end, "bad argument #1 to 'format' (rows[2] repeats block 0 frame 1)")
    assert.has_error(function() prof.format({ cycle2us = 0, rows = {} }) end,
      "bad argument #1 to 'format' (cycle2us must be > 0)")
    assert.has_error(function() prof.format(nil) end,
      "bad argument #1 to 'format' (table {cycle2us=, rows=} expected)")
  end)
end)

describe("prof.csv", function()
  it("writes the same rows as comma-separated values", function()
    local t = prof.csv({ cycle2us = 50, rows = {
      { block = 1, frame = 0, cycles = 500, count = 2 },
      { block = 0, frame = 2, cycles = 23456789, count = 4 },
      { block = 0, frame = 3, cycles = 9, count = 0 },
    } })
    assert.are.equal("BlockID,FrameID,Cycles,Count,AvgTime(us)\n"
      .. "0,2,23456789,4,117283.945\n1,0,500,2,5.000\n", t)
  end)
end)

describe("prof.perftest_csv", function()
  local head = "DataSize/B,Npus,Blocks,UBsize/KB,Bandwidth/GB/s (1000),Bandwidth/GiB/s (1024),"
    .. "CoreMaxTime/us"

  it("repeats SingleCoreTime/us once per block", function()
    local t = prof.perftest_csv({ { data_bytes = 1048576, npus = 2, blocks = 3, ub_kb = 190,
      core_us = { 10, 20, 40 } } })
    -- CoreMaxTime 40 us: 1048576 B / 40e-6 s = 26.2144e9 B/s = 24.4140625 GiB/s
    assert.are.equal(head .. ",SingleCoreTime/us,SingleCoreTime/us,SingleCoreTime/us\n"
      .. "1048576,2,3,190,26.214,24.414,40.000,10.000,20.000,40.000\n", t)
  end)

  it("pads rows with fewer blocks so every line has the same fields", function()
    local t = prof.perftest_csv({
      { data_bytes = 32768, npus = 8, blocks = 1, ub_kb = 16, core_us = { 2.5 } },
      { data_bytes = 65536, npus = 8, blocks = 2, ub_kb = 16, core_us = { 4, 3 } },
    })
    assert.are.equal(head .. ",SingleCoreTime/us,SingleCoreTime/us\n"
      .. "32768,8,1,16,13.107,12.207,2.500,2.500,\n"
      .. "65536,8,2,16,16.384,15.259,4.000,4.000,3.000\n", t)
  end)

  it("checks that each row lists one time per block", function()
    assert.has_error(function()
      prof.perftest_csv({ { data_bytes = 1, npus = 1, blocks = 2, ub_kb = 1, core_us = { 1 } } })
    end, "bad argument #1 to 'perftest_csv' (rows[1]: core_us must list one time per block (2))")
    assert.has_error(function()
      prof.perftest_csv({ { data_bytes = 1, npus = 1, blocks = 1, ub_kb = 1, core_us = { 0 } } })
    end, "bad argument #1 to 'perftest_csv' (rows[1]: core_us[1] must be > 0)")
    assert.has_error(function() prof.perftest_csv({}) end,
      "bad argument #1 to 'perftest_csv' (non-empty list of rows expected)")
  end)
end)
