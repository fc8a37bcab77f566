-- Ascend910_93 (Atlas A3), built as a CloudMatrix384-style supernode (Zuo et
-- al., 2025, "Serving Large Language Models on Huawei CloudMatrix384"): two
-- dies per card joined by SIO, each die a PE; every die of up to 384 cards
-- (768 dies) has a port into one non-blocking Unified Bus switch fabric
-- (about 196 GB/s per die one way, under 1 us between any two); RDMA only
-- between supernodes; 16 dies per server (8 cards). Starts from the 910B figures (same
-- C220 cores, same ini rates) and changes what differs; each changed field
-- names its source (a key of `sources` below), the others keep the 910B's.
local p = {}
for k, v in pairs(require("shmemlab.socs.Ascend910B")) do p[k] = v end
p.name = "Ascend910_93"
p.aiv_cores = 48                  -- ini: vector_core_cnt=48 per die (9382, 9392)
p.core_ghz = 1.85                 -- ini: cube_freq=1850 (Ascend910_9392; 9382 1800)
p.hbm_GBps = 1200                 -- assumed: the 910B's; shmem_hw gives 1.8-3.2 TB/s
                                  -- per 910C card (0.9-1.6 per die), msmodeling 1.6 TiB/s
p.pes_per_server = 16             -- msmodeling: A3 grid of 8 cards x 2 dies per node
p.dies_per_card = 2               -- msmodeling, cloudmatrix: two dies per 910C
p.hccs_switch = true              -- cloudmatrix: non-blocking UB switch fabric
p.supernode_dies = 768            -- cloudmatrix: 384 NPUs (768 dies) on one UB fabric;
                                  -- RDMA only beyond it (0: a server)
p.hccs_GBps = 196                 -- cloudmatrix: 392 GB/s one way per 910C = 196 per
                                  -- die; msmodeling, shmem_hw: 196 GB/s per die
p.hccs_alpha_ns = 500             -- msmodeling: A3 1-level CLOS 0.5 us (cloudmatrix: < 1 us)
p.hccs_read_eff = 0.836           -- hixl_a3: READ HCCS D2D 1-8 MiB, fitted t = t0 + N c:
                                  -- 163.8 GB/s asymptote / 196 GB/s
p.hccs_write_eff = 0.691          -- hixl_a3: WRITE HCCS D2D 1-8 MiB, same fit:
                                  -- 135.4 GB/s / 196 GB/s
p.sio_GBps = 224                  -- msmodeling: A3 SIO 224 GB/s between the two dies
                                  -- (shmem_hw says 270 GB/s; no measurement to choose)
p.sio_alpha_ns = 200              -- msmodeling: A3 SIO latency 0.2 us
p.rdma_GBps = 25                  -- cloudmatrix: 400 Gb/s RDMA per 910C = 25 GB/s per
                                  -- die; msmodeling ROCE 196 / 8 = 24.5 GB/s per die;
                                  -- hixl_a3 two-server RDMA D2D reaches 22.6 GiB/s
p.rdma_alpha_ns = 5500            -- msmodeling: A3 RoCE 5.5 us (marked to double-confirm)
p.sources = {
  ini = "CANN platform ini, hicann/runtime src/platform/platform_config/cann/"
    .. "Ascend910_9392.ini (also 9382, 9362) @ c3f8438d: [SoCInfo], "
    .. "[AICoreSpec], [AICoreMemoryRates] (same rates as the 910B inis)",
  hixl_a3 = "HIXL benchmark, hicann/hixl benchmarks/A3_benchmark_performance.md "
    .. "@ 0b06e94b (Dec 2025): one pair of dies on different cards, 128 MiB as "
    .. "1-8 MiB descriptors in one TransferSync; 'GB/s' there is GiB/s; the "
    .. "CANN 9.0.0 re-run (@ 5790ad48) is 8-23% lower",
  cloudmatrix = "Zuo et al. 2025, Serving Large Language Models on Huawei "
    .. "CloudMatrix384, arXiv:2506.12708: UB over 392 GB/s one way per 910C, "
    .. "< 1 us between NPUs, RDMA 400 Gb/s per NPU",
  msmodeling = p.sources.msmodeling,
  shmem_hw = p.sources.shmem_hw,
  guide = p.sources.guide,
  hccl_docs = p.sources.hccl_docs,
  inherited = "fields without a comment here keep the Ascend910B values and sources",
}
return p
