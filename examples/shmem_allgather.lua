-- A line-by-line port of CANN SHMEM's own allgather example (hicann/shmem
-- examples/allgather/allgather_kernel.cpp and main.cpp): the small-data path
-- (under 2 MiB per PE, 8 blocks: put into the symmetric buffer, quiet,
-- SyncAll, signal, wait for the peer, get) and the big-data path (16 blocks:
-- half put 190 KiB chunks and signal each, half poll the peers' flags with a
-- typed get_nbi into UB and pull the ready chunks ping-pong). The C++ names,
-- statements and their order are kept; a comment quotes a line that changes
-- form (C++ pointers and UB addresses become views and UB tensors).
--                      Run: lua examples/shmem_allgather.lua [--tool MODE] [pes ...]
local root = (debug.getinfo(1, "S").source:match("^@(.*)/examples/[^/]*$") or ".")
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
package.cpath = root .. "/build/?.so;" .. package.cpath
require("shmemlab.lua54").ensure()       -- started by another Lua: re-run under lua5.4
local lab = require("shmemlab")

local SYNC_FLAG_INTERVAL = 16                   -- constexpr int64_t SYNC_FLAG_INTERVAL = 16
local UB_DMA_MAX_SIZE = 190 * 1024              -- constexpr int64_t UB_DMA_MAX_SIZE = 190 * 1024
local GVA_BUFF_MAX_SIZE = 100 * 1024 * 1024     -- constexpr int64_t GVA_BUFF_MAX_SIZE
local MAGIC_MULTIPLIER = 1024                   -- main.cpp
local DATA_SIZE_THRESHOLD = 2097152             -- main.cpp: 2 MiB
local BLOCK_NUM_SMALL_DATA, BLOCK_NUM_LARGE_DATA = 8, 16
local INT32_MAX = 0x7fffffff

-- C++'s integer division on the non-negative int64s below (an integer in Lua 5.4); written
-- without `//` and `>>` so that Lua 5.1 can read this file and re-run it under lua5.4
local function idiv(a, b) return math.floor(a / b) end

-- the symmetric gva buffer as the kernel sees it: int32 flags, then T data
local function gva_views(a)
  return a.gva_sync, a.gva_data
end

