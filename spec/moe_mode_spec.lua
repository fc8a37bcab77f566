-- MoE modes (--moe-mode) and the baseline families (--baseline): the mode follows the
-- tokens per PE unless given, and chooses the MoE ops' default baseline, the shipping
-- kernels of that mode; other ops keep HCCL's, and refuse a mode.
local runner = require("shmemlab.runner")
local cli = require("shmemlab.cli")

-- the resolved configuration of op name with opts
local function config(name, opts)
  return runner.config(runner.load_op(name), opts)
end

-- the usage error of a configuration, or nil
local function usage_of(name, opts)
  local ok, e = pcall(config, name, opts)
  if ok then return nil end
  assert.equal("usage", runner.kind(e))
  return tostring(e)
end

describe("MoE modes", function()
  for _, name in ipairs({ "dispatch", "combine" }) do
    it(name .. " is LL at or under LL_MAX_TOKENS tokens per PE and normal above", function()
      local at = config(name, { local_tokens = runner.LL_MAX_TOKENS, hidden = 64 })
      local above = config(name, { local_tokens = runner.LL_MAX_TOKENS + 1, hidden = 64 })
      assert.same({ "ll", "mc2" }, { at.moe_mode, at.baseline })
      assert.same({ "normal", "deepep" }, { above.moe_mode, above.baseline })
    end)

    it(name .. " takes the mode and the baseline as given", function()
      local c = config(name, { local_tokens = 8, hidden = 64, moe_mode = "normal" })
      assert.same({ "normal", "deepep" }, { c.moe_mode, c.baseline })
      c = config(name, { local_tokens = 4096, hidden = 64, moe_mode = "normal", baseline = "hccl" })
      assert.same({ "normal", "hccl" }, { c.moe_mode, c.baseline })
      c = config(name, { local_tokens = 4096, hidden = 64, baseline = "none" })
      assert.same({ "normal", "none" }, { c.moe_mode, c.baseline })
    end)

    it(name .. " follows a token count given as --count", function()
      assert.equal("normal", config(name, { count = 512 * 64, hidden = 64 }).moe_mode)
      assert.equal("ll", config(name, { count = 128 * 64, hidden = 64 }).moe_mode)
    end)
  end

  it("runs the MoE ops against the mode's shipping kernel by default", function()
    local r = runner.run("dispatch", { pes = 2, local_tokens = 8, hidden = 64, warmup = 0,
                                       iters = 1 })
    assert.equal("mc2_dispatch", r.baseline.op.name)
    r = runner.run("combine", { pes = 2, local_tokens = 8, hidden = 64, warmup = 0, iters = 1,
                                moe_mode = "normal" })
    assert.equal("deepep_combine", r.baseline.op.name)
    assert.equal(0, r.baseline.check.wrong)
  end)

  it("leaves the other ops on HCCL's baseline and refuses a mode there", function()
    assert.equal("hccl", config("allgather", {}).baseline)
    assert.is_nil(config("allgather", {}).moe_mode)
    assert.matches("--moe-mode applies to the MoE ops", usage_of("allgather", { moe_mode = "ll" }),
                   1, true)
  end)

  it("refuses an unknown mode or baseline", function()
    assert.matches("--moe-mode must be one of normal, ll, got 'fast'",
                   usage_of("dispatch", { moe_mode = "fast" }), 1, true)
    assert.matches("--baseline must be one of hccl, hccl-aiv, hccl-sdma, deepep, mc2, none, got 'nccl'",
                   usage_of("dispatch", { baseline = "nccl" }), 1, true)
    local o, err = cli.parse({ "dispatch", "--moe-mode", "fast" })
    assert.is_nil(o)
    assert.equal("--moe-mode must be normal or ll", err)
    o = assert(cli.parse({ "combine", "--moe-mode", "normal", "--baseline", "deepep" }))
    assert.same({ "normal", "deepep" }, { o.moe_mode, o.baseline })
  end)

  it("finds a family's baseline by the op's name, then (outside hccl) by its collective", function()
    local mine = { name = "my_dispatch", collective = "dispatch" }
    local path = runner.baseline_path(mine, "hccl")
    assert.matches("/hccl/my_dispatch.lua$", path)
    for _, family in ipairs({ "deepep", "mc2" }) do
      local p, found = runner.baseline_path(mine, family)
      assert.is_true(found, family)
      assert.matches("/" .. family .. "/dispatch.lua$", p)
      assert.equal(family, runner.load_baseline(mine, family).path:match("/(%w+)/dispatch%.lua$"))
    end
    assert.equal("x/y.lua", runner.baseline_path({ name = "a", baseline = "x/y.lua" }, "mc2"))
  end)
end)
