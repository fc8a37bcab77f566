-- run_op.lua's mistakes (issue 9: defects 4-7 and 9's CLI parts): typos named with
-- the closest keys, typed exit statuses (2 usage, 1 wrong or reported, 3 the run
-- failed), checked runs' reports first in text and JSON, PE counts and memory.
local cli = require("shmemlab.cli")
local runner = require("shmemlab.runner")
local lab = require("shmemlab")
local cjson = require("cjson")
local lfs = require("lfs")

local run = require("spec.helpers.cli").run

-- a usage error: exit 2, nothing on stdout, one line on stderr with no position
local function assert_usage(argv, want)
  local status, out, err = run(argv)
  assert.equal(2, status, err)
  assert.equal("", out)
  assert.matches("^run_op.lua: [^\n]*\n$", err)
  assert.is_nil(err:find("traceback", 1, true))
  assert.is_nil(err:find("%.lua:%d+:"), err)         -- no internal file:line
  assert.matches(want, err, 1, true)
end

local small = { "-w", "0", "-n", "1", "--count", "64" }
-- argv .. small
local function with_small(argv) return require("spec.helpers.cli").append(argv, small) end

describe("run_op.lua's typos (defect 4)", function()
  it("names an unknown --set key and the closest keys", function()
    assert_usage(with_small({ "allgather", "--set", "hccs_gbps=14" }),
                 "unknown profile figure 'hccs_gbps'; did you mean hccs_GBps?")
  end)

  it("refuses a --set value of the wrong type", function()
    assert_usage(with_small({ "allgather", "--set", "hccs_GBps=fast" }),
                 "profile figure hccs_GBps needs a number >= 0, got 'fast'")
    assert_usage(with_small({ "allgather", "--set", "hccs_switch=1" }),
                 "profile figure hccs_switch needs a boolean, got '1'")
    assert_usage(with_small({ "allgather", "--set", "aiv_cores=5000" }),
                 "--set: bad argument #1 to 'machine' (profile figure 'aiv_cores' is out of range)")
  end)

  it("names an unknown operator option and the closest", function()
    local ok, e = pcall(runner.run, "allgather", { cuont = 64, pes = 2 })
    assert.is_false(ok)
    assert.equal("usage", runner.kind(e))
    assert.equal("unknown option 'cuont' of operator allgather; did you mean count?", tostring(e))
  end)

  it("names the closest key of an unknown lab.machine option", function()
    local ok, e = pcall(lab.machine, { pes = 1, hccs_gbps = 14 })
    assert.is_false(ok)
    assert.matches("unknown option 'hccs_gbps'; did you mean hccs_GBps?)", e, 1, true)
    e = select(2, pcall(lab.machine, { pes = 1, bogus = 1 }))
    assert.matches("(unknown option 'bogus')", e, 1, true)   -- nothing close: no guess
  end)
end)

