-- Ascend950: 56 AIV cores with 248 KiB usable UB, a 1 GHz system counter,
-- UB links of 53 GB/s in a 4-card mesh with a 1.5 us round trip.
-- Figures the public sources leave open (HBM, MTE rates, HCCS read/write
-- efficiency) keep the 910B values; not calibrated against a measurement.
local p = {}
for k, v in pairs(require("shmemlab.socs.Ascend910B")) do p[k] = v end
p.name = "Ascend950"
p.aiv_cores = 56
p.ub_bytes = 248 * 1024
p.core_ghz = 1.65
p.cycle2us = 1000
p.pes_per_server = 4
p.hccs_GBps = 53
p.hccs_alpha_ns = 750
p.scalar_amo = true               -- shmem_amo: scalar (MTE) and RDMA engine atomics
p.udma_GBps = p.hbm_GBps          -- assumed: no public UDMA engine rate; at the
                                  -- (inherited) HBM rate, so the 53 GB/s UB links bind
p.udma_setup_ns = p.sdma_setup_ns -- assumed: no public UDMA figure; the 910B's SDMA setup
p.sources = {
  figures = "doc/metrics.md reference figures (CANN platform ini, Ascend C docs): "
    .. "56 AIV cores, 248 KiB usable UB, 1.65 GHz, 1 GHz counter, "
    .. "UB links 53 GB/s in a 4-card mesh, 1.5 us round trip",
  inherited = "every other field keeps the Ascend910B value (see its sources)",
  udma = "UDMA transfers (hicann/shmem include/device/gm2gm/engine/shmem_device_udma.h) "
    .. "cross the UB links above; no public UDMA engine rate or setup cost was found",
}
return p