-- template <typename T> all_gather_origin(input, output, gva, max_gva_num, elements, len, magic)
local function all_gather_origin(k, a, u, input, output, len, magic)
  local esz = a.esz
  local aivNum = k.block_num                    -- GetBlockNum()
  local aivIndex = k.block                      -- GetBlockIdx()
  local flag_offset = aivIndex * SYNC_FLAG_INTERVAL
  local my_rank, pe_size = k:my_pe(), k.n_pes   -- aclshmem_my_pe(), aclshmem_n_pes()
  local gva_sync_gm, gva_data_gm = gva_views(a)
  -- __ubuf__ int32_t* flags_ub1[16], flags_ub2[16]: 16 int32 apart in UB
  local flags_ub1, flags_ub2 = u.flags_ub1, u.flags_ub2
  local core_group_num = idiv(aivNum, 2)            -- 0-7 put, 8-15 get
  local core_per_rank = idiv(core_group_num, pe_size)
  local len_per_core = idiv(len, core_group_num)
  local group_per_num = len_per_core
  if aivIndex == core_group_num - 1 then        -- Remain Handle
    group_per_num = len - group_per_num * aivIndex
  end
  if aivIndex < core_group_num then             -- GM to SymmPtr
    local tmp_buff = u.tmp_buff                 -- (__ubuf__ T*)(1024 + 32)
    local copy_ub_size = UB_DMA_MAX_SIZE
    local copy_ub_num = idiv(copy_ub_size, esz)
    local copy_total_size = group_per_num * esz
    local times = 0                             -- int64_t times = 0;
    local flag                                  -- int64_t flag = 0; (set before use)
    while copy_total_size >= copy_ub_size do
      k:prof_start(0)                           -- SHMEMI_PROF_START(0)
      local at = aivIndex * len_per_core + times * copy_ub_num
      k:mte_put_nbi(gva_data_gm:sub(at, copy_ub_num), input:sub(at, copy_ub_num), tmp_buff,
                    copy_ub_size, copy_ub_num, my_rank, 0)
      k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
      times = times + 1
      flag = times + magic
      k:signal_op(gva_sync_gm:sub(flag_offset, 1), flag, lab.SIGNAL_SET, my_rank)
      k:prof_end(0)                             -- SHMEMI_PROF_END(0)
      k:set_flag("S_MTE2", 0); k:wait_flag("S_MTE2", 0)
      k:set_flag("MTE3_MTE2", 0); k:wait_flag("MTE3_MTE2", 0)
      copy_total_size = copy_total_size - copy_ub_size
    end
    if copy_total_size <= 0 then return end
    local at = aivIndex * len_per_core + times * copy_ub_num
    k:mte_put_nbi(gva_data_gm:sub(at), input:sub(at), tmp_buff, copy_ub_size,
                  idiv(copy_total_size, esz), my_rank, 0)
    k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
    times = times + 1
    flag = times + magic
    k:signal_op(gva_sync_gm:sub(flag_offset, 1), flag, lab.SIGNAL_SET, my_rank)
    return
  end
  -- while style
  for i = 0, core_group_num - 1 do
    k:set_value(flags_ub1, i * 16, 0)           -- *flags_ub1[i] = 0
    k:set_value(flags_ub2, i * 16, 0)           -- *flags_ub2[i] = 0
  end
  local ping_buff, pong_buff = u.ping_buff, u.pong_buff   -- UB 1 K + 32, 96 K + 32
  local copy_ub_size = idiv(UB_DMA_MAX_SIZE, 2)
  local copy_ub_num = idiv(copy_ub_size, esz)
  local x = idiv(aivIndex - core_group_num, core_per_rank)
  local pingpongId = 0
  k:set_flag("MTE3_MTE2", 0)
  k:set_flag("MTE3_MTE2", 1)
  while true do
    for group_idx = 0, core_group_num - 1 do
      local f1 = k:get_value(flags_ub1, group_idx * 16)
      if f1 ~= INT32_MAX then
        local all_data_size = len_per_core * esz
        if group_idx == core_group_num - 1 then
          all_data_size = (len - group_idx * len_per_core) * esz
        end
        if f1 * UB_DMA_MAX_SIZE >= all_data_size then
          k:set_value(flags_ub1, group_idx * 16, INT32_MAX)
        else
          -- aclshmem_int32_get_nbi(flags_ub2[group_idx], gva_sync_gm + group_idx * 16, 1, x)
          k:get_nbi(flags_ub2:sub(group_idx * 16, 1),
                    gva_sync_gm:sub(group_idx * SYNC_FLAG_INTERVAL, 1), 1, x)
          k:pipe_barrier("ALL")
          local f2 = k:get_value(flags_ub2, group_idx * 16)
          local ready_num = f2 - magic
          if idiv(f2, 1024) == idiv(magic, 1024) and ready_num > 0 and f1 < ready_num then
            local group_recv_offset = x * a.elements + group_idx * len_per_core
            local group_send_offset = group_idx * len_per_core
            local send_offset = idiv(f1 * UB_DMA_MAX_SIZE, esz)
            local recv_offset = idiv(f1 * UB_DMA_MAX_SIZE, esz)
            local num_total = idiv((ready_num - f1) * UB_DMA_MAX_SIZE, esz)
            if ready_num * UB_DMA_MAX_SIZE > all_data_size then
              num_total = idiv(all_data_size - f1 * UB_DMA_MAX_SIZE, esz)
            end
            k:pipe_barrier("ALL")
            while num_total > 0 do
              local event_id = pingpongId == 0 and 0 or 1
              local buf = pingpongId == 0 and ping_buff or pong_buff
              local copy_num = num_total > copy_ub_num and copy_ub_num or num_total
              k:wait_flag("MTE3_MTE2", event_id)
              k:mte_get_nbi(output:sub(group_recv_offset + recv_offset, copy_num),
                            gva_data_gm:sub(group_send_offset + send_offset, copy_num), buf,
                            copy_ub_size, copy_num, x, event_id)
              k:set_flag("MTE3_MTE2", event_id)
              send_offset = send_offset + copy_num
              recv_offset = recv_offset + copy_num
              num_total = num_total - copy_num
              pingpongId = 1 - pingpongId
            end
            k:pipe_barrier("ALL")
            k:set_value(flags_ub1, group_idx * 16, ready_num)   -- *flags_ub1[group_idx] = ready_num
            k:pipe_barrier("ALL")
          end
        end
      end
    end
    local finished = true
    for group_idx = 0, core_group_num - 1 do
      if k:get_value(flags_ub1, group_idx * 16) ~= INT32_MAX then finished = false; break end
    end
    if finished then break end
  end
  k:wait_flag("MTE3_MTE2", 0)
  k:wait_flag("MTE3_MTE2", 1)
