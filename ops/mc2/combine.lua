-- mc2 combine: the CANN ops-transformer MoE combine kernel ported as a
-- baseline, by its structure: MoeDistributeCombineV2 (mc2/moe_distribute_combine_v2,
-- the LL kernel of Ascend910_93), one kernel on every AIV core, two phases:
-- 1. ExpertAlltoAllDispatchCopyAdd: the rows this PE received (expand_x, the
--    mc2 dispatch layout) split evenly over the cores; each core loads its rows'
--    expand_idx (PE, token, k) and sends row by row, starting at a rotation by
--    its PE number: GM -> UB, UB -> the source PE's window at slot token * topk
--    + k, then a 32-byte status block to the source PE's status window at the
--    same index (one flag per row);
-- 2. LocalWindowCopy: the PE's own tokens split over the cores; per token the
--    core polls the topk status blocks until all are set, clears them, then
--    per k: the row window -> UB, Cast to fp32, Muls by the expert scale, Add;
--    Cast back and one write of the token.
-- Window and status window alternate halves from one launch to the next.
local lab = require("shmemlab")
local moe = require("shmemlab.moe")
local mc2 = require("shmemlab.mc2")
local F = lab.frames

-- 1. the core's received rows back to their source PEs, one status block each
local function send_back(k, a)
  local H, K, g = a.hidden, a.routes.topk, a.geo
  local first, cnt = mc2.split(#a.layout.rows[k.pe], k.block_num, k.block)
  if cnt == 0 then return end
  k:prof_start(F.COPY_IN)
  local idx = k:ub("int32", mc2.align(cnt * mc2.IDX, 8), "backed")
  k:data_copy_pad(idx:sub(0, cnt * mc2.IDX), a.idx:sub(first * mc2.IDX, cnt * mc2.IDX),
                  cnt * mc2.IDX)
  local st = k:ub("int32", mc2.STATE, "backed")
  k:duplicate(st, mc2.FLAG, mc2.STATE)
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  k:prof_end(F.COPY_IN)
  local rows = { [0] = k:ub(a.dtype, a.stride), [1] = k:ub(a.dtype, a.stride) }
  for l = 0, cnt - 1 do
    local j, b = (l + k.pe) % cnt, l % 2                      -- staggered start
    local p, t, kk = k:get_value(idx, j * 3), k:get_value(idx, j * 3 + 1),
                     k:get_value(idx, j * 3 + 2)
    k:prof_start(F.COPY_IN)
    if l >= 2 then k:wait_flag("MTE3_MTE2", b) end
    k:data_copy_pad(rows[b]:sub(0, H), a.x:sub((first + j) * H, H), H)
    k:set_flag("MTE2_MTE3", b); k:wait_flag("MTE2_MTE3", b)
    k:prof_end(F.COPY_IN)
    k:prof_start(F.REMOTE_PUT_GET)
    local at = t * K + kk
    k:data_copy_pad(k:ptr(a.win, p):sub(a.half_win + at * g.slot, H), rows[b]:sub(0, H), H)
    k:pipe_barrier("MTE3")
    k:data_copy(k:ptr(a.state, p):sub(a.half_state + at * mc2.STATE, mc2.STATE), st, mc2.STATE)
    k:set_flag("MTE3_MTE2", b)
    k:prof_end(F.REMOTE_PUT_GET)
  end
  for l = math.max(0, cnt - 2), cnt - 1 do k:wait_flag("MTE3_MTE2", l % 2) end
end

-- WaitDispatch: the token's topk status blocks all set, then cleared
local function wait_token(k, a, u, t)
  local K = a.routes.topk
  local base = a.half_state + t * K * mc2.STATE
  k:prof_start(F.SIGNAL_WAIT)
  for kk = 0, K - 1 do
    k:wait_signal_value(a.state:sub(base + kk * mc2.STATE, mc2.STATE), u.wait, mc2.STATE,
                        lab.CMP_EQ, mc2.FLAG)
  end
  k:set_flag("S_MTE3", 0); k:wait_flag("S_MTE3", 0)
  k:data_copy(a.state:sub(base, K * mc2.STATE), u.zero, K * mc2.STATE)
  k:data_copy_pad(a.dfx:sub(k.block, 1), u.wait:sub(0, 1), 1)    -- the DFX position word
  k:prof_end(F.SIGNAL_WAIT)
end

-- 2. the core's tokens: wait, weighted sum of the topk rows, one write each
local function combine_tokens(k, a)
  local H, K, T, g = a.hidden, a.routes.topk, a.routes.tokens, a.geo
  local first, n = mc2.split(T, k.block_num, k.block)
  if n == 0 then return end
  local Fs = moe.stride(H, 4)
  local u = { wait = k:ub("int32", mc2.STATE, "backed"), zero = k:ub("int32", K * mc2.STATE),
              sc = k:ub("fp32", mc2.align(T * K, 8), "backed"), row = k:ub(a.dtype, a.stride),
              f = k:ub("fp32", Fs), mul = k:ub("fp32", Fs), sum = k:ub("fp32", Fs),
              out = k:ub(a.dtype, a.stride) }
  k:prof_start(F.COPY_IN)
  k:duplicate(u.zero, 0, K * mc2.STATE)
  k:data_copy_pad(u.sc:sub(0, T * K), a.scales, T * K)
  k:set_flag("MTE2_S", 0); k:wait_flag("MTE2_S", 0)
  k:prof_end(F.COPY_IN)
  for t = first, first + n - 1 do
    wait_token(k, a, u, t)
    k:prof_start(F.LOCAL_COMPUTE)
    if t > first then k:set_flag("MTE3_V", 0); k:wait_flag("MTE3_V", 0) end
    k:duplicate(u.sum:sub(0, H), 0, H)
    for kk = 0, K - 1 do                                       -- ProcessMoeExpert
      local scale = k:get_value(u.sc, t * K + kk)
      if kk > 0 then k:set_flag("V_MTE2", 0); k:wait_flag("V_MTE2", 0) end
      k:data_copy_pad(u.row:sub(0, H), a.win:sub(a.half_win + (t * K + kk) * g.slot, H), H)
      k:set_flag("MTE2_V", 0); k:wait_flag("MTE2_V", 0)
      k:cast(u.f:sub(0, H), u.row:sub(0, H), H)
      k:pipe_barrier("V")
      k:muls(u.mul:sub(0, H), u.f:sub(0, H), scale, H)
      k:pipe_barrier("V")
      k:add(u.sum:sub(0, H), u.sum:sub(0, H), u.mul:sub(0, H), H)
    end
    k:pipe_barrier("V")
    k:cast(u.out:sub(0, H), u.sum:sub(0, H), H, "rint")
    k:set_flag("V_MTE3", 0); k:wait_flag("V_MTE3", 0)
    k:set_flag("V_MTE2", 0); k:wait_flag("V_MTE2", 0)
    k:prof_end(F.LOCAL_COMPUTE)
    k:prof_start(F.FINALIZE)
    k:data_copy_pad(a.output:sub(t * H, H), u.out:sub(0, H), H)
    k:prof_end(F.FINALIZE)
  end
end

local function kernel(k, a)
  send_back(k, a)
  combine_tokens(k, a)
end

return require("shmemlab.op").define {
  name = "mc2_combine",
  collective = "combine",
  title = "CANN mc2 MoeDistributeCombineV2 (ported)",
  dtypes = { "bf16", "fp16" },
  unused = {},

  describe = function(c, s)
    return moe.describe(s, "MoeDistributeCombineV2: each received row put back to its source "
      .. "PE's window slot (token, k) with a status block per row; per token poll topk flags, "
      .. "weighted sum in fp32, one write", s.hidden, c.cores)
  end,

  payload = moe.payload,
  deepep = moe.deepep_combine,

  setup = function(m, c)
    if mc2.is_a2(c) then
      error("mc2 combine: MoeDistributeCombineA2 (Ascend910B) is not ported yet", 0)
    end
    return mc2.combine_state(m, c)
  end,

  run = function(m, c, s)
    s.tag = s.tag + 1
    local h = s.tag % 2                                        -- the window half in use
    s.half_win, s.half_state = h * s.win_half, h * s.state_half
    return { m:launch({ name = "mc2_combine", kernel = kernel }, c.cores, s) }
  end,

  check = moe.check_combine,
}
