-- HCCL MoE dispatch (emulated AIV orchestration): a permute into the HCCL
-- buffer, then the hcomm AllToAllV code shape. Every block permutes its tokens'
-- rows of this launch's window into the rank's HCCL buffer grouped by
-- destination (the send order of shmemlab.moe), SyncAll; then block b serves
-- peer rank b: it records "rows for b staged" (Record), waits until rank b has
-- staged its rows for this rank (WaitNv1), copies them from rank b's HCCL buffer
-- into the receive buffer (CpGM2GM), then post-syncs with rank b (Record +
-- Wait); block == rank copies its own rows out. With more ranks than cores a
-- block serves ranks b, b + block_dim, ... Send orders longer than the HCCL
-- buffer take one kernel launch per window of it. dispatch_dtype "int8"
-- quantises in the permute (as MoeDistributeDispatch's dynamic quant) and
-- moves INT8 rows with their scales.
local lab = require("shmemlab")
local op = require("shmemlab.op")
local hccl = require("shmemlab.hccl")
local moe = require("shmemlab.moe")
local F = lab.frames

-- flag slots of a rank: b = "my rows for rank b are staged"; n + r = "rank r finished reading"
local function kernel(k, a)
  local rank, n, R, tag, W = k.pe, k.n_pes, a.routes, a.tag, a.wire.row
  local u = moe.dispatch_ub(k, a)
  local ub = u.stage
  local flag = hccl.flag_ub(k)
  k:prof_start(F.COPY_IN)
  moe.permute(k, a.comm.buffer, a.input, u, a.plan[rank][k.block], a.lo, a)
  k:sync_all()                                               -- the whole window is staged
  k:prof_end(F.COPY_IN)
  for b = k.block, n - 1, k.block_num do
    local cnt, x = moe.overlap(R.send_off[b][rank], R.send[b][rank], a.lo, a.hi)
    local slot = R.recv_off[rank][b] + (x - R.send_off[b][rank])
    if b ~= rank then
      hccl.record(k, a.comm, flag, rank, b, tag)             -- Record(tag): rows for b staged
      k:prof_start(F.SIGNAL_WAIT)
      hccl.wait_nv1(k, a.comm, flag, b, rank, tag)           -- WaitNv1(tag): b's rows for me
      k:prof_end(F.SIGNAL_WAIT)
      k:prof_start(F.REMOTE_PUT_GET)
      if cnt > 0 then                                        -- CpGM2GM
        op.copy_gm(k, a.recv:sub(slot * W, cnt * W),
                   k:ptr(a.comm.buffer, b):sub((x - a.lo) * W, cnt * W), cnt * W, ub)
      end
      k:pipe_barrier("ALL")
      k:prof_end(F.REMOTE_PUT_GET)
      k:prof_start(F.SIGNAL_WAIT)
      hccl.handshake(k, a.comm, flag, b, n, tag)             -- Record(b, tag) + Wait(b, tag)
      k:prof_end(F.SIGNAL_WAIT)
    else
      k:prof_start(F.FINALIZE)
      if cnt > 0 then
        op.copy_gm(k, a.recv:sub(slot * W, cnt * W), a.comm.buffer:sub((x - a.lo) * W, cnt * W),
                   cnt * W, ub)
      end
      k:pipe_barrier("ALL")
      k:prof_end(F.FINALIZE)
    end
  end
end

return op.define {
  name = "hccl_dispatch",
  collective = "dispatch",
  title = hccl.title("MoeDispatch"),
  dtypes = { "fp16", "bf16" },
  unused = {
    [F.LOCAL_COMPUTE] = "the permute's packing (and INT8 quantisation) in UB is counted in copy_in",
  },

  describe = function(_, s)
    return moe.describe(s, "permute into the HCCL buffer, hcomm AIV AllToAllV: one block per "
                           .. "peer rank, soft sync by flags", s.comm.elems, s.blocks)
  end,

  payload = moe.dispatch_payload,
  deepep = moe.deepep_dispatch,

  setup = function(m, c)
    local s = moe.state(c, hccl.UB_BYTES)
    local R, H = s.routes, s.hidden
    s.wire = moe.wire(c, s)                                  -- the rows' dtype on the wire
    moe.hccl_windows(m, c, s, R.tokens * R.topk)             -- every rank's send order
    s.tile_tokens = moe.dispatch_tile_tokens(s, R.topk)
    for _, w in ipairs(s.windows) do w.plan = moe.plan(R, s.blocks, s.tile_tokens, w.lo, w.hi) end
    s.route_table = moe.route_buffer(m, R)
    s.input = op.fill_input(m:alloc(c.dtype, R.tokens * H, "input"), c.dtype)
    s.recv = m:alloc(s.wire.dtype, R.max_recv * s.wire.row, "recv"):fill("zero")
    s.expect = moe.expect_dispatch(m, R, s.input, R.max_recv, s.wire)
    return s
  end,

  run = function(m, _, s)                                   -- one launch per window
    return hccl.launch_windows(m, s, "hccl_dispatch", kernel)
  end,

  check = moe.check_dispatch,
}