end

-- template <typename T> all_gather_big_data(fftsAddr, input, output, gva, elements, magic)
local function all_gather_big_data(k, a)
  local max_gva_num = idiv(GVA_BUFF_MAX_SIZE, a.esz)
  local times = idiv(a.elements + max_gva_num - 1, max_gva_num)
  local total_num = a.elements
  local u = {}                                  -- this block's UB (its C++ addresses)
  u.flags_ub1, u.flags_ub2 = k:ub("int32", 16 * 16), k:ub("int32", 16 * 16)   -- 32, 544
  u.tmp_buff = k:ub(a.dtype, idiv(UB_DMA_MAX_SIZE, a.esz))                 -- 1 K + 32
  local half = idiv(idiv(UB_DMA_MAX_SIZE, 2), a.esz)
  u.ping_buff, u.pong_buff = u.tmp_buff:sub(0, half), u.tmp_buff:sub(half, half)  -- 1 K + 32, 96 K + 32
  for i = 0, times - 1 do
    k:pipe_barrier("ALL")                       -- *ctrl_ub = 0; PipeBarrier<PIPE_ALL>()
    local len = total_num > max_gva_num and max_gva_num or total_num
    k:barrier_all()                             -- aclshmemx_barrier_all_vec()
    all_gather_origin(k, a, u, a.input:sub(i * max_gva_num), a.output:sub(i * max_gva_num), len,
                      (a.magic + i) * 1024)
    total_num = total_num - max_gva_num
    k:pipe_barrier("ALL")
  end
end

-- template <typename T> all_gather_small_data(fftsAddr, input, output, gva, elements, magic)
local function all_gather_small_data(k, a)
  local aivNum, aivIndex = k.block_num, k.block
  local flag_offset = aivIndex * SYNC_FLAG_INTERVAL
  local my_rank, pe_size = k:my_pe(), k.n_pes
  local gva_sync_gm, gva_data_gm = gva_views(a)
  local tmp_buff = k:ub(a.dtype, idiv(UB_DMA_MAX_SIZE, a.esz))   -- (__ubuf__ T*)(64)
  local ub_size = UB_DMA_MAX_SIZE
  local elements = a.elements
  -- [AllGather Step 1] local input gm -> symmetric mem.
  local num_per_core = idiv(elements, aivNum)
  local input_offset = aivIndex * num_per_core
  local gva_offset = aivIndex * num_per_core
  if aivIndex == aivNum - 1 then num_per_core = elements - num_per_core * aivIndex end
  k:mte_put_nbi(gva_data_gm:sub(gva_offset), a.input:sub(input_offset), tmp_buff, ub_size,
                num_per_core, my_rank, 0)
  local core_per_rank = idiv(aivNum, pe_size)
  local core_rank_idx = aivIndex % core_per_rank
  local x = idiv(aivIndex, core_per_rank)
  -- Sync Ensure Corresponding Tasks Done.
  k:quiet()                                     -- aclshmem_quiet()
  k:ascendc_sync_all()                          -- AscendC::SyncAll()
  k:signal_op(gva_sync_gm:sub(flag_offset, 1), a.magic, lab.SIGNAL_SET, my_rank)
  k:signal_wait_until(k:ptr(gva_sync_gm, x):sub(flag_offset, 1), lab.CMP_EQ, a.magic)
  -- [AllGather Step 2] symmetric mem -> local output.
  num_per_core = idiv(elements, core_per_rank)
  local output_offset = x * elements + core_rank_idx * num_per_core
  gva_offset = core_rank_idx * num_per_core
  if core_rank_idx == core_per_rank - 1 then
    num_per_core = elements - num_per_core * core_rank_idx
  end
  k:mte_get_nbi(a.output:sub(output_offset), gva_data_gm:sub(gva_offset), tmp_buff, ub_size,
                num_per_core, x, 0)
