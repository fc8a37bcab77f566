-- broadcast's scatter relay on A2 (doc/hier.md, "broadcast: scatter, then allgather"):
-- the root's server spreads each chunk over its PEs, the other servers take one
-- sub-piece each from it by RoCE engine gets and then the others from each other, so
-- that a server's NICs carry the data once, whenever its blocks fit
-- (relay.scatter_blocks). Its root fetch is one chain of gets with a mark at each
-- chunk's end (relay.get_marked).
local lab = require("shmemlab")
local op = require("shmemlab.op")
local relay = require("shmemlab.relay")
local H = require("spec.helpers.ops")

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

-- PE 0's block 0 gets groups x n int32 from PE 1 in the form given ("marked":
-- relay.get_marked; "calls": a get_pipelined and a landing wait a group, the chunk loop
-- the scatter relay's fetch had; "one": a single get_pipelined of it all): kernel us
-- (3 decimals), the order landed() ran in, a checksum of what arrived
local function fetch(form, groups, n)
  local m = lab.machine{ pes = 2, prof_pe = -1 }
  local s = m:malloc("int32", groups * n, "src")
  local d = m:malloc("int32", groups * n, "dst")
  s:fill("iota")
  local order = {}
  local r = m:launch(function(k)
    if k.pe ~= 0 then return end
    local ub = k:ub("int32", 16384)
    if form == "one" then
      op.get_pipelined(k, d, s, ub, groups * n, 1)
    elseif form == "calls" then
      for i = 0, groups - 1 do
        op.get_pipelined(k, d:sub(i * n, n), s:sub(i * n, n), ub, n, 1)
        k:set_flag("MTE3_S", 0); k:wait_flag("MTE3_S", 0)
      end
    else
      relay.get_marked(k, ub, 2, groups, function(i)
        return { { d:sub((i - 1) * n, n), s:sub((i - 1) * n, n), n, 1 } }
      end, function(i) order[#order + 1] = i end)
    end
  end, 1)
  local out = { string.format("%.3f", r.kernel_us[1]), table.concat(order, ","), d:checksum() }
  m:close()
  return out
end

describe("broadcast scatter relay on A2", function()
  it("fetches a chunk chain without a drain between chunks (relay.get_marked)", function()
    local one, calls, marked = fetch("one", 8, 16384), fetch("calls", 8, 16384),
      fetch("marked", 8, 16384)                     -- groups of two whole UB halves each
    assert.are.same({ "22.644", "", one[3] }, one)
    assert.are.same({ "31.012", "", one[3] }, calls)
    assert.are.same({ "22.664", "1,2,3,4,5,6,7,8", one[3] }, marked)
  end)

  it("runs 4 MiB on 64 PEs in 42.255 us", function()
    local us, algo = timed({ pes = 64, count = 1024 * 1024 })
    assert.matches("^scatter relay", algo)
    assert.are.equal("42.255", us)
  end)

  it("is chosen by the blocks", function()
    assert.are.same({ 1, 2, 4 }, relay.scatter_blocks(16, 8))
    assert.are.same({ 1, 2, 4 }, relay.scatter_blocks(13, 8))
    assert.are.same({ 1, 2, 3 }, relay.scatter_blocks(12, 8))
    assert.are.same({ 1, 2, 2 }, relay.scatter_blocks(11, 8))
    assert.are.same({ 1, 1, 1 }, relay.scatter_blocks(10, 8))
    assert.are.same({ 1, 1, 1 }, relay.scatter_blocks(9, 8))
    assert.is_nil(relay.scatter_blocks(8, 8))
    local _, algo = timed({ pes = 16, count = 4096 })            -- 16 KiB, 2 servers
    assert.matches("^scatter relay", algo)
    _, algo = timed({ pes = 32, count = 8192, block_dim = 8 })     -- too few: one step
    assert.matches("^root 0 stages", algo)
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
    assert.matches("^scatter relay", exact({ pes = 24, count = 150001, root = 10, iters = 2 },
                                           "24 two and two blocks, 4 chunks"))
    assert.matches("^scatter relay", exact({ pes = 80, count = 20011, root = 42, block_dim = 12,
                                             iters = 2 },
                                           "80: three groups of three servers"))
  end)

  it("gathers in groups of servers beyond SCATTER_GROUP, in more chunks from 5 MiB", function()
    local got = {}
    for _, n in ipairs({ 1, 3, 7, 8, 9, 11, 15 }) do got[#got + 1] = relay.scatter_group(n) end
    assert.are.same({ 1, 3, 7, 4, 3, 11, 5 }, got)
    got = {}
    for _, kib in ipairs({ 1, 256, 1024, 4096, 5120, 16384 }) do
      got[#got + 1] = relay.scatter_chunks(kib * 1024)
    end
    assert.are.same({ 1, 2, 8, 16, 20, 20 }, got)
  end)
end)
