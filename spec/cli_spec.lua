-- run_op.lua's command line: defaults, options, a sweep, JSON, output folders,
-- exit statuses and usage errors (in process, through shmemlab.cli.main).
local cli = require("shmemlab.cli")
local cjson = require("cjson")
local lfs = require("lfs")

local run = require("spec.helpers.cli").run

local tmpdir = require("spec.helpers.cli").tmpdir

describe("run_op.lua", function()
  it("runs allgather with the documented defaults", function()
    local status, out = run({ "allgather" })
    assert.equal(0, status)
    assert.matches("Ascend910B, 8 PEs", out, 1, true)
    assert.matches("dtype int32", out, 1, true)
    assert.matches("warmup 10, iters 40", out, 1, true)
    assert.matches("baseline hccl", out, 1, true)
    assert.matches("prof PE 0", out, 1, true)
    assert.matches("op_name: allgather\n", out, 1, true)
    assert.matches("n_pes: 8\n", out, 1, true)
    assert.matches("baseline: HCCL AllGather (emulated AIV orchestration)", out, 1, true)
    assert.matches("check shmemlab allgather: 0 wrong elements", out, 1, true)
    assert.matches("%[PERF%] pe=7 e2e_us=", out)
    assert.matches("BlockID   FrameID   Cycles", out, 1, true)
    assert.matches("signal_or_barrier_wait", out, 1, true)
    assert.matches("\nverdict: PASS", out, 1, true)
  end)

  it("takes every option", function()
    local o = assert(cli.parse({ "p2p", "--pes", "3", "--soc", "Ascend950", "--dtype", "fp16",
      "--count", "100", "--block-dim", "4", "-w", "2", "-n", "3", "--baseline", "none",
      "--prof-pe", "1", "--root", "2", "--reduce", "max", "--src", "2", "--dst", "0",
      "--mode", "get", "--tokens", "8", "--hidden", "64", "--topk", "2", "--experts", "6",
      "--routing", "zipf", "--routes", "r.txt", "--set", "hccs_GBps=14", "--ub-bytes", "64K",
      "--sym-bytes", "1M", "--output", "out", "--json", "--plot", "p.svg" }))
    assert.same({ op = "p2p", pes = 3, soc = "Ascend950", dtype = "fp16", count = 100,
      block_dim = 4, warmup = 2, iters = 3, baseline = "none", prof_pe = 1, root = 2,
      reduce = "max", src_pe = 2, dst_pe = 0, mode = "get", local_tokens = 8, hidden = 64,
      topk = 2, experts = 6, routing = "zipf", routes_file = "r.txt",
      overrides = { hccs_GBps = 14 }, ub_bytes = 65536, sym_bytes = 1048576,
      output = "out", json = true, plot = "p.svg" }, o)
    o = assert(cli.parse({ "allgather", "--shape", "1024,8", "--warmup=1", "--iters", "2",
                           "-b", "8K", "-e", "64M", "-f", "4" }))
    assert.same({ 1024, 8 }, o.shape)
    assert.equal(1, o.warmup)
    assert.equal(8192, o.minbytes)
    assert.equal(64 * 1024 * 1024, o.maxbytes)
    assert.equal(4, o.factor)
  end)

  it("uses --shape as M*N elements and prints it in the record", function()
    local status, out = run({ "allgather", "--pes", "2", "--shape", "64,8", "-w", "1", "-n", "1" })
    assert.equal(0, status)
    assert.matches("shape: M=64, N=8\n", out, 1, true)
    assert.matches("count 512 per PE", out, 1, true)
    assert.matches("data_bytes: 4096\n", out, 1, true)
  end)

  it("sweeps sizes and prints one row per size in nccl-tests' manner", function()
    local status, out = run({ "allgather", "--pes", "2", "-b", "1K", "-e", "4K", "-f", "2",
                              "-w", "1", "-n", "1" })
    assert.equal(0, status)
    assert.matches("#%s+size%s+count%s+type%s+redop%s+root |%s+kernel_us%s+bound_us%s+eff_%%%s+"
      .. "algbw%s+busbw%s+#wrong |", out)
    local rows = {}
    for size, count in out:gmatch("\n%s+(%d+)%s+(%d+)%s+int32%s+none%s+%-1 |") do
      rows[#rows + 1] = { size, count }
    end
    assert.same({ { "1024", "256" }, { "2048", "512" }, { "4096", "1024" } }, rows)
    assert.matches("%d%.%d%%\n", out)
  end)

  it("names the reduction and the root in a sweep's rows, as nccl-tests does", function()
    for _, case in ipairs({ { { "allreduce", "--reduce", "max" }, "max", "-1" },
                           { { "reduce_scatter" }, "sum", "-1" },
                           { { "broadcast", "--root", "1" }, "none", "1" } }) do
      local args = case[1]
      for _, a in ipairs({ "--pes", "2", "-b", "1K", "-e", "1K", "-w", "0", "-n", "1" }) do
        args[#args + 1] = a
      end
      local status, out = run(args)
      assert.equal(0, status, out)
      assert.matches("\n%s+1024%s+256%s+int32%s+" .. case[2] .. "%s+" .. case[3]:gsub("%-", "%%-")
                     .. " |", out)
    end
  end)

  it("writes one valid JSON document with --json", function()
    local status, out = run({ "allgather", "--pes", "2", "-b", "1K", "-e", "2K", "-w", "1",
                              "-n", "1", "--json" })
    assert.equal(0, status)
    local doc = cjson.decode(out)
    assert.equal("allgather", doc.op)
    assert.is_string(doc.version)
    assert.equal(2, doc.configuration.pes)
    assert.equal(2, #doc.rows)
    assert.equal(1024, doc.rows[1].size)
    assert.equal(0, doc.rows[2].shmem.wrong)
    assert.equal(0, doc.rows[2].baseline.wrong)
    assert.equal(2, #doc.rows[1].per_pe)
  end)

  it("writes msprof-style folders, result.csv, records and checked timelines", function()
    local dir = tmpdir()
    local status, out = run({ "allgather", "--pes", "3", "--count", "2048", "--block-dim", "3",
                              "-w", "2", "-n", "3", "--output", dir })
    assert.equal(0, status)
    assert.matches("output written under", out, 1, true)
    for pe = 0, 2 do
      local folder = string.format("%s/PROF_000001_%d/mindstudio_profiler_output", dir, pe)
      local csv, trace
      for f in lfs.dir(folder) do
        if f:match("^task_time_.*%.csv$") then csv = folder .. "/" .. f end
        if f:match("^msprof_.*%.json$") then trace = folder .. "/" .. f end
      end
      assert.is_string(csv)
      local lines = {}
      for l in io.lines(csv) do lines[#lines + 1] = l end
      assert.equal("Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),"
                   .. "task_start(us),task_stop(us)", lines[1])
      assert.equal(1 + 5, #lines)                       -- 2 warm-up + 3 measured launches
      assert.matches("^" .. pe .. ",allgather,AI_VECTOR_CORE,", lines[2])   -- msprof's type
      local t = cjson.decode(io.open(trace):read("a"))        -- an array, as msprof's
      assert.is_nil(t.traceEvents)
      local procs = 0
      for _, e in ipairs(t) do
        if e.ph == "M" and e.name == "process_name" then procs = procs + 1 end
        if e.ph == "X" then assert.equal(pe, e.pid) end
      end
      assert.equal(1, procs)
    end
    local merged = cjson.decode(io.open(dir .. "/timeline.json"):read("a"))
    local procs, threads = {}, {}
    for _, e in ipairs(merged.traceEvents) do
      if e.ph == "M" and e.name == "process_name" then procs[e.pid] = e.args.name end
      if e.ph == "M" and e.name == "thread_name" then
        threads[math.tointeger(e.pid) .. "/" .. e.args.name] = true
      end
    end
    assert.same({ [0] = "PE 0", [1] = "PE 1", [2] = "PE 2" }, procs)
    for pe = 0, 2 do
      for b = 0, 2 do assert.is_true(threads[pe .. "/block " .. b], pe .. "/block " .. b) end
    end
    local result = io.open(dir .. "/result.csv"):read("a")
    assert.matches("^DataSize,Count,Dtype,Npus,Blocks,Time%(us%)\n8192,2048,int32,3,3,%d", result)
    assert.matches("op_name: allgather", io.open(dir .. "/record.txt"):read("a"), 1, true)
    assert.equal("allgather", cjson.decode(io.open(dir .. "/record.json"):read("a")).op_name)
    assert.is_truthy(lfs.attributes(dir .. "/hccl/PROF_000002_0"))
    local perftest = io.open(dir .. "/perftest.csv"):read("a")
    assert.matches("^DataSize/B,Npus,Blocks,UBsize/KB,Bandwidth/GB/s %(1000%),Bandwidth/GiB/s "
                   .. "%(1024%),CoreMaxTime/us,SingleCoreTime/us,SingleCoreTime/us,"
                   .. "SingleCoreTime/us\n8192,3,3,190", perftest)
  end)

  it("draws the sweep as an SVG with both series", function()
    local path = os.tmpname()
    local status = run({ "allgather", "--pes", "2", "-b", "1K", "-e", "4K", "-w", "1", "-n", "1",
                         "--plot", path })
    assert.equal(0, status)
    local svg = io.open(path):read("a")
    os.remove(path)
    assert.matches("^<svg", svg)
    assert.matches("shmemlab allgather", svg, 1, true)
    assert.matches("HCCL AllGather", svg, 1, true)
    assert.matches("bus bandwidth (GB/s)", svg, 1, true)
    assert.matches("log scale", svg, 1, true)
  end)

  it("exits 1 when elements are wrong, and says which", function()
    local status, out = run({ "spec/fixtures/ops/stale_copy.lua", "--pes", "2", "-w", "0", "-n", "1" })
    assert.equal(1, status)
    assert.matches("check shmemlab stale_copy: 8192 wrong elements; first at index 0 on PE 0: "
                   .. "expected 1, got 0", out, 1, true)
  end)

  it("fails a run whose operator leaves a frame unexplained", function()
    local status, _, err = run({ "spec/fixtures/ops/no_reason.lua", "--pes", "2", "-w", "0",
                                 "-n", "1", "--baseline", "none" })
    assert.equal(3, status)                              -- the run failed: exit 3
    assert.matches("run_op.lua: operator no_reason: frame 4 (finalize) unused and no reason "
                   .. "given", err, 1, true)
  end)

  it("is the usage the docs show (make usage-readme)", function()
    local docs, shown = require("spec.helpers.docs"), 0
    local texts, files = docs.texts()
    for _, path in ipairs(files) do
      if texts[path]:find("```\n" .. cli.usage .. "```\n", 1, true) then shown = shown + 1 end
    end
    assert.equal(1, shown)
  end)

  it("prints what each block of the docs that starts with '$ lua run_op.lua' shows", function()
    local out = require("spec.helpers.cli").sh("lua5.4 scripts/outputs_readme.lua --check "
                                               .. require("spec.helpers.docs").args())
    assert.matches("are current\nexit=0", out, 1, true)
  end)

  it("lists the operators and prints help", function()
    local status, out = run({ "--list" })
    assert.equal(0, status)
    assert.matches("allgather%s+allgather%s+baseline hccl ", out)
    assert.matches("\ndispatch%s+dispatch%s+baseline hccl,[%w,]*mc2", out)
    status, out = run({ "--help" })
    assert.equal(0, status)
    assert.matches("^usage: lua run_op.lua OP", out)
  end)

  local usage_errors = {
    { { "allgather", "--bogus" }, "unknown option '--bogus'" },     -- argparse's wording
    { { "allgather", "--pes" }, "option '--pes' requires an argument" },
    { { "allgather", "--pes", "x" }, "option --pes needs an integer, got 'x'" },
    { { "allgather", "-b", "8Q", "-e", "1M" }, "option -b needs a size like 8K or 64M, got '8Q'" },
    { { "allgather", "-b", "8K" }, "a sweep needs both -b and -e" },
    { { "allgather", "-b", "8M", "-e", "8K" }, "-b must not exceed -e" },
    { { "allgather", "-b", "8K", "-e", "8M", "-f", "1" }, "-f must be at least 2" },
    { { "allgather", "--baseline", "nccl" },
      "--baseline must be hccl, hccl-aiv, hccl-sdma, deepep, mc2 or none" },
    { { "allgather", "--shape", "8" }, "option --shape needs M,N, got '8'" },
    { { "allgather", "--set", "x" }, "option --set needs KEY=VALUE, got 'x'" },
    { { "allgather", "extra" }, "unexpected argument 'extra'" },
    { {}, "no operator given" },
    { { "nosuchop" }, "unknown operator 'nosuchop'" },
    { { "allgather", "--dtype", "fp64" }, "does not support dtype fp64" },
    { { "allgather", "--soc", "Ascend999" }, "unknown SoC 'Ascend999'" },
  }
  for _, case in ipairs(usage_errors) do
    it("rejects " .. table.concat(case[1], " ") .. " with one line and exit 2", function()
      local status, out, err = run(case[1])
      assert.equal(2, status)
      assert.equal("", out)
      assert.matches("^run_op.lua: [^\n]*%(lua run_op.lua %-%-help lists the options%)\n$", err)
      assert.matches(case[2], err, 1, true)
    end)
  end
end)
