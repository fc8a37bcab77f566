-- broadcast's scatter relay on A2 (doc/hier.md, "broadcast: scatter, then allgather"):
-- the root's server spreads each chunk over its PEs, the other servers take one
-- sub-piece each from it by RoCE engine gets and then the others from each other, so
-- that a server's NICs carry the data once. Chosen over the chain of servers from 4
-- servers, or from relay.SCATTER_MIN_BYTES on 2 and 3.
local H = require("spec.helpers.ops")
local relay = require("shmemlab.relay")

-- a timing-only run without a baseline, unprofiled: its kernel_us (3 decimals), its
-- algorithm
local function timed(o)
  o.timing_only, o.baseline, o.prof_pe, o.warmup, o.iters = true, "none", -1, 0, 1
  local r = H.run("broadcast", o)
  return string.format("%.3f", r.metrics.summary.latency_us), r.shmem.describe.algorithm
end

-- a checked run under --tool all: every element right, nothing reported; its algorithm
local function exact(o, what)
  o.baseline, o.check = "none", "all"
  local r = H.run("broadcast", o)
  assert.are.equal(0, r.shmem.check.wrong, what)
  assert.are.equal(0, r.shmem.sanitizer.errors, what)
  return r.shmem.describe.algorithm
end

describe("broadcast scatter relay on A2", function()
  it("beats the chain of servers at 4 MiB on 64 PEs", function()
    local us, algo = timed({ pes = 64, count = 1024 * 1024 })
    assert.matches("^scatter relay", algo)
    assert.are.equal("68.658", us)
    local saved = relay.SCATTER_MIN_BYTES
    relay.SCATTER_MIN_BYTES = setmetatable({}, { __index = function() return math.huge end })
    local ok, chain_us, chain_algo = pcall(timed, { pes = 64, count = 1024 * 1024 })
    relay.SCATTER_MIN_BYTES = saved
    assert.is_true(ok, tostring(chain_us))
    assert.matches("chain of RoCE engine gets", chain_algo, 1, true)
    assert.is_true(tonumber(us) < tonumber(chain_us), us .. " vs " .. chain_us)
  end)

  it("is chosen by servers and size", function()
    assert.is_false(relay.scatter_worth(2, 4 * 1024 * 1024))
    assert.is_true(relay.scatter_worth(2, 8 * 1024 * 1024))
    assert.is_false(relay.scatter_worth(3, 2 * 1024 * 1024))
    assert.is_true(relay.scatter_worth(3, 4 * 1024 * 1024))
    assert.is_true(relay.scatter_worth(4, 32 * 1024))
    local _, algo = timed({ pes = 16, count = 65536 })           -- 256 KiB, 2 servers
    assert.matches("chain of RoCE engine gets", algo, 1, true)
    _, algo = timed({ pes = 32, count = 8192, block_dim = 9 })     -- the fewest blocks
    assert.matches("^scatter relay", algo)
  end)

  it("moves every element exactly: roots, odd block_dim, dtypes, chunks", function()
    assert.matches("^scatter relay", exact({ pes = 32, count = 9001, root = 21, iters = 2 },
                                           "32 root 21"))
    assert.matches("^scatter relay", exact({ pes = 32, count = 7001, root = 13, block_dim = 9,
                                             dtype = "fp16" }, "32 fp16 root 13"))
    assert.matches("^scatter relay", exact({ pes = 40, count = 40001, root = 39, block_dim = 11,
                                             dtype = "int8" }, "40 int8 root 39"))
    assert.matches("^scatter relay", exact({ pes = 32, count = 196613, root = 5, block_dim = 13,
                                             dtype = "bf16" }, "32 bf16 3 chunks"))
  end)
end)
