-- Ascend910B (Atlas A2): one PE per card, 8 cards per server in an HCCS full
-- mesh (7 links of 28 GB/s one way per card), servers joined by RDMA.
-- Every figure of the timing model is a field here; lab.machine{...} overrides
-- any of them. The comment beside each field names its source (a key of
-- `sources` below) or says "assumed" and why; lua/shmemlab/fidelity.lua
-- checks the modeled HCCS and RDMA streams against published measurements
-- (`make fidelity`).
return {
  name = "Ascend910B",
  -- cores and memory: the 910B2 SKU (48 AIV cores)
  aiv_cores = 48,                 -- ini: vector_core_cnt=48 (B1, B2; B3 and B4 40)
  ub_bytes = 192 * 1024,          -- ini: ub_size=196608
  core_ghz = 1.8,                 -- ini: cube_freq=1800 (B2, B3; B1 1850, B4 1500);
                                  -- C220 has no separate vector clock
  cycle2us = 50,                  -- guide: GetSystemCycle ticks at 50 MHz
  hbm_GBps = 1200,                -- shmem_hw: HBM about 1.2 TB/s (910B1/B2/B3), shared by
                                  -- reads and writes; checks: ini ddr_rate 32 x 24 AIC x
                                  -- 1.8 GHz = 1.38 TB/s; msmodeling 1.6 TiB/s x its
                                  -- memory_efficiency 0.6 = 1.06 TB/s
  local_alpha_ns = 300,           -- assumed: no public GM access latency
  sym_heap_bytes = 1024 * 1024 * 1024,   -- assumed: lab default, not a hardware figure
  -- copy engines and pipes
  mte2_bytes_per_cycle = 32,      -- ini: ddr_read_rate=32 B/cycle/core (GM from HBM)
  l2_read_bytes_per_cycle = 110,  -- ini: l2_read_rate=110 B/cycle/core (GM from L2): an
                                  -- MTE2 read of the PE's own GM bytes the L2 holds
  l2_bytes = 192 * 1024 * 1024,   -- ini: l2_size=201326592 per die; the lab's L2 is an
                                  -- LRU over address ranges with this budget: MTE writes
                                  -- into a PE's GM and its own MTE2 reads of it make
                                  -- bytes recent (core/l2.c; empty at each launch)
  mte3_bytes_per_cycle = 64,      -- ini: ub_to_ddr_rate=64 B/cycle/core (ub_to_l2_rate=64)
  mte_setup_ns = 200,             -- assumed: no public per-instruction MTE cost; the
                                  -- fidelity table's per-descriptor cost checks it with
                                  -- the alphas (hixl_a2 0.8-0.9 us, hixl_a3 1.45 us)
  issue_ns = 10,                  -- assumed: no public figure; about 18 scalar cycles
  scalar_ns = 5,                  -- assumed: no public figure; GetValue / SetValue,
                                  -- about 9 cycles
  vec_bytes_per_cycle = 256,      -- assumed: one 256-byte repeat per cycle (Ascend C
                                  -- repeat width); the ini's vec_calc_size=128 is not a rate
  vec_setup_ns = 20,              -- assumed: no public figure (pipeline fill)
  pipe_barrier_ns = 20,           -- assumed: no public figure (drain handshake)
  queue_depth = 16,               -- assumed: instructions a pipe queues before S stalls
  -- topology
  pes_per_server = 8,             -- msmodeling: A2 grid of 8 cards per node
  dies_per_card = 1,              -- msmodeling: the A2 grid has no die level (one die per card)
  hccs_switch = false,            -- msmodeling: A2 intra-node topology FULL_MESH
  supernode_dies = 0,             -- msmodeling: the A2 grid has no supernode level, RDMA
                                  -- beyond the 8-card node (0: the server is the domain)
  hccs_GBps = 28,                 -- shmem_hw: 28 GB/s per link one way, 7 links;
                                  -- msmodeling 196 GB/s mesh; hixl_a2 reads reach 27.7
  hccs_alpha_ns = 500,            -- msmodeling: A2 full mesh latency 0.5 us
  hccs_read_eff = 0.979,          -- hixl_cs: READ (rD2D) HCCS (hixl_cs) 16K-2M blocks,
                                  -- fitted t = t0 + N c: 27.41 GB/s asymptote / 28 GB/s
                                  -- (hixl_a2's older 1-8 MiB figures give 27.70)
  hccs_write_eff = 0.737,         -- hixl_cs: WRITE (D2rD), same fit: 20.65 GB/s / 28 GB/s
                                  -- (hixl_a2: 20.83)
  sio_GBps = 224,                 -- unused on A2 (one die per card)
  sio_alpha_ns = 200,             -- unused on A2
  rdma_GBps = 25,                 -- msmodeling: A2 CLOS 25 GB/s (200 GbE) per card;
                                  -- checked by the fidelity table (hixl_a2, two servers)
  rdma_alpha_ns = 1500,           -- msmodeling: A2 CLOS latency 1.5 us
  -- DMA engines besides MTE (hicann/shmem include/device/gm2gm/engine/)
  sdma_GBps = 1200,               -- assumed: no public per-engine SDMA rate; at the HBM
                                  -- rate, so the links bind (shmem_readme: A2/A3 kernels
                                  -- drive SDMA)
  sdma_setup_ns = 400,            -- assumed: no public split of a descriptor's cost; the
                                  -- part the queue hides under the previous stream (HIXL's
                                  -- sweeps cannot see it: 16 KiB streams for 0.6 us)
  rdma_setup_ns = 100,            -- assumed: no public AIV-posted WQE cost (hixl_a2's
                                  -- RDMA columns leave under 0.1 us a descriptor, queued)
  udma_GBps = 0,                  -- shmem_readme: UDMA is Ascend950's; 0 = no UDMA here
  udma_setup_ns = 0,              -- unused without UDMA
  sdma_task_ns = 1000,            -- hixl_cs: HCCS (hixl_cs) block-size sweep, 16K-2M, fitted
                                  -- t = t0 + N c: c = 0.98 us (READ), 1.03 us (WRITE) a
                                  -- block, all of it serial (one thread, in order)
  rdma_task_ns = 190,             -- hixl_cs: ROCE (hixl_cs) one-server sweep, same fit:
                                  -- c = 0.19 us a block (READ and WRITE)
  udma_task_ns = 0,               -- unused without UDMA
  dma_queue_depth = 2,            -- assumed: no public figure; 2 puts the next
                                  -- descriptor's setup under the current stream (the
                                  -- HIXL sweeps cannot tell 2 from more)
  -- synchronisation
  signal_ns = 20,                 -- assumed: no public figure; S cost of a signal write
  poll_ns = 100,                  -- assumed: no public figure; a GM flag poll (dcci + load)
  scalar_amo = false,             -- shmem_amo: the fetch, inc, set, swap, compare-swap and
                                  -- bitwise atomics and the wide atomic_add are Ascend950's
  barrier_base_ns = 1000,         -- assumed: no public figure; barrier_all =
                                  -- base + 2 * ceil(log2 n) * alpha
  sync_all_ns = 500,              -- assumed: no public figure; checked with mte_setup_ns
                                  -- by the fidelity table's per-descriptor cost
  -- host side
  launch_us = 4,                  -- assumed: no public figure for an AIV kernel launch
  host_GBps = 24,                 -- assumed: aclrtMemcpy over PCIe Gen4 x16; no public
                                  -- single-copy measurement found
  host_setup_us = 10,             -- assumed: no public figure (aclrtMemcpy call cost)
  time_limit_us = 60 * 1000 * 1000,      -- lab guard, not a hardware figure
  hccl_buffer_bytes = 200 * 1024 * 1024, -- hccl_docs: HCCL_BUFFSIZE default 200 (MB)
  instruction_budget = 200 * 1000 * 1000, -- lab guard (0 = none)
  spin_limit = 1000 * 1000,       -- lab guard (0 = none): doc/guard.md "Runaway kernels"
  primitive_limit = 2 * 1000 * 1000,    -- lab guard (0 = none): primitives per block and launch
  settle_ns = 0,                  -- lab setting, not a hardware figure: the flow solver's window
                                  -- (0 = exact; N > 0 settles the flow starts and ends within N ns
                                  -- together, each off by < N ns: doc/scale.md "Settle windows")
  -- each source once, so reports can print them (fidelity.lua prints the list)
  sources = {
    shmem_amo = "hicann/shmem include/device/gm2gm/shmem_device_amo.h @ 643bfb7: the "
      .. "Path / Supported Types / Hardware Platform tables of each atomic (MTE atomic_add of "
      .. "int8, int16, bf16, half, int32, float on every SoC; the rest Ascend950)",
    ini = "CANN platform ini, hicann/runtime src/platform/platform_config/cann/"
      .. "Ascend910B2.ini (also B1, B3, B4) @ c3f8438d: [SoCInfo], [AICoreSpec], "
      .. "[AICoreMemoryRates] in bytes per cycle per core",
    hixl_cs = "HIXL comm benchmark, hicann/hixl benchmarks/performance.md @ 9ed283b2: "
      .. "A2 section, one server, HCCS (hixl_cs) and ROCE (hixl_cs) tables, D2rD = WRITE, "
      .. "rD2D = READ, 128 MiB as 16K-2M blocks in one TransferSync; decimal GB/s "
      .. "(comm_benchmark/common/client_runner.cc divides by 1e9); the client posts the "
      .. "blocks in order on one thread, 128 per AICPU kernel (src/hixl/cs)",
    hixl_a2 = "HIXL benchmark, hicann/hixl benchmarks/A2_benchmark_performance.md "
      .. "@ 0b06e94b (Dec 2025): one pair, 128 MiB as 1-8 MiB descriptors in one "
      .. "TransferSync (HcclBatchGet/Put on one stream); 'GB/s' there is GiB/s "
      .. "(benchmarks/benchmark.cpp divides by 1024^3)",
    msmodeling = "Ascend/msmodeling tensor_cast/device.py @ 56a17ec8: ATLAS_800 "
      .. "A2_INTERCONNECT, A2_376T_64G (link bandwidths, latencies, HBM)",
    shmem_hw = "hicann/shmem .agents/skills/shmem-ops-design/references/"
      .. "hardware-architecture.md @ 8e88787d: HBM about 1.2 TB/s (910B), HCCS 28 GB/s "
      .. "per link one way, 7 links full mesh; 910C 196 GB/s per die, SIO 270 GB/s",
    shmem_readme = "hicann/shmem README.md @ 643bfb7 (v1.3.0): AICore-driven SDMA on "
      .. "A2/A3, MTE on 950; engines MTE, SDMA, ROCE, UDMA (docs/api/pythonAPI.md "
      .. "OpEngineType); UDMA headers include/device/gm2gm/engine/shmem_device_udma.h",
    guide = "CANN SHMEM performance guide (cycle profiling, doc/metrics.md): "
      .. "cycle2us 50 on 910B",
    hccl_docs = "HCCL docs (HCCL_BUFFSIZE, doc/metrics.md): HCCL_BUFFSIZE defaults to "
      .. "200 MB per rank (not re-checked against a page here)",
  },
}
