-- HCCL MoE combine (emulated AIV orchestration), the hcomm AllToAllV code shape
-- with a reduce: the first launch clears the output (SyncAll before any atomic
-- add). Block b serves peer rank b: it copies this rank's expert outputs for
-- rank b of this launch's window into its HCCL buffer (CpGM2GM), records
-- "rows for b staged" (Record), waits until rank b has staged this rank's rows
-- (WaitNv1), then reads them from rank b's HCCL buffer and accumulates each
-- row, scaled by its weight (Muls), into its output token with atomic add on
-- the UB -> GM copy; then it post-syncs with rank b (Record + Wait). Block ==
-- rank accumulates its own rows. Expert outputs beyond the HCCL buffer take
-- one kernel launch per window of it.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local hccl = require("shmemlab.hccl")
local moe = require("shmemlab.moe")
local F = lab.frames

-- flag slots of a rank: b = "my rows for rank b are staged"; n + r = "rank r finished reading"
local function kernel(k, a)
  local rank, n, H, R, tag = k.pe, k.n_pes, a.hidden, a.routes, a.tag
  local ub = k:ub(a.dtype, a.ub_elems)
  local flag = hccl.flag_ub(k)
  if a.first then
    k:prof_start(F.COPY_IN)
    local first, cnt = op.share(k, R.tokens * H, a.esize)
    if cnt > 0 then moe.clear(k, a.output:sub(first, cnt), cnt, a.zeros, ub) end
    k:sync_all()                                             -- cleared before any atomic add
    k:prof_end(F.COPY_IN)
  end
  for b = k.block, n - 1, k.block_num do
    k:prof_start(F.COPY_IN)
    local cnt, x = moe.overlap(R.recv_off[rank][b], R.send[b][rank], a.lo, a.hi)
    if cnt > 0 then                                          -- CpGM2GM
      op.copy_gm(k, a.comm.buffer:sub((x - a.lo) * H, cnt * H), a.expert_out:sub(x * H, cnt * H),
                 cnt * H, ub)
    end
    k:pipe_barrier("ALL")
    k:prof_end(F.COPY_IN)
    if b ~= rank then
      hccl.record(k, a.comm, flag, rank, b, tag)             -- Record(tag): rows for b staged
      k:prof_start(F.SIGNAL_WAIT)
      hccl.wait_nv1(k, a.comm, flag, b, rank, tag)           -- WaitNv1(tag): b's rows for me
      k:prof_end(F.SIGNAL_WAIT)
      k:prof_start(F.REMOTE_PUT_GET)
      moe.accumulate(k, a, k:ptr(a.comm.buffer, b), b, ub)   -- Muls, atomic add into tokens
      k:pipe_barrier("ALL")
      k:prof_end(F.REMOTE_PUT_GET)
      k:prof_start(F.SIGNAL_WAIT)
      hccl.handshake(k, a.comm, flag, b, n, tag)             -- Record(b, tag) + Wait(b, tag)
      k:prof_end(F.SIGNAL_WAIT)
    else
      k:prof_start(F.FINALIZE)
      moe.accumulate(k, a, a.comm.buffer, rank, ub)
      k:pipe_barrier("ALL")
      k:prof_end(F.FINALIZE)
    end
  end
end

return op.define {
  name = "hccl_combine",
  collective = "combine",
  title = hccl.title("MoeCombine"),
  dtypes = { "fp16", "bf16" },
  unused = {
    [F.LOCAL_COMPUTE] = "the weights are applied inside the accumulating copies (Muls between "
      .. "the read and the atomic-add write): counted in remote_put_get and finalize",
  },

  describe = function(_, s)
    return moe.describe(s, "hcomm AIV AllToAllV with atomic-add reduce: one block per peer rank, "
                           .. "soft sync by flags", s.comm.elems, s.blocks)
  end,

  payload = moe.payload,
  deepep = moe.deepep_combine,

  setup = function(m, c)
    local s = moe.state(c, hccl.UB_BYTES)
    local R, H = s.routes, s.hidden
    moe.hccl_windows(m, c, s, R.max_recv)                    -- the expert-output rows held
    if s.ub_rows < 2 then moe.tile_tokens(s, 2) end          -- a row and its scaled copy
    s.route_table = moe.route_buffer(m, R)
    s.expert_out, s.expect = moe.expert_outputs(m, R, c.dtype, R.max_recv, c.seed)
    s.output = m:alloc(c.dtype, R.tokens * H, "output")
    s.zeros = m:alloc(c.dtype, math.min(R.tokens * H, s.ub_elems), "zeros"):fill("zero")
    return s
  end,

  run = function(m, _, s)                                   -- one launch per window
    return hccl.launch_windows(m, s, "hccl_combine", kernel)
  end,

  check = moe.check_combine,
}
