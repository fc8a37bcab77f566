-- Settle windows (issue 24 item 1, core/flow.c): with settle_ns = N > 0 the
-- flow solver settles a change after a quiet window at its instant and the
-- changes within N ns after that settle together at the window's end. The
-- same runs exact (0, the profile's default) and windowed side by side: the
-- largest drift is printed and bounded, the windowed run is deterministic,
-- and a window of 0 is the exact model.
local lab = require("shmemlab")
local runner = require("shmemlab.runner")
local F = require("shmemlab.fidelity")

local run = require("spec.helpers.cli").run

-- a timing-only launch of op (count int32 per PE, blocks per PE) at window w
-- (nil: the profile's), in its one-level design (--algo flat: the bounds below are
-- the flat design's; doc/scale.md gives the relays' drift): kernel time of PE 0 and
-- the solver's settles
local function timed(opname, pes, blocks, count, w)
  local op = runner.load_op(opname)
  local c = runner.config(op, { pes = pes, count = count, block_dim = blocks, warmup = 0,
                                iters = 1, baseline = "none", timing_only = true, algo = "flat" })
  local m = lab.machine{ profile = c.profile, pes = pes, prof_pe = -1, data = false,
                         settle_ns = w }
  local s = op.setup(m, c)
  local f0 = m:flow_stats().settles
  op.run(m, c, s)
  local t, settles = m:now(), m:flow_stats().settles - f0
  m:close()
  return t, settles
end

-- drift of b from a, in %
local function drift(a, b) return (b - a) / a * 100 end

describe("settle windows", function()
  it("the profile's default is 0: every pinned time is the exact model's", function()
    for _, soc in ipairs(lab.socs) do assert.equal(0, lab.soc(soc).settle_ns) end
    local t0 = timed("allgather", 16, 48, 65536, 0)
    assert.equal(t0, (timed("allgather", 16, 48, 65536)))
  end)

  it("moves no fidelity case at 10, 100 and 1000 ns (each transfer runs alone at its cap)",
     function()
    local exact, worst = F.run_all(), 0
    for _, w in ipairs({ 10, 100, 1000 }) do
      for i, r in ipairs(F.run_all({ overrides = { settle_ns = w } })) do
        local d = math.abs(drift(exact[i].modeled, r.modeled))
        if d > worst then worst = d end
      end
    end
    print(string.format("\nsettle windows: largest fidelity drift %.6f%% (%d cases, 10..1000 ns)",
                        worst, #exact))
    assert.equal(0, worst)
  end)

  it("keeps sparse changes within 0.1%: 8 and 16 PEs x 48 blocks timing-only allgather", function()
    -- exact and 100 ns, us; the window follows the (time, block) order of the
    -- changes of one instant (engine_ties_spec), so it moves them by a little
    local want = { [8] = { "16.906596", "16.918653" }, [16] = { "93.447979", "93.469094" } }
    for _, pes in ipairs({ 8, 16 }) do
      local exact, windowed = timed("allgather", pes, 48, 65536, 0), timed("allgather", pes, 48, 65536, 100)
      assert.same(want[pes], { string.format("%.6f", exact), string.format("%.6f", windowed) })
      assert.is_true(math.abs(drift(exact, windowed)) < 0.1)
    end
  end)

  it("settles bunched changes together within 0.1% at 64 PEs x 48 blocks, 1 MiB per PE",
     function()
    local t0, s0 = timed("allgather", 64, 48, 262144, 0)
    local t1, s1 = timed("allgather", 64, 48, 262144, 100)
    local d = drift(t0, t1)
    print(string.format("\nsettle windows: allgather 64 PEs x 48 blocks 1 MiB: exact %.6f us, "
                        .. "100 ns %.6f us (drift %+.4f%%), settles %d -> %d", t0, t1, d, s0, s1))
    assert.is_true(math.abs(d) < 0.1, d)
    assert.is_true(s1 * 2 < s0, s1 .. " settles vs " .. s0)   -- the window does settle together
    local again = timed("allgather", 64, 48, 262144, 100)
    assert.equal(t1, again)                                    -- deterministic
  end)

  it("refuses a negative or non-number window, on the machine and the command line", function()
    local ok, err = pcall(lab.machine, { pes = 2, settle_ns = -1 })
    assert.is_false(ok)
    assert.matches("profile figure 'settle_ns' is out of range", err, 1, true)
    ok, err = pcall(lab.machine, { pes = 2, settle_ns = "x" })
    assert.is_false(ok)
    assert.matches("option 'settle_ns' must be a number", err, 1, true)
    local status, out, e = run({ "allgather", "--settle-ns", "-5", "-w", "0", "-n", "1" })
    assert.equal(2, status)
    assert.equal("", out)
    assert.matches("--settle-ns must be an integer in 0..1000000000, got -5", e, 1, true)
  end)

  it("--settle-ns N is the profile's settle_ns for the run", function()
    local status, out = run({ "allgather", "--settle-ns", "100", "-w", "0", "-n", "1",
                              "--count", "64", "--json" })
    assert.equal(0, status, out)
    assert.matches('"settle_ns"%s*:%s*100', out)
  end)
end)
