-- shmemlab.op: what an operator file is, and the plumbing operator files share
-- (so that an operator reads as a page of orchestration with named frames).
--
-- An operator file returns op.define{...} with:
--   name        the name run_op.lua takes ("allgather")
--   collective  the metrics name (bus factor, payload): allgather, allreduce, ...
--   dtypes      the dtypes it supports (first = default)
--   defaults    its own defaults for the run configuration (count, block_dim, ...)
--   unused      {[frame id] = "why this op has no such phase"} for every frame
--               kind it does not use
--   describe(c, s) -> {algorithm =, chunk_elems =, ub_bytes =, cores =}: what the run's
--               line prints ("algorithm: A; chunk N elements, UB B B, C cores per PE"),
--               called after the measured launches with the state setup returned. All
--               four are required: algorithm a string, chunk_elems, ub_bytes (the UB
--               bytes a block stages through) and cores integers >= 0; a table without
--               one of them is an error naming the op and the field (runner.describe)
--   payload(c)  -> the numbers metrics.payload_bytes needs
--   setup(m, c) -> state: buffers and deterministic inputs
--   run(m, c, s) -> one whole operation (one or more launches, see op.launch)
--   check(m, c, s) -> wrong [, index, pe, expected, actual]  (reference in C)
--   active_pes(c) (optional) -> the PEs that take part (p2p); metrics use them only
--   title       (optional) the name a report gives it (HCCL baselines: hccl.title)
--   tune        (optional) the op's tunable parameters, what --tune searches
--               (shmemlab.tune): { knobs = {knob, ...}, constraints = {constraint, ...} },
--               a knob { name = a key of the configuration c (an option such as block_dim,
--               ub_bytes, mode, or a key of the op's defaults), values = {v, ...} or range =
--               {lo, hi, "xF" | "+S"}, default = the value when c has none (a value or
--               function(c) -> value; else c[name]), doc = one line }; a constraint
--               { why = what it requires, ok = function(c) -> true when the configuration c
--               (the knobs' values in place) satisfies it }: the search skips the
--               configurations it refuses, and a run with such a configuration is a usage
--               error naming why (runner.config)
--   baseline    (optional) the baseline run_op.lua measures beside it: a name in the
--               folder of --baseline's family, ops/hccl/ by default ("broadcast"), or a
--               path to an op file; without it ops/<family>/<name>.lua, and outside
--               ops/hccl/ then ops/<family>/<collective>.lua (runner.baseline_path).
--               When that file does not exist the run has no
--               baseline, and the configuration line says so ("baseline none (no
--               ...)"); the verdict then uses the no-baseline rule (doc/metrics.md)
--
-- The configuration c that describe, payload, setup, run, check and active_pes
-- receive (runner.config: built-in defaults < the op's defaults < the user's
-- options; read it, never write it):
--   count       elements per PE (the op's payload unit; shape[1] * shape[2] when
--               shape is given)               shape  {M [, N]} or nil (--shape)
--   dtype       one of the op's dtypes (the first unless --dtype)
--   pes         PEs of the machine (--pes)    soc    SoC profile name (--soc)
--   block_dim   AIV blocks per PE, at most cores (--block-dim, default 16)
--   cores       AIV cores per PE of the profile (after --set overrides)
--   ub_bytes    the UB budget a block stages through (--ub-bytes, 190 KiB)
--   sym_bytes   the symmetric heap the op may use (--sym-bytes, half the heap)
--   root        the root PE of rooted collectives (--root, 0)
--   reduce      "sum" | "max" | "min" for reductions (--reduce; op.atomic checks it). No
--               built-in default: nil unless --reduce or the op's own defaults give it,
--               so an op that reduces sets defaults = { reduce = "sum" } (ops/allreduce.lua)
--               and op.atomic(name, nil) raises "unknown reduce 'nil'"
--   src_pe, dst_pe, mode   p2p: the sender, receiver and "put" | "get" (--src, --dst, --mode)
--   local_tokens, hidden, topk, experts, routing, routes_file, dispatch_dtype,
--   seed, zipf_s, sigma    MoE dispatch/combine (--tokens, --hidden, ...; shmemlab.moe)
--   warmup, iters          launches before and during the measurement (10, 40)
--   prof_pe     the cycle-profiled PE (--prof-pe, 0)
--   check       the check mode of a checked run, or nil (--check)
--   baseline    "hccl" | "deepep" | "mc2" | "none" (--baseline; resolved: MoE ops
--               default to the shipping kernels of moe_mode)
--   moe_mode    MoE ops: "normal" | "ll" (--moe-mode; resolved from the tokens)
--               trace  record the last launch
--   overrides   {profile field = value} from --set; profile  the SoC profile table in force
--
-- The helpers below are what several operators share: ready-made fields
-- (op.DTYPES, op.shard_payload, op.check_output, ...), setup sizing (op.state,
-- op.fit_ub, op.plan_rounds), op.launch, the kernel copies (op.copy_gm,
-- op.share, op.split, op.atomic_scatter) and the host-side references (op.allreduce_expect, ...).
local lab = require("shmemlab")
local F = lab.frames

local op = {}

local ATOMIC = { sum = "add", max = "max", min = "min" }

-- the kernel copies below call sub() as a local (v:sub would look it up through
-- the view's __index, a C call, each time) and know each dtype's size by name
local sub = lab.core.view_methods.sub
local ESIZE = setmetatable({}, { __index = function(t, dtype)
  t[dtype] = lab.core.dtype_size(dtype)
  return t[dtype]
end })

-- every dtype an operator can run on, int32 first (the default)
op.DTYPES = { "int32", "int8", "int16", "int64", "uint8", "fp16", "bf16", "fp32", "uint16",
              "uint32", "uint64" }

local required = { "name", "collective", "dtypes", "unused", "describe", "payload",
                   "setup", "run", "check" }

-- a define error about the tune field of operator t
local function tune_error(t, fmt, ...)
  error(string.format("operator '%s': tune: " .. fmt, tostring(t.name), ...), 4)
end

-- the tune field of an operator checked: knobs with a name and values or a range (each
-- once), constraints with a reason and a function
local function check_tune(t)
  local tune = t.tune
  if type(tune) ~= "table" or type(tune.knobs) ~= "table" or #tune.knobs == 0 then
    tune_error(t, "needs knobs = {{name =, values = | range =}, ...}")
  end
  local seen = {}
  for i, k in ipairs(tune.knobs) do
    if type(k) ~= "table" or type(k.name) ~= "string" or not k.name:match("^[%a_][%w_]*$") then
      tune_error(t, "knob %d needs a name (a configuration key)", i)
    end
    if seen[k.name] then tune_error(t, "knob '%s' is declared twice", k.name) end
    seen[k.name] = true
    local ok, why = op.knob_values(k)
    if not ok then tune_error(t, "knob '%s': %s", k.name, why) end
  end
  for i, con in ipairs(tune.constraints or {}) do
    if type(con) ~= "table" or type(con.why) ~= "string" or con.why == ""
       or type(con.ok) ~= "function" then
      tune_error(t, "constraint %d needs why = 'what it requires' and ok = function(c)", i)
    end
  end
end

-- the values of a tune knob (a list, or a range {lo, hi, "xF" | "+S"} expanded: lo,
-- lo*F or lo+S, ... up to hi), or nil and why not
function op.knob_values(k)
  if k.values ~= nil then
    if type(k.values) ~= "table" or #k.values == 0 then return nil, "values must be a non-empty list" end
    for _, v in ipairs(k.values) do
      local kind = math.type(v) == "integer" and "int" or type(v)
      if kind ~= "int" and kind ~= "string" and kind ~= "boolean" then
        return nil, "values must be integers, strings or booleans"
      end
    end
    return k.values
  end
  local r = k.range
  local lo, hi, step = r and r[1], r and r[2], r and r[3]
  local kind, by = tostring(step):match("^([x+])(%d+)$")
  by = math.tointeger(tonumber(by))
  if math.type(lo) ~= "integer" or math.type(hi) ~= "integer" or lo > hi or not kind
     or (kind == "x" and (by < 2 or lo < 1)) or (kind == "+" and by < 1) then
    return nil, "needs values = {...} or range = {lo, hi, 'xF' (F >= 2, lo >= 1) | '+S'}"
  end
  local list, v = {}, lo
  while v <= hi do
    list[#list + 1] = v
    v = kind == "x" and v * by or v + by
  end
  return list
end

-- validate an operator table and give it its defaults
function op.define(t)
  if type(t) ~= "table" then
    error("bad argument #1 to 'define' (operator table expected)", 2)
  end
  for _, f in ipairs(required) do
    if t[f] == nil then
      error("operator '" .. tostring(t.name) .. "' has no field '" .. f .. "'", 2)
    end
  end
  for id, reason in pairs(t.unused) do
    if lab.frames.names[id] == nil or type(reason) ~= "string" or reason == "" then
      error("operator '" .. t.name .. "': unused frame " .. tostring(id)
            .. " needs a frame id and a reason", 2)
    end
  end
  t.defaults = t.defaults or {}
  if t.tune ~= nil then check_tune(t) end
  return t
end

-- the launch results of one operation, summed: kernel_us per PE, e2e_us
function op.total(results, n_pes)
  local kernel, e2e = {}, 0
  for pe = 1, n_pes do kernel[pe] = 0 end
  for _, r in ipairs(results) do
    for pe = 1, n_pes do kernel[pe] = kernel[pe] + r.kernel_us[pe] end
    e2e = e2e + r.e2e_us
  end
  return { kernel_us = kernel, e2e_us = e2e, launches = #results }
end

-- elements per block-slice of n elements split over blocks, rounded up to
-- whole 32-byte blocks
function op.split(n, blocks, esize)
  local per32 = 32 // esize
  local per = (n + blocks - 1) // blocks
  return ((per + per32 - 1) // per32) * per32
end

-- the (destination PE, part) of work item `item` of block k's PE: the
-- destinations rotate with the PE, so that at each step every PE sends to a
-- different one (no incast on one PE's links or NIC)
function op.item(k, item)
  return (k.pe + item) % k.n_pes, item // k.n_pes
end

-- a double-buffered transfer of count elements of src to dst, to (put) or
-- from (get) PE pe: the UB tensor ub is split in two halves (event ids 0 and
-- 1) and the chunks alternate, so the MTE2 read of one chunk overlaps the
-- MTE3 write of the one before (mte_put_nbi / mte_get_nbi alone wait for each
-- chunk's write to land before reading the next); returns with the last
-- writes in flight. bufs = 1 (the tune knob buffers): one buffer of the whole UB, each
-- read waiting for the write before it
-- (the reference form, one call per primitive: spec/engine_pipeflow_spec.lua
-- compares it with k:mte_get_pipelined / mte_put_pipelined, which issue the same
-- primitives from C)
function op.pipelined_chunked(k, get, dst, src, ub, count, pe, bufs)
  bufs = bufs or 2
  local half = #ub // bufs
  local bytes = half * ESIZE[ub.dtype]
  local move = get and k.mte_get_nbi or k.mte_put_nbi
  local done, c = 0, 0
  while done < count do
    local h, n = c % bufs, count - done
    if n > half then n = half end
    if c >= bufs then k:wait_flag("MTE3_MTE2", h) end  -- that half was written out
    move(k, sub(dst, done, n), sub(src, done, n), sub(ub, h * half, half), bytes, n, pe, h)
    k:set_flag("MTE3_MTE2", h)
    done, c = done + n, c + 1
  end
  for h = 0, math.min(c, bufs) - 1 do k:wait_flag("MTE3_MTE2", (c - 1 - h) % bufs) end
end

-- double-buffered (bufs, default 2) put of count elements of src to PE pe's dst (see
-- pipelined)
function op.put_pipelined(k, dst, src, ub, count, pe, bufs)
  if count > 0 then k:mte_put_pipelined(dst, src, ub, count, pe, bufs) end
end

-- double-buffered (bufs, default 2) get of count elements of PE pe's src to dst (see
-- pipelined)
function op.get_pipelined(k, dst, src, ub, count, pe, bufs)
  if count > 0 then k:mte_get_pipelined(dst, src, ub, count, pe, bufs) end
end

-- the reduce-scatter phase of reduce_scatter and allreduce: with the MTE atomic
-- unit on (a.atomic), each of the block's (owner p, part j) items puts n
-- elements of a.input at src_off to p's symmetric accumulator a.acc at acc_off
-- (the reduction happens on the UB->GM copy) and adds 1 to signal(j) on p,
-- where piece(p, j) -> acc_off, src_off, n (n = 0: the signal alone)
function op.atomic_scatter(k, a, ub, piece, signal)
  k:prof_start(F.REMOTE_PUT_GET)
  k:set_atomic(a.atomic, a.dtype)
  for item = k.block, k.n_pes * a.parts - 1, k.block_num do
    local p, j = op.item(k, item)
    local at, src_off, n = piece(p, j)
    if n > 0 then
      op.put_pipelined(k, sub(a.acc, at, n), sub(a.input, src_off, n), ub, n, p, a.buffers)
      k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)     -- the piece has landed
    end
    k:signal_op(signal(j), 1, lab.SIGNAL_ADD, p)
  end
  k:set_atomic_none()
  k:prof_end(F.REMOTE_PUT_GET)
end

-- pull designs: make this PE's elements [base, base + len) of each of the
-- `shards` shards of src (shard j at j * a.count) readable, then announce them
-- to every PE with a SIGNAL_SET of gen on a.ready[me]. Direct (src symmetric,
-- a.staged false): nothing to copy. Staged: the blocks copy their shares into
-- the symmetric a.stage (shard j at j * a.chunk) and meet in sync_all first
function op.publish(k, a, src, shards, base, len, gen, ub)
  if a.staged then
    k:prof_start(F.COPY_IN)
    local first, n = op.share(k, len, a.esize)
    for j = 0, shards - 1 do
      if n > 0 then
        op.copy_gm(k, sub(a.stage, j * a.chunk + first, n), sub(src, j * a.count + base + first, n),
                   n, ub)
        k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
      end
    end
    k:sync_all()                                    -- the whole chunk has landed
    k:prof_end(F.COPY_IN)
  end
  k:prof_start(F.SIGNAL_WAIT)
  for p = k.block, k.n_pes - 1, k.block_num do
    k:signal_op(sub(a.ready, k.pe, 1), gen, lab.SIGNAL_SET, p)
  end
  k:prof_end(F.SIGNAL_WAIT)
end

-- pull designs: the symmetric source of every PE's shards (the input itself
-- when `bytes` fit the symmetric budget, else a staging window the op runs
-- through in rounds): sets s.staged, s.chunk, s.rounds, s.stride, s.stage,
-- s.ready
function op.plan_pull(m, c, s, shards, input)
  local fits = shards * c.count * s.esize <= c.sym_bytes
  op.plan_rounds(c, s, fits and c.count or math.max(1, op.fit(c.sym_bytes // shards, s.esize)))
  s.staged = s.rounds > 1 or not fits
  s.stride = s.staged and s.chunk or c.count
  s.stage = s.staged and m:malloc(c.dtype, s.chunk * shards, "stage") or input
  s.ready = m:malloc("int32", c.pes, "ready", "backed")       -- [p]: PE p's chunk is readable
  return s
end

-- CpGM2GM: copy count elements GM -> GM through the UB tensor ub in chunks
-- (DataCopy when the chunk is whole 32-byte blocks, DataCopyPad otherwise)
function op.copy_gm(k, dst, src, count, ub)
  local chunk = #ub
  local done = 0
  local bytes = ESIZE[ub.dtype]
  while done < count do
    local n = count - done
    if n > chunk then n = chunk end
    local copy = (n * bytes) % 32 == 0 and k.data_copy or k.data_copy_pad
    copy(k, ub, sub(src, done, n), n)
    k:set_flag("MTE2_MTE3", 0); k:wait_flag("MTE2_MTE3", 0)
    copy(k, sub(dst, done, n), ub, n)
    done = done + n
    if done < count then k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0) end
  end
end

-- the block's share [first, first + n) of count elements split over the blocks
function op.share(k, count, esize)
  local per = op.split(count, k.block_num, esize)
  local first = k.block * per
  if first >= count then return first, 0 end
  return first, math.min(per, count - first)
end

-- fill an input with an integer-exact pattern that differs per PE and per
-- element: iota over the whole machine for integers and fp32, seeded random
-- integers in a range the type holds exactly for fp16/bf16
function op.fill_input(buf, dtype, seed)
  if dtype == "fp16" then
    buf:fill("random", -1024, 1024, seed or 1)
  elseif dtype == "bf16" then
    buf:fill("random", -128, 128, seed or 1)
  else
    buf:fill("iota_pe")
  end
  return buf
end

-- fill an input of a reduction: small integers whose sums over the PEs stay
-- exact in every dtype (|sum| <= 8 * n_pes; int8 sums wrap, as they would)
function op.fill_reduce_input(buf, seed)
  return buf:fill("random", -8, 8, seed or 1)
end

-- elements of a symmetric staging buffer that fit in bytes, rounded down to
-- whole 32-byte blocks (at least one block)
function op.fit(bytes, esize)
  local per32 = 32 // esize
  return math.max(per32, (bytes // esize) // per32 * per32)
end

------------------------------------------------------------------------------
-- fields of op.define

-- payload (metrics.payload_bytes) of n_pes shards of c.count elements each
function op.shard_payload(c)
  return { n_pes = c.pes, shard_elems = c.count, dtype_size = lab.core.dtype_size(c.dtype) }
end

-- payload (metrics.payload_bytes) of c.count elements
function op.elems_payload(c)
  return { elems = c.count, dtype_size = lab.core.dtype_size(c.dtype) }
end

-- check: s.output (on every PE) against the reference s.expect
function op.check_output(_, _, s)
  return s.output:compare(s.expect)
end

-- check: s.output on PE s.dst (the receiver of a p2p) against s.expect
function op.check_dst_output(_, _, s)
  return s.output:on(s.dst):compare(s.expect)
end

-- active_pes of a p2p: src and dst (the others launch and idle: their kernel
-- time says nothing about the transfer)
function op.src_dst_pes(c)
  return { c.src_pe or 0, c.dst_pe or 1 }
end

------------------------------------------------------------------------------
-- tune (op.define's tune field): the knobs the built-in operators share

-- AIV blocks per PE
op.KNOB_BLOCK_DIM = { name = "block_dim", values = { 4, 8, 16, 24, 32, 48 },
                      doc = "AIV blocks per PE (--block-dim)" }
-- the UB a block stages through: the chunk of each copy
op.KNOB_UB_BYTES = { name = "ub_bytes", values = { 16384, 32768, 65536, 131072, 194560 },
                     doc = "UB bytes a block stages through, the chunk of each copy (--ub-bytes)" }
-- single or double buffering of the pipelined copies (op.put_pipelined, op.get_pipelined)
op.KNOB_BUFFERS = { name = "buffers", values = { 1, 2 }, default = 2,
                    doc = "1: one UB buffer, each read waits for the write before it; 2: two "
                      .. "halves, a read overlaps the write before it" }

-- the constraints every op with the shared knobs has
op.TUNE_CONSTRAINTS = {
  { why = "block_dim within the SoC's AIV cores per PE",
    ok = function(c) return c.block_dim <= c.cores end },
  { why = "ub_bytes within the core's UB (the profile's ub_bytes)",
    ok = function(c) return c.ub_bytes <= c.profile.ub_bytes end },
  { why = "buffers 1 (single) or 2 (double), each buffer at least one 32-byte block",
    ok = function(c)
      local b = c.buffers or 2
      return (b == 1 or b == 2) and c.ub_bytes // b >= 32
    end },
}

-- a tune field: the knobs named (op.KNOB_* tables or the op's own), the shared
-- constraints and the op's own ones (extra)
function op.tune(knobs, extra)
  local cons = {}
  for _, con in ipairs(op.TUNE_CONSTRAINTS) do cons[#cons + 1] = con end
  for _, con in ipairs(extra or {}) do cons[#cons + 1] = con end
  return { knobs = knobs, constraints = cons }
end

------------------------------------------------------------------------------
-- setup

-- the state an operator's setup starts from: t (default {}) with dtype, count, esize
function op.state(c, t)
  t = t or {}
  t.dtype, t.count, t.esize = c.dtype, c.count, lab.core.dtype_size(c.dtype)
  t.buffers = c.buffers                 -- the tune knob (nil: double-buffered)
  return t
end

-- a PE-number option: pe, or an error naming what ("root", "p2p src_pe") and the PEs
function op.pe_option(pe, what, n_pes)
  if math.type(pe) ~= "integer" or pe < 0 or pe >= n_pes then
    error(string.format("%s %s is not a PE of this machine (0..%d)", what, tostring(pe),
                        n_pes - 1), 0)
  end
  return pe
end

-- the PEs of a p2p: c.src_pe (default 0) and c.dst_pe (default 1), checked
function op.p2p_pes(c)
  local src = op.pe_option(c.src_pe or 0, "p2p src_pe", c.pes)
  local dst = op.pe_option(c.dst_pe or 1, "p2p dst_pe", c.pes)
  return src, dst
end

-- the atomic unit's operation of a reduction (sum -> add), or an error naming the op
function op.atomic(name, reduce)
  local atomic = ATOMIC[reduce]
  if not atomic then
    error(string.format("%s: unknown reduce '%s' (sum, max or min)", name, tostring(reduce)), 0)
  end
  return atomic
end

-- the identity of a reduction, as a fill("const") value (fills saturate)
function op.identity(dtype, reduce)
  if reduce == "sum" then return 0 end
  local lo = { int8 = -128, int16 = -32768, int32 = -2 ^ 31, int64 = -2 ^ 63, uint8 = 0 }
  local hi = { int8 = 127, int16 = 32767, int32 = 2 ^ 31 - 1, int64 = 2 ^ 63, uint8 = 255 }
  if reduce == "max" then return lo[dtype] or -math.huge end
  return hi[dtype] or math.huge
end

-- the UB a block stages through: s.ub_elems of c.ub_bytes (at most cap), s.ub_bytes
function op.fit_ub(c, s, cap)
  s.ub_elems = op.fit(cap and math.min(c.ub_bytes, cap) or c.ub_bytes, s.esize)
  s.ub_bytes = s.ub_elems * s.esize
  return s
end

-- the rounds of c.count elements through a staging of elems: s.chunk, s.rounds
function op.plan_rounds(c, s, elems)
  s.chunk = math.min(c.count, elems)
  s.rounds = (c.count + s.chunk - 1) // s.chunk
  return s
end

------------------------------------------------------------------------------
-- run

-- one launch of kernel on c.block_dim blocks per PE, named name in the task
-- list: the results of one operation ({result})
function op.launch(m, c, s, name, kernel)
  return { m:launch({ name = name, kernel = kernel }, c.block_dim, s) }
end

------------------------------------------------------------------------------
-- host-side references (untimed, in C through view:copy)

-- want = the reduction (atomic "add" | "max" | "min") of part(q) over the PEs q
local function reduce_into(want, atomic, n_pes, part)
  if atomic == "add" then want:fill("zero") else want:copy(part(0)) end
  for q = atomic == "add" and 0 or 1, n_pes - 1 do
    want:copy(part(q), atomic)
  end
  return want
end

-- allreduce: the reduction of every PE's input (a host buffer)
function op.allreduce_expect(m, c, input, atomic)
  return reduce_into(m:host(c.dtype, c.count, "expect"), atomic, c.pes,
                     function(q) return input:on(q) end)
end

-- reduce_scatter: PE p's = the reduction of slice p of every PE's input (GM,
-- built on the host per PE)
function op.reduce_scatter_expect(m, c, input, atomic)
  local expect = m:alloc(c.dtype, c.count, "expect")
  if m:timing_only() then return expect end   -- no bytes: pes^2 no-op copies
  for p = 0, c.pes - 1 do
    reduce_into(expect:on(p), atomic, c.pes,
                function(q) return input:on(q):sub(p * c.count, c.count) end)
  end
  return expect
end

-- allgather: PE p's input at p * count (a host buffer)
function op.allgather_expect(m, c, input)
  local expect = m:host(c.dtype, c.count * c.pes, "expect")
  for p = 0, c.pes - 1 do expect:sub(p * c.count, c.count):copy(input:on(p)) end
  return expect
end

-- alltoall: PE j's slot p = shard j of PE p's input (GM: it differs per PE)
function op.alltoall_expect(m, c, input)
  local expect = m:alloc(c.dtype, c.count * c.pes, "expect")
  if m:timing_only() then return expect end   -- no bytes: pes^2 no-op copies
  for j = 0, c.pes - 1 do
    for p = 0, c.pes - 1 do
      expect:on(j):sub(p * c.count, c.count):copy(input:on(p):sub(j * c.count, c.count))
    end
  end
  return expect
end

return op
