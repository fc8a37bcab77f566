-- bench/peers/floor.c, the copy floor beside shmemlab and SMPI: the same
-- collectives as plain copies, split over threads, land exactly what the MPI
-- program's check expects, at sizes the threads do not divide evenly.
local sh = require("spec.helpers.cli").sh    -- a shell command's output and exit line

describe("bench/peers copy floor", function()
  local bin = os.tmpname()

  setup(function()
    local out = sh(string.format("%s -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra "
                                 .. "-Werror -o %s bench/peers/floor.c -lpthread",
                                 os.getenv("CC") or "cc", bin))
    assert.truthy(out:find("exit=0", 1, true), out)
  end)

  teardown(function() os.remove(bin) end)

  it("lands every collective right on 1, 2 and 3 threads", function()
    for _, op in ipairs({ "allgather", "alltoall", "allreduce" }) do
      for _, t in ipairs({ 1, 2, 3 }) do
        for _, bytes in ipairs({ 4, 4 * 1001 }) do
          local out = sh(string.format("%s %s %d 3 5 %d", bin, op, bytes, t))
          local th, s, cpu, wrong = out:match("^floor op=" .. op .. " bytes=" .. bytes
            .. " iters=3 threads=(%d+) copy_s=([%d.]+) cpu_s=([%d.]+) wrong=(%d+)\n")
          assert.equal(tostring(t), th, out)
          assert.truthy(tonumber(s) >= 0 and tonumber(cpu) >= 0, out)
          assert.equal("0", wrong, out)
          assert.truthy(out:find("exit=0", 1, true), out)
        end
      end
    end
  end)

  it("refuses a bad command line", function()
    local out = sh(bin .. " allgather 4096 3 8 0")
    assert.truthy(out:find("usage: floor", 1, true), out)
    assert.truthy(out:find("exit=2", 1, true), out)
  end)
end)
