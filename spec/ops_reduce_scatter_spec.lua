-- ops/reduce_scatter.lua and its baseline ops/hccl/reduce_scatter.lua through
-- the runner: every dtype, every reduction, 2/3/8/16 PEs (16 = two servers over
-- RDMA), one element per shard, odd sizes, pieces beyond the UB, inputs beyond
-- the HCCL buffer and outputs beyond the symmetric budget; zero wrong elements
-- and every frame used or explained. A subset of the cross product that still
-- covers every dimension (warm-up 1, iters 1); the cases are the ones allreduce
-- has too (spec/helpers/ops.lua), with n_pes shards of input per PE.

local H = require("spec.helpers.ops")

describe("reduce_scatter", function()
  for _, case in ipairs(H.reduction_cases("reduce_scatter", true)) do it(case[1], case[2]) end
end)
