-- A frame left open (issue 26, defect 2; doc/guard.md): an op whose blocks
-- return with a prof_start and no prof_end lost the whole run: the error
-- spoke of frame_report and the op's `unused` field, exit 3, nothing printed
-- (not even a checked run's reports). Now the run's output is whole, the frame
-- report says which frame was left open (PE, block, the line of its
-- prof_start), and the same line ends the run (exit 3) when no frame report
-- could be made.
local C = require("spec.helpers.cli")
local runner = require("shmemlab.runner")
local lab = require("shmemlab")

local OP = "spec/fixtures/ops/open_frame.lua"
local START = OP .. ":10"          -- the fixture's prof_start

describe("a frame left open", function()
  it("is named with its PE, block and prof_start line; the output and reports stay", function()
    local status, out, err = C.run({ OP, "--pes", "2", "--tool", "memcheck" })
    assert.equal(3, status)
    local named = "frames left open (a prof_start with no prof_end when the kernel returned; "
      .. "its time is not counted): frame 0 (copy_in/copy_out) on PE 0 block 0, prof_start at "
      .. START .. " (3 launches); frame 0 (copy_in/copy_out) on PE 1 block 0, prof_start at "
      .. START .. " (3 launches)"
    assert.truthy(err:find("operator open_frame: " .. named, 1, true), err)
    assert.falsy(err:find("frame_report", 1, true), err)
    assert.falsy(err:find("unused", 1, true), err)
    for _, kept in ipairs({ "====== open_frame: ERROR SUMMARY: 0 errors", "check shmemlab open_frame: "
      .. "0 wrong elements", "latency_us: ", "(no frame report: operator open_frame: " .. named,
      "verdict: " }) do
      assert.truthy(out:find(kept, 1, true), kept .. "\n" .. out)
    end
  end)

  it("a frame closed elsewhere: the report is made and names the blocks that left it open",
     function()
    local r = runner.run(OP, { pes = 2, close = "pe0", baseline = "none" }, true)
    assert.is_nil(runner.run_error(r))
    assert.truthy(r.frames.text:find("frames left open (a prof_start with no prof_end when the "
      .. "kernel returned; its time is not counted): frame 0 (copy_in/copy_out) on PE 1 block 0, "
      .. "prof_start at " .. START .. " (3 launches)\n", 1, true), r.frames.text)
    assert.equal(1, #r.shmem.open_frames)
  end)

  it("m:open_frames lists them by PE and block; a frame closed is not listed", function()
    local m = lab.machine{ pes = 2 }
    m:launch(function(k)
      k:prof_start(lab.frames.FINALIZE)
      if k.block == 0 then k:prof_end(lab.frames.FINALIZE) end
    end, 2)
    local rows = m:open_frames()
    assert.equal(2, #rows)
    assert.same({ 0, 1, 4, 1, 1 }, { rows[1].pe, rows[1].block, rows[1].frame, rows[1].depth,
                                      rows[1].launches })
    assert.same({ 1, 1 }, { rows[2].pe, rows[2].block })
    assert.truthy(rows[1].site:find("spec/open_frames_spec.lua:%d+$"), rows[1].site)
  end)
end)
