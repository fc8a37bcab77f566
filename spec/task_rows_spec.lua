-- A machine's task rows stay bounded (issue 26, defect 8; doc/guard.md): every
-- launch added a row per PE to m:tasks for good, so 6000 launches of one
-- process grew the Lua heap from 0.8 to 13.1 MB. A machine keeps the last
-- lab.TASK_ROWS (256) rows per PE unless lab.machine{task_rows = N} says
-- otherwise (0 keeps all, as the runner's machines do for --output); its store
-- is a ring of that many rows, 6 values a row. Heap figures are
-- collectgarbage("count") after two full collections: a bound is compared,
-- never an exact value.
local lab = require("shmemlab")

local function heap_kib()
  collectgarbage("collect")
  collectgarbage("collect")
  return collectgarbage("count")
end

local function noop(k) k:my_pe() end

describe("task rows", function()
  -- measured at 768 and 3072 launches: the store holds 256 rows per PE at both
  it("a machine looped over 3072 launches keeps the last 256 rows per PE, its heap flat",
     function()
    local m = lab.machine{ pes = 8 }
    for _ = 1, 768 do m:launch(noop, 1) end
    local before = heap_kib()
    for _ = 1, 2304 do m:launch(noop, 1) end
    local grown = heap_kib() - before
    -- unbounded, 2304 launches x 8 PEs of rows (~250 B each) would be ~4.5 MiB
    assert.truthy(grown < 64, string.format("the heap grew by %.1f KiB", grown))
    local rows = m:tasks(3)
    assert.equal(256, #rows)
    assert.equal(3071 * 8 + 4, rows[#rows].task_id)       -- ids go on: PE 3 of the last launch
    assert.equal(rows[1].task_id + 255 * 8, rows[#rows].task_id)
    assert.truthy(#m:state().tasks[3] <= 256 * 6)            -- 6 values a row (m:tasks)
    m:close()
  end)

  it("task_rows = N keeps N, 0 keeps all; a bad value is refused", function()
    local m = lab.machine{ pes = 2, task_rows = 3 }
    for _ = 1, 10 do m:launch(noop, 1) end
    assert.same({ 15, 17, 19 }, { m:tasks(0)[1].task_id, m:tasks(0)[2].task_id,
                                  m:tasks(0)[3].task_id })
    local all = lab.machine{ pes = 2, task_rows = 0 }
    for _ = 1, 600 do all:launch(noop, 1) end
    assert.equal(600, #all:tasks(1))
    all:clear_tasks()
    assert.same({}, all:tasks(1))
    for _, bad in ipairs({ -1, 1.5, "10" }) do
      local ok, e = pcall(lab.machine, { pes = 1, task_rows = bad })
      assert.is_false(ok)
      assert.truthy(tostring(e):find("task_rows must be an integer >= 0", 1, true), tostring(e))
    end
  end)
end)
