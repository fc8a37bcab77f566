-- Ascend910_93 (Atlas A3), built as a CloudMatrix384-style supernode (Zuo et
-- al., 2025, "Serving Large Language Models on Huawei CloudMatrix384"): two
-- dies per card joined by SIO, each die a PE; every die of up to 384 cards
-- (768 dies) has a port into one non-blocking Unified Bus switch fabric
-- (about 196 GB/s per die one way, under 1 us between any two); RDMA (400
-- Gb/s per card) only between supernodes. 16 dies per server (8 cards).
-- Starts from the 910B figures and changes what differs.
local p = {}
for k, v in pairs(require("shmemlab.socs.Ascend910B")) do p[k] = v end
p.name = "Ascend910_93"
p.pes_per_server = 16
p.dies_per_card = 2
p.hccs_switch = true              -- per-die switch ports instead of a mesh
p.supernode_dies = 768            -- PEs on one switch fabric; RDMA beyond (0: a server)
p.hccs_GBps = 196                 -- per die port, one way
p.sio_GBps = 224                  -- die to die on one card
p.sio_alpha_ns = 200
p.rdma_GBps = 50                  -- 400 Gb/s per card (its two dies share the NIC)
return p
