-- DeepEP-Ascend normal-mode dispatch, a hybrid kept for comparison: the notify
-- sgl-kernel-npu's main branch ships on Ascend910_93 (notify_dispatch.h, the
-- port in ops/deepep/notify_hccl.lua), then the SHMEM data kernel of
-- ops/deepep/dispatch.lua (shmem_moe_dispatch_normal.h, pull request 328:
-- each row put straight into its expert's receive window) with put_offset from
-- the host layout (on the expert's rank it is expert_global_offset +
-- srcrank_in_expert_offset of that notify). main ships
-- cam_moe_dispatch_normal.h after this notify (ops/deepep/dispatch_hccl.lua);
-- this op shows what the SHMEM data path would take behind the same notify,
-- and it sends int8 rows (--dispatch-dtype int8), which that port does not.
local op = require("shmemlab.op")
local moe = require("shmemlab.moe")
local deepep = require("shmemlab.deepep")
local F = require("shmemlab").frames
local dir = (debug.getinfo(1, "S").source:match("^@(.*)[/\\][^/\\]*$") or ".")
local D = dofile(dir .. "/dispatch.lua")
local N = dofile(dir .. "/notify_hccl.lua")

return op.define {
  name = "deepep_dispatch_hybrid",
  baseline = "dispatch",
  collective = "dispatch",
  title = "DeepEP-Ascend normal dispatch: main's notify over the HCCL window, then the SHMEM "
    .. "data kernel",
  dtypes = { "bf16", "fp16" },
  unused = { [F.COPY_IN] = "this notify loads its tables inside its role cores' local compute" },

  describe = function(_, s)
    return deepep.describe(s, string.format("notify_dispatch.h (sgl-kernel-npu main: counts "
      .. "to each expert's rank through the HCCL window, magic flags, eight role cores), then "
      .. "the SHMEM data kernel with put_offset from the host layout; get_dispatch_layout at "
      .. "setup %.3f us, not timed here", s.layout_us), s.hidden)
  end,

  payload = moe.dispatch_payload,
  deepep = moe.deepep_dispatch,
  setup = function(m, c) return N.prepare(m, c) end,

  run = function(m, _, s)
    return { m:launch({ name = "notify_dispatch", kernel = N.kernel }, s.blocks, s),
             m:launch({ name = "shmem_moe_dispatch_normal", kernel = D.data_kernel }, s.blocks, s) }
  end,

  check = function(m, c, s)
    local wrong, at, pe, want, got = D.check(m, c, s)
    if wrong > 0 then return wrong, at, pe, want, got end
    return N.check_tables(m, c, s)
  end,
}
