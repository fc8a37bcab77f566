-- runner.text reads a result and leaves it as it was (it used to pass the
-- iteration count to its helpers by writing r.shmem.iters_div).
local runner = require("shmemlab.runner")

describe("runner.text", function()
  it("prints launches per measured iteration without writing into the result", function()
    local r = runner.run("allreduce", { pes = 2, warmup = 0, iters = 3, count = 256 })
    local keys = {}
    for _, res in ipairs({ r.shmem, r.baseline }) do
      local n = 0
      for _ in pairs(res) do n = n + 1 end
      keys[#keys + 1] = n
    end
    local text = runner.text(r)
    assert.matches("; 1 launches per measured iteration\n", text, 1, true)
    for i, res in ipairs({ r.shmem, r.baseline }) do
      local n = 0
      for _ in pairs(res) do n = n + 1 end
      assert.equal(keys[i], n)
      assert.is_nil(res.iters_div)
    end
  end)
end)

-- the numbers of a frame table's lines: {[id] = {fields...}} (whitespace-split)
local function table_after(text, head)
  local at = assert(text:find(head, 1, true), head)
  local rows, n = {}, 0
  for line in text:sub(at):gmatch("([^\n]*)\n") do
    n = n + 1
    if n > 2 and line == "" then break end
    local f = {}
    for w in line:gmatch("%S+") do f[#f + 1] = w end
    if n > 2 and f[1] and (f[1]:match("^%d+$") or f[1] == "e2e") then rows[f[1]] = f end
  end
  return rows, at
end

describe("runner.text's frame comparison", function()
  for _, name in ipairs({ "allgather", "allreduce", "alltoall", "broadcast", "reduce_scatter",
                          "p2p", "dispatch", "combine" }) do
    it(name .. ": follows the two frame reports and repeats their numbers", function()
      local opts = { pes = 4, warmup = 0, iters = 1, timing_only = true }
      if name == "dispatch" or name == "combine" then opts.local_tokens, opts.hidden = 16, 256
      else opts.count = 4096 end
      local r = runner.run(name, opts)
      local text = runner.text(r)
      local op, a = table_after(text, "frames (all PEs, measured launches):\n")
      local base, b = table_after(text, "frames of ")
      local cmp, c = table_after(text, "frames, op against baseline:\n")
      assert.is_true(a < b and b < c)
      local e2e = {}
      for i, t in ipairs({ text:sub(a, b), text:sub(b, c) }) do
        e2e[i] = t:match("e2e_us=([%d.]+) per launch")
      end
      local n = 0
      for id, f in pairs(cmp) do                  -- id, name (e2e: two words), 5 numbers
        n = n + 1
        local k = #f - 4                          -- op_max_core_us
        if id == "e2e" then
          assert.are.same({ e2e[1], e2e[2] }, { f[k], f[k + 2] })
        else
          assert.are.same({ op[id][6], op[id][7] }, { f[k], f[k + 1] })
          assert.are.same({ base[id][6], base[id][7] }, { f[k + 2], f[k + 3] })
        end
        local function us(v) return v == "-" and 0 or tonumber(v) end
        assert.are.equal(string.format("%.3f", us(f[k]) - us(f[k + 2])), f[k + 4])
      end
      assert.are.equal(6, n)                       -- five kinds and e2e
    end)
  end
end)
