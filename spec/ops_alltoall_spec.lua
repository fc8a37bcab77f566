-- ops/alltoall.lua and its baseline ops/hccl/alltoall.lua: every element lands
-- where it belongs on 2, 3, 8 and 16 PEs (16 = two servers over RDMA), in every
-- dtype, at 1 element, an odd size, beyond the HCCL buffer, beyond the
-- symmetric budget and beyond the UB; frames are present or explained; a
-- corrupted output is caught.
local H = require("spec.helpers.ops")

describe("alltoall", function()
  -- PE 5's slot 3 holds PE 3's shard 5; the input is iota over the machine
  local function want(pes, count) return 3 * (pes * count) + 5 * count + 7 end
  for _, case in ipairs(H.shard_cases("alltoall", true, want)) do it(case[1], case[2]) end
end)
