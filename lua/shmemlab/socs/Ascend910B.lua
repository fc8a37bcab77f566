-- Ascend910B (Atlas A2): one PE per card, 8 cards per server in an HCCS full
-- mesh (7 links of 28 GB/s one way per card), servers joined by RDMA.
-- Every figure of the timing model is a field here; lab.machine{...} overrides
-- any of them. Sources: SPEC.md section 11 (CANN platform ini files, Ascend C
-- docs, msmodeling); defaults, not gospel.
return {
  name = "Ascend910B",
  -- cores and memory
  aiv_cores = 48,                 -- AIV cores per PE (910B2; B1 50, B3/B4 40)
  ub_bytes = 192 * 1024,          -- unified buffer per AIV core
  core_ghz = 1.85,                -- AI core clock
  cycle2us = 50,                  -- system counter ticks per microsecond
  hbm_GBps = 1600,                -- HBM bandwidth per PE, shared by its cores
  local_alpha_ns = 300,           -- GM access latency
  sym_heap_bytes = 1024 * 1024 * 1024,   -- symmetric heap per PE
  -- copy engines and pipes
  mte2_bytes_per_cycle = 32,      -- GM -> UB per core
  mte3_bytes_per_cycle = 64,      -- UB -> GM per core
  mte_setup_ns = 200,             -- fixed cost of one MTE transfer
  issue_ns = 10,                  -- S pipe cost to issue one instruction
  scalar_ns = 5,                  -- GetValue / SetValue
  vec_bytes_per_cycle = 256,      -- vector unit throughput
  vec_setup_ns = 20,
  pipe_barrier_ns = 20,           -- PipeBarrier itself
  queue_depth = 16,               -- instructions a pipe queues before S stalls (assumed)
  -- topology
  pes_per_server = 8,
  dies_per_card = 1,
  hccs_switch = false,            -- full mesh: one directed link per PE pair
  supernode_dies = 0,             -- no supernode: RDMA beyond the server
  hccs_GBps = 28,                 -- per link per direction
  hccs_alpha_ns = 500,
  hccs_read_eff = 0.90,           -- remote reads (get) reach 90% of the link
  hccs_write_eff = 0.95,          -- remote writes (put) reach 95%
  sio_GBps = 224,                 -- unused on A2 (one die per card)
  sio_alpha_ns = 200,
  rdma_GBps = 25,                 -- 200 GbE per PE, one way
  rdma_alpha_ns = 1500,
  -- synchronisation
  signal_ns = 20,                 -- S pipe cost of a signal write
  poll_ns = 100,                  -- one poll of a GM flag (dcci + load)
  barrier_base_ns = 1000,         -- barrier_all: base + 2 * ceil(log2 n) * alpha
  sync_all_ns = 500,
  -- host side
  launch_us = 4,                  -- kernel launch, host to device
  host_GBps = 24,                 -- aclrtMemcpy over PCIe
  host_setup_us = 10,
  time_limit_us = 60 * 1000 * 1000,      -- virtual-time limit of one launch
  hccl_buffer_bytes = 200 * 1024 * 1024, -- HCCL buffer per rank (baselines)
  instruction_budget = 200 * 1000 * 1000, -- Lua instructions between primitives (0 = none)
}
