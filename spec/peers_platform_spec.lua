-- bench/peers: the SimGrid platform is written from the SoC profile (one
-- source for its figures): a host per PE of a server, a link per pair of
-- them (the full mesh) with the profile's HCCS bandwidth and latency, and one
-- route per pair over its own link.
local lab = require("shmemlab")

-- write the platform into a fresh folder: the XML and the hostfile
local function written()
  local dir = os.tmpname()
  os.remove(dir)
  local ok = os.execute("lua5.4 bench/peers/peers.lua --platform " .. dir)
  assert.is_true(ok == true or ok == 0)
  local xml = assert(io.open(dir .. "/platform.xml")):read("a")
  local hosts = assert(io.open(dir .. "/hostfile")):read("a")
  os.execute("rm -rf " .. dir)
  return xml, hosts
end

describe("bench/peers platform", function()
  it("is the profile's server: a full mesh of its HCCS links", function()
    local p = lab.soc("Ascend910B")
    local n = p.pes_per_server
    local xml, hosts = written()
    local seen = {}
    for id in xml:gmatch('<host id="(pe%d+)"') do seen[#seen + 1] = id end
    assert.equal(n, #seen)
    local lines = {}
    for h in hosts:gmatch("[^\n]+") do lines[#lines + 1] = h end
    assert.same(seen, lines)
    local links = 0
    for bw, lat in xml:gmatch('<link id="hccs%d+_%d+" bandwidth="([^"]+)" latency="([^"]+)" '
                              .. 'sharing_policy="SPLITDUPLEX"/>') do
      links = links + 1
      assert.equal(string.format("%gGBps", p.hccs_GBps), bw)
      assert.equal(string.format("%gns", p.hccs_alpha_ns), lat)
    end
    assert.equal(n * (n - 1) // 2, links)
    local pairs_seen = {}
    for a, b, la, lb in xml:gmatch('<route src="pe(%d+)" dst="pe(%d+)"><link_ctn id="hccs(%d+)_(%d+)"') do
      assert.same({ a, b }, { la, lb })
      assert.is_true(tonumber(a) < tonumber(b))
      pairs_seen[a .. "-" .. b] = true
    end
    local npairs = 0
    for _ in pairs(pairs_seen) do npairs = npairs + 1 end
    assert.equal(n * (n - 1) // 2, npairs)
  end)
end)
