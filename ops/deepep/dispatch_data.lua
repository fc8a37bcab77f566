-- The data kernel of DeepEP-Ascend's normal dispatch alone
-- (shmem_moe_dispatch_normal.h, one launch: ops/deepep/dispatch.lua's second),
-- for the EP the notify kernel cannot run: at 128 ranks its block blocks / 2
-- holds the n x experts counts and the n x 2n balance matrix, more than a
-- core's UB at any expert count (deepep.notify_ub_bytes), while this kernel's
-- UB plan (the n x experts offsets, two rows, its tables) fits. put_offset,
-- the one output of the notify this kernel reads, comes from the host layout
-- (deepep.layout, the same prefix the notify computes); get_dispatch_layout
-- runs at setup as in the dispatch. Its time is the dispatch's without the
-- notify's launch (a few percent of it at 4096 tokens per rank: run both at EP64
-- and compare).
local moe = require("shmemlab.moe")
local deepep = require("shmemlab.deepep")
local F = require("shmemlab").frames
local D = dofile((debug.getinfo(1, "S").source:match("^@(.*)[/\\][^/\\]*$") or ".")
                 .. "/dispatch.lua")                         -- the dispatch beside this file

return require("shmemlab.op").define {
  name = "deepep_dispatch_data",
  baseline = "dispatch",
  collective = "dispatch",
  title = "DeepEP-Ascend normal dispatch, the data kernel alone (put_offset from the host)",
  dtypes = { "bf16", "fp16" },
  unused = { [F.COPY_IN] = "the notify's ReloadRecvData is the dispatch's copy_in; the notify "
               .. "does not run here",
             [F.LOCAL_COMPUTE] = "the notify's table builds are the dispatch's local compute; the "
               .. "notify does not run here" },

  describe = function(_, s)
    return deepep.describe(s, string.format("the data kernel of the dispatch alone: one row "
      .. "per (token, k) into its expert's window, put_offset from the host layout (the notify "
      .. "kernel not run); get_dispatch_layout at setup %.3f us, not timed here", s.layout_us),
      s.hidden)
  end,

  payload = moe.dispatch_payload,
  deepep = moe.deepep_dispatch,
  setup = function(m, c) return D.prepare(m, c, false) end,
  run = function(m, _, s)
    return { m:launch({ name = "shmem_moe_dispatch_normal", kernel = D.data_kernel }, s.blocks, s) }
  end,
  check = D.check,
}