describe("run_op.lua's exit statuses (defect 6)", function()
  local dir = os.tmpname()
  os.remove(dir)
  local cases = {
    { { "allgather", "--count", "0" }, "--count must be an integer >= 1, got 0" },
    { { "allgather", "--prof-pe", "8" }, "--prof-pe must be an integer in -1..7, got 8" },
    { { "broadcast", "--root", "9" }, "--root must be an integer in 0..7, got 9" },
    { { "allreduce", "--reduce", "avg" }, "--reduce must be one of sum, max, min, got 'avg'" },
    { { "allreduce", "--reduce", "prod" }, "--reduce must be one of sum, max, min, got 'prod'" },
    { { "allgather", "--tool", "0" },
      "--tool must be memcheck, racecheck, synccheck, initcheck or all, got '0'" },
    { { "allgather", "--tool", "racechek" }, "did you mean racecheck?" },
    { { "allgather", "--check", "racecheck" }, "--check is the result check, 0 or 1 (as "
      .. "nccl-tests' -c); the sanitizer is --tool racecheck" },
    { { "allgather", "-c", "2" }, "--check must be 0 (result check off) or 1 (on), got '2'" },
    { { "allgather", "-a", "4" }, "--average must be 0 (PE 0), 1 (mean), 2 (min) or 3 (max" },
    { { "allgather", "--output", "/proc/nope/x" }, "cannot write --output /proc/nope/x" },
    { { "allgather", "--plot", "/proc/nope/p.svg" }, "cannot write --plot /proc/nope/p.svg" },
    { { "allgather", "--plot", "LICENSE/p.svg" }, "cannot write --plot LICENSE/p.svg (no folder" },
    { { "allgather", "--plot", "/tmp" }, "--plot /tmp is a folder" },
    { { "allgather", "--soc", "Ascend910" }, "unknown SoC 'Ascend910'" },
    { { "dispatch", "--experts", "3" }, "experts (3) must be a multiple of the PE count (8)" },
    { { "allgather", "--count", "0", "--output", dir }, "--count must be" },
    { { "allgather", "--ub-bytes", "1G" }, "--ub-bytes must be an integer in 32..196608" },
    { { "allgather", "--ub-bytes", "16" }, "--ub-bytes must be an integer in 32..196608" },
    { { "dispatch", "--dispatch-dtype", "fp64" },
      "moe: dispatch dtype must be int8 or the input dtype fp16, got 'fp64'" },
  }
  for _, case in ipairs(cases) do
    it("exits 2 with one line for " .. table.concat(case[1], " "), function()
      assert_usage(case[1], case[2])
      assert.is_nil(lfs.attributes(dir))                  -- checked before anything ran
    end)
  end

  it("exits 3 with the block's traceback on a kernel fault", function()
    local status, out, err = run({ "spec/fixtures/ops/fault_oob.lua", "--pes", "2", "-w", "0",
                                   "-n", "1", "--baseline", "none" })
    assert.equal(3, status)
    -- stdout keeps what a failed run can still report: its configuration line
    -- (and a checked run's reports: spec/engine_runaway_many_spec.lua)
    assert.matches("^# shmemlab [^\n]* | op fault_oob [^\n]*\n$", out)
    assert.matches("kernel fault on PE %d block 0 in frame 0", err)
    assert.matches("stack traceback:\n\t[C]: in method 'data_copy'\n"
                   .. "\tspec/fixtures/ops/fault_oob.lua:10:", err, 1, true)
  end)

  it("exits 3 on a deadlock, with what each block waits for", function()
    local status, _, err = run({ "spec/fixtures/ops/deadlock_frame.lua", "--pes", "2", "-w", "0",
                                 "-n", "1", "--baseline", "none" })
    assert.equal(3, status)
    assert.matches("deadlock at 0.52 us of the kernel: every block waits and nothing is pending:\n"
      .. "  PE 1 block 0 (at 0.100 us): signal_wait_until(sig[0] on PE 1, CMP_EQ, 2): current "
      .. "value 1", err, 1, true)
  end)

  it("exits 1 on a checked run's reports", function()
    local status = run({ "spec/fixtures/ops/deadlock_frame.lua", "--pes", "2", "-w", "0", "-n",
                         "1", "--baseline", "none", "--tool", "synccheck" })
    assert.equal(1, status)
  end)

  it("types the runner's errors by kind, not by text", function()
    local ok, e = pcall(runner.run, "allgather", { pes = 2, count = 0 })
    assert.is_false(ok)
    assert.equal("usage", runner.kind(e))
    ok, e = pcall(runner.run, "spec/fixtures/ops/fault_oob.lua", { pes = 2, warmup = 0,
                                                                    iters = 1, baseline = "none" })
    assert.is_false(ok)
    assert.equal("run", runner.kind(e))
    assert.is_nil(runner.kind("a plain string"))
    assert.same({ ok = 0, wrong = 1, usage = 2, run = 3 }, cli.EXIT)
  end)
end)

describe("run_op.lua's checked runs (defect 5)", function()
  local argv = { "spec/fixtures/ops/deadlock_frame.lua", "--pes", "2", "-w", "0", "-n", "1",
                 "--baseline", "none", "--tool", "synccheck" }
  it("prints the reports first, right after the configuration", function()
    local _, out = run(argv)
    local lines = {}
    for l in out:gmatch("[^\n]*") do lines[#lines + 1] = l end
    assert.matches("^# shmemlab ", lines[1])
    assert.equal("====== ERROR: synccheck: signal wait can never be satisfied: sig[0] on PE 1 "
                 .. "CMP_EQ 2, current value 1, nothing pending", lines[2])
  end)

  it("puts the reports in the JSON", function()
    local j = { "--json" }
    for _, a in ipairs(argv) do j[#j + 1] = a end
    local status, out = run(j)
    assert.equal(1, status)
    local doc = cjson.decode(out)
    local checked = doc.rows[1].shmem.checked
    assert.equal(1, checked.errors)
    assert.equal(1, #checked.reports)
    assert.equal("sync", checked.reports[1].kind)
    assert.matches("^====== ERROR: synccheck: signal wait can never be satisfied", checked.reports[1].text)
    assert.matches("ERROR SUMMARY: 1 error", checked.summary, 1, true)
  end)

  it("shows the deadlock report when the salvaged wait leaves its frame unused", function()
    local status, out = run({ "spec/fixtures/ops/deadlock_frame.lua", "--pes", "2", "-w", "1",
                              "-n", "1", "--baseline", "none", "--tool", "synccheck" })
    assert.equal(1, status)
    assert.matches("^# shmemlab [^\n]*\n====== ERROR: synccheck: signal wait can never be "
                   .. "satisfied", out)
    assert.matches("ERROR SUMMARY: 2 errors (1 distinct)", out, 1, true)
    assert.matches("(no frame report: the checked run reported errors; operator deadlock_frame: "
                   .. "frame 2 (signal_or_barrier_wait) unused and no reason given)", out, 1, true)
  end)

  it("lets the reports explain a frame the run left unused", function()
    local status, out = run({ "spec/fixtures/ops/checked_no_reason.lua", "--pes", "2", "-w", "0",
                              "-n", "1", "--baseline", "none", "--tool", "racecheck" })
    assert.equal(1, status)
    assert.matches("^# shmemlab [^\n]*\n====== ERROR: data race", out)
    assert.matches("(no frame report: the checked run reported errors; operator checked_no_reason: "
                   .. "frame 4 (finalize) unused and no reason given)", out, 1, true)
    local _, js = run({ "spec/fixtures/ops/checked_no_reason.lua", "--pes", "2", "-w", "0", "-n",
                        "1", "--baseline", "none", "--tool", "racecheck", "--json" })
    local checked = cjson.decode(js).rows[1].shmem.checked
    assert.equal("race", checked.reports[1].kind)
    assert.matches("frame 4 (finalize) unused", checked.frames_error, 1, true)
  end)
end)

describe("run_op.lua's PE counts (defect 7)", function()
  for _, name in ipairs({ "allgather", "allreduce", "alltoall", "broadcast", "reduce_scatter",
                          "dispatch", "combine" }) do
    it("runs " .. name .. " and its baseline on 1 PE", function()
      local status, out, err = run({ name, "--pes", "1", "--count", "256", "-w", "0", "-n", "1",
                                     "--baseline", "hccl" })
      assert.equal(0, status, err)
      assert.matches("0 wrong elements", out, 1, true)
      assert.matches(runner.ONE_PE_REASON, out, 1, true)
    end)
  end

  for _, name in ipairs({ "dispatch", "combine" }) do
    for _, family in ipairs({ "deepep", "mc2" }) do
      it("runs " .. name .. " against the shipping " .. family .. " kernel on 1 PE", function()
        local status, out, err = run({ name, "--pes", "1", "--count", "256", "-w", "0", "-n", "1",
                                       "--baseline", family })
        assert.equal(0, status, err)
        assert.matches("baseline " .. family, out, 1, true)
        local _, wrong = out:gsub("check [^\n]*: 0 wrong elements", "")
        assert.equal(2, wrong, out)
      end)
    end
  end

  it("runs p2p on 1 PE from and to PE 0, and says why not to PE 1", function()
    local status = run({ "p2p", "--pes", "1", "--count", "256", "-w", "0", "-n", "1",
                         "--src", "0", "--dst", "0" })
    assert.equal(0, status)
    assert_usage({ "p2p", "--pes", "1" }, "--dst must be an integer in 0..0, got 1")
  end)

  it("enforces the documented 1-1024", function()
    assert_usage({ "allgather", "--pes", "1025" }, "--pes must be an integer in 1..1024, got 1025")
    assert_usage({ "allgather", "--pes", "0" }, "--pes must be an integer in 1..1024, got 0")
    assert.equal(1024, runner.MAX_PES)
  end)

  it("says before allocating that a run cannot fit, with the bytes and what to change", function()
    local op = runner.load_op("allgather")
    local c = runner.config(op, { pes = 8, count = 64 })
    c.pes, c.count = 1024, 262144
    local need = runner.memory_need(op, c)
    local ok, e = pcall(runner.check_memory, op, c, 1 << 34)
    assert.is_false(ok)
    assert.equal("usage", runner.kind(e))
    assert.equal(need.data, e.memory.need)
    assert.equal(string.format("1024 PEs at count 262144 need about %d bytes (%.1f TiB) of memory, "
      .. "17179869184 (16.0 GiB) are available (MemAvailable): use --timing-only (about %d bytes) "
      .. "or a smaller --count (at most %d) or fewer --pes", need.data, need.data / 2 ^ 40,
      need.timing_only, e.memory.max_units), tostring(e))
    assert.is_true(pcall(runner.check_memory, op, c, need.data))
    assert_usage({ "allgather", "--pes", "1024" }, "of memory, ")
  end)
end)

describe("run_op.lua's small ones (defect 9)", function()
  it("says in the configuration line that --block-dim was beyond the SoC's cores", function()
    local status, out = run(with_small({ "allgather", "--pes", "2", "--block-dim", "100" }))
    assert.equal(0, status)
    assert.matches("| block_dim 48 (asked 100; the SoC has 48 cores) |", out, 1, true)
  end)

  it("takes float, half and bfloat16 for fp32, fp16 and bf16", function()
    for alias, name in pairs({ float = "fp32", half = "fp16", bfloat16 = "bf16" }) do
      local status, out = run(with_small({ "allgather", "--pes", "2", "--dtype", alias }))
      assert.equal(0, status)
      assert.matches("| dtype " .. name .. " |", out, 1, true)
    end
  end)
end)

-- Issue 27, item 5: a sweep's --plot writes under a folder of its own (the docs' examples
-- use output/, which git ignores), so --plot creates the folders of its path as --output does
describe("run_op.lua --plot into a folder that does not exist yet", function()
  it("creates the folder and its parents, and writes the plot there", function()
    local dir = os.tmpname()
    os.remove(dir)
    local path = dir .. "/output/plots/sweep.svg"
    local status, _, err = run({ "allgather", "-b", "8K", "-e", "16K", "-w", "0", "-n", "1",
                                 "--plot", path })
    assert.equal(0, status, err)
    local svg = assert(io.open(path)):read("a")
    assert.matches("^<svg ", svg)
    os.remove(path)
    assert(lfs.rmdir(dir .. "/output/plots") and lfs.rmdir(dir .. "/output") and lfs.rmdir(dir))
  end)

  it("creates nothing when the run is refused", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert_usage({ "allgather", "--count", "0", "--plot", dir .. "/a/p.svg" }, "--count must be")
    assert.is_nil(lfs.attributes(dir))
  end)
end)
