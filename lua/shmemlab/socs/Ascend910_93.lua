-- Ascend910_93 (Atlas A3): two dies per card joined by SIO, each die a PE;
-- cards reach each other through the HCCS switch (about 196 GB/s per die one
-- way); 16 dies per server; servers joined by 400 Gb/s RDMA.
-- Starts from the 910B figures and changes what differs.
local p = {}
for k, v in pairs(require("shmemlab.socs.Ascend910B")) do p[k] = v end
p.name = "Ascend910_93"
p.pes_per_server = 16
p.dies_per_card = 2
p.hccs_switch = true              -- per-die switch ports instead of a mesh
p.hccs_GBps = 196                 -- per die port, one way
p.sio_GBps = 224                  -- die to die on one card
p.sio_alpha_ns = 200
p.rdma_GBps = 50                  -- 400 Gb/s
return p
