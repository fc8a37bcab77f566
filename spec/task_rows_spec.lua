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
  -- the store is a ring of task_rows rows (core/lshmemlab_machine.c): each
  -- bound below wraps it several times, memcpy rows among the launch rows
  it("the ring keeps the last N rows in order for N = 0, 1 and 4, memcpy rows among them",
     function()
    for _, cap in ipairs({ 0, 1, 4 }) do
      local m = lab.machine{ pes = 2, task_rows = cap }
      local h = m:host("int32", 4)
      local g = m:alloc("int32", 4)
      local want = {}
      for i = 1, 11 do
        m:launch(noop, 1)
        want[#want + 1] = "kernel"
        if i % 3 == 0 then m:memcpy(g:on(0), h); want[#want + 1] = "aclrtMemcpy" end
      end
      if cap > 0 then want = table.move(want, #want - cap + 1, #want, 1, {}) end
      local rows, names = m:tasks(0), {}
      for i, r in ipairs(rows) do
        names[i] = r.name
        assert.equal(1, r.stream_id)
        assert.truthy(r.stop_us >= r.start_us)
        if i > 1 then
          assert.truthy(r.task_id > rows[i - 1].task_id)
          assert.truthy(r.start_us >= rows[i - 1].start_us)
        end
      end
      assert.same(want, names, "task_rows = " .. cap)
      assert.equal(cap > 0 and cap or #want, #rows)
      assert.equal(m:state().task_id - 1, rows[#rows].task_id)  -- PE 0's row of the last launch
      m:close()
    end
  end)

  -- m:state() is the facade's table, open to a script: a task_rows written
  -- there after rows exist takes effect, as the trimmed store's did
  it("a task_rows changed after rows exist bounds the rows after it, in order", function()
    for _, c in ipairs({ { 4, 8 }, { 8, 3 }, { 0, 3 }, { 3, 0 }, { 3, 1 } }) do
      local m = lab.machine{ pes = 1, task_rows = c[1] }
      for _ = 1, 10 do m:launch(noop, 1) end
      m:state().task_rows = c[2]
      local function ids()
        local t = {}
        for i, r in ipairs(m:tasks(0)) do t[i] = r.task_id end
        return t
      end
      local kept = c[1] == 0 and 10 or c[1]
      local now = c[2] == 0 and kept or math.min(kept, c[2])
      local want = {}
      for id = 11 - now, 10 do want[#want + 1] = id end
      assert.same(want, ids(), c[1] .. " -> " .. c[2] .. " before its next row")
      for _ = 1, 12 do m:launch(noop, 1) end
      local after = {}
      for id = math.max(1, 22 - (c[2] == 0 and 22 - 10 + kept or c[2]) + 1), 22 do
        after[#after + 1] = id
      end
      assert.same(after, ids(), c[1] .. " -> " .. c[2] .. " after 12 rows")
      if c[2] > 0 then assert.truthy(#m:state().tasks[0] <= c[2] * 6) end
      m:close()
    end
  end)

  it("a failed launch adds no row and the ring goes on after it", function()
    local m = lab.machine{ pes = 2, task_rows = 3 }
    for _ = 1, 4 do m:launch(noop, 1) end
    assert.is_false(pcall(m.launch, m, function() error("boom") end, 1))
    for _ = 1, 2 do m:launch(noop, 1) end
    local ids = {}
    for i, r in ipairs(m:tasks(1)) do ids[i] = r.task_id; assert.equal("kernel", r.name) end
    assert.same({ 8, 10, 12 }, ids)
  end)
end)