end

-- ShmemAllGather_<type>: the small path under 2 MiB per PE, else the big one
local function kernel(k, a)
  if a.elements * a.esz < DATA_SIZE_THRESHOLD then all_gather_small_data(k, a)
  else all_gather_big_data(k, a) end
end

-- main.cpp for one case: the buffers, perf_times launches (magic++ each),
-- the check against the golden output; returns wrong elements, launch result
local function run_case(m, dtype, trans_size, perf_times, magic)
  local esz = lab.core.dtype_size(dtype)
  local n_pes = m:params().pes
  local block_num = trans_size * esz < DATA_SIZE_THRESHOLD and BLOCK_NUM_SMALL_DATA
                    or BLOCK_NUM_LARGE_DATA
  local flags = block_num * SYNC_FLAG_INTERVAL             -- int32 flags, then the data
  local gva = m:malloc("int32", flags + idiv(math.max(trans_size * esz, 4), 4) + 1, "gva")
  local a = { dtype = dtype, esz = esz, elements = trans_size,
              input = m:alloc(dtype, trans_size, "input"):fill("iota_pe"),
              output = m:alloc(dtype, trans_size * n_pes, "output"),
              gva_sync = gva:sub(0, flags),
              gva_data = gva:sub(flags):reinterpret(dtype) }
  local r
  for _ = 1, perf_times do
    magic = magic + 1
    a.magic = magic * MAGIC_MULTIPLIER
    r = m:launch({ name = "ShmemAllGather_" .. dtype, kernel = kernel }, block_num, a)
  end
  local golden = m:alloc(dtype, trans_size * n_pes, "golden"):fill("iota")
  local wrong = a.output:compare(golden)
  m:free(gva)
  return wrong, r, block_num, magic
end

-- the small and the big case on each PE count given (default 2 and 8), in a
-- checked run with --tool MODE (memcheck, racecheck, initcheck, ..., as run_op.lua's)
local USAGE = "usage: lua examples/shmem_allgather.lua [--tool MODE] [pes ...]"
local function usage_error(msg)
  io.stderr:write("shmem_allgather.lua: ", msg, " (", USAGE, ")\n")
  os.exit(2)
end
local bad, magic, check, pe_list = 0, 1, nil, {}
local i = 1
while i <= #arg do
  if arg[i] == "--tool" then
    if not (arg[i + 1] or ""):find("%a") then usage_error("option --tool needs a MODE") end
    local err
    check, err = require("shmemlab.cli").kinds.tool(arg[i + 1], "--tool")
    if not check then usage_error(err) end
    i = i + 2
  elseif arg[i]:sub(1, 1) == "-" then usage_error("unknown option '" .. arg[i] .. "'")
  else
    local n = math.tointeger(tonumber(arg[i]))
    if not n or n < 1 then usage_error("PE counts expected, got '" .. arg[i] .. "'") end
    pe_list[#pe_list + 1], i = n, i + 1
  end
end
for _, pes in ipairs(#pe_list > 0 and pe_list or { 2, 8 }) do
  for _, trans_size in ipairs({ 16 * 1024, 512 * 1024 }) do       -- 64 KiB, 2 MiB of int32
    local m = lab.machine{ soc = "Ascend910B", pes = pes, check = check }
    local wrong, r, blocks
    wrong, r, blocks, magic = run_case(m, "int32", trans_size, 2, magic)
    local reports = check and #m:check_reports() or 0
    print(string.format("shmem allgather %d PEs x %d int32 (%s path, %d blocks): kernel %.3f us, %s%s",
                        pes, trans_size, blocks == BLOCK_NUM_SMALL_DATA and "small" or "big",
                        blocks, r.max_kernel_us, wrong == 0 and "output correct"
                        or (wrong .. " wrong"), check and string.format(", %s: %d reports",
                                                                        check, reports) or ""))
    if reports > 0 then io.write((require("shmemlab.check").summary(m))) end
    bad = bad + wrong + reports
  end
end
os.exit(bad == 0 and 0 or 1)
