-- bench/par.lua (issue 25, part 5): its --tune part finds, at 8 PEs, a configuration of
-- allgather at least as good as the default (virtual times, exact); its sweep part prints
-- both walls and their ratio for outputs that are the same bytes. No wall-clock figure is
-- asserted.
local sh = require("spec.helpers.cli").sh

describe("bench/par.lua", function()
  it("--tune on allgather at 8 PEs finds one at least as good as the default", function()
    local out = sh("lua5.4 bench/par.lua tune 1 -- --count 65536 -w 1 -n 2")
    assert.equal("tune allgather at 8 PEs, count 65536 (exhaustive, 60 of 60 points): default "
      .. "kernel_us 11.827, best 11.523 (algo=flat block_dim=48 buffers=2 "
      .. "ub_bytes=16384), best/default 0.974\nexit=0\n", out)
  end)

  it("times the 8-size sweep serial and with -j 2, the outputs identical", function()
    local out = sh("lua5.4 bench/par.lua sweep 2 -- -w 0 -n 1")
    assert.matches("^sweep of 8 sizes %(lua run_op.lua allgather %-b 512K %-e 64M %-%-timing%-only "
      .. "%-w 0 %-n 1%): %-j 1 [%d.]+ s, %-j 2 [%d.]+ s, ratio [%d.]+ %(target <= 0.60%); "
      .. "outputs identical; CPU %(user %+ sys%) %-j 1 [%d.]+ s, %-j 2 [%d.]+ s: the machine gave "
      .. "[%d.]+ and [%d.]+ cores\nexit=0\n$", out)
  end)
end)
