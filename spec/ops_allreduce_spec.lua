-- ops/allreduce.lua and its baseline ops/hccl/allreduce.lua through the runner:
-- every dtype, every reduction, 2/3/8/16 PEs (16 = two servers over RDMA), one
-- element, odd sizes, inputs beyond the UB, the HCCL buffer and the symmetric
-- budget; zero wrong elements and every frame used or explained. A subset of
-- the cross product that still covers every dimension (warm-up 1, iters 1); the
-- cases are the ones reduce_scatter has too (spec/helpers/ops.lua).

local H = require("spec.helpers.ops")

describe("allreduce", function()
  for _, case in ipairs(H.reduction_cases("allreduce")) do it(case[1], case[2]) end
end)
