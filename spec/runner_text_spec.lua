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
