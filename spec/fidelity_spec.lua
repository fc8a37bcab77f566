-- The fidelity table (shmemlab.fidelity, `make fidelity`): every listed case
-- is modeled live and must stay within tolerance_pct of its published figure.
-- The cases are steady HCCS / RDMA streams of 128 MiB; the spec runs exactly
-- the bench's experiment (it takes well under a second of wall time).
local lab = require("shmemlab")
local F = require("shmemlab.fidelity")

describe("fidelity table", function()
  local rows = F.run_all()

  for i, c in ipairs(F.cases) do
    it(c.name .. " is within " .. F.tolerance_pct .. "% of " .. c.published
       .. " " .. c.unit .. " (" .. c.source .. ")", function()
      local r = rows[i]
      assert.are.equal(c, r.case)
      assert.is_true(math.abs(r.err) <= F.tolerance_pct,
        string.format("%s: modeled %.3f %s, published %.3f, error %+.1f%%",
                      c.name, r.modeled, c.unit, c.published, r.err))
    end)
  end

  it("computes the error from the printed figures", function()
    for _, r in ipairs(rows) do
      assert.near((r.modeled - r.case.published) / r.case.published * 100, r.err, 1e-9)
    end
  end)

  it("is the table the docs show (make fidelity rewrites it)", function()
    local shown = {}
    local texts, files = require("spec.helpers.docs").texts()
    for _, path in ipairs(files) do
      for line in texts[path]:gmatch("[^\n]+") do shown[line] = true end
    end
    for line in F.markdown(rows):gmatch("[^\n]+") do
      assert.is_true(shown[line] == true, "the docs lack: " .. line)
    end
  end)

  it("names, for every case, a source of its SoC profile", function()
    for _, c in ipairs(F.cases) do
      assert.are.equal("string", type(F.source_text(c)), c.name .. " " .. c.source)
    end
    assert.is_true(#F.source_lines() >= 2)
  end)

  it("takes each HCCS efficiency of the profiles from the fit of its published family", function()
    for soc, source in pairs({ Ascend910B = "hixl_cs", Ascend910_93 = "hixl_a3" }) do
      local p = lab.soc(soc)
      local read = F.fit(F.published(soc, "get", "HCCS", source))
      local write = F.fit(F.published(soc, "put", "HCCS", source))
      assert.near(read / p.hccs_GBps, p.hccs_read_eff, 0.0005)
      assert.near(write / p.hccs_GBps, p.hccs_write_eff, 0.0005)
    end
  end)

  it("takes sdma_task_ns from the per-block cost of the hixl_cs sweep (READ and WRITE)", function()
    local _, read = F.fit(F.published("Ascend910B", "get", "HCCS", "hixl_cs"))
    local _, write = F.fit(F.published("Ascend910B", "put", "HCCS", "hixl_cs"))
    assert.near((read + write) / 2 * 1000, lab.soc("Ascend910B").sdma_task_ns, 10)
  end)

  it("claims no calibrating figure as a check: a family either fits or checks", function()
    for _, c in ipairs(F.cases) do
      local fits, checks = c.role:match("^fits") ~= nil, c.role:match("check") ~= nil
      assert.is_true(fits ~= checks, c.name .. ": " .. c.role)
    end
  end)
end)

describe("fidelity regressions (issue 22, defect 3: small transfers cost too much)", function()
  -- HIXL's A2 hixl_cs sweep at 16 KiB blocks: the lab was -27% (WRITE) and
  -- -31% (READ), paying about 1.7 us a block where the hardware pays 1.0
  for _, want in ipairs({ { "get", 10.265 }, { "put", 8.903 } }) do
    it("models the 16 KiB " .. want[1] .. " within 10% of " .. want[2] .. " GB/s", function()
      for _, c in ipairs(F.cases) do
        if c.source == "hixl_cs" and c.op == want[1] and c.desc_bytes == 16 * 1024 then
          assert.are.equal(want[2], c.published)
          assert.is_true(math.abs(F.error_pct(c, F.model(c))) <= 10)
          return
        end
      end
      error("no 16 KiB hixl_cs case for " .. want[1])
    end)
  end

  it("each of the five block sizes the issue names is a case", function()
    local n = 0
    for _, c in ipairs(F.cases) do
      for _, k in ipairs({ 16, 64, 256, 1024, 2048 }) do
        if c.source == "hixl_cs" and c.desc_bytes == k * 1024 then n = n + 1 end
      end
    end
    assert.are.equal(10, n)
  end)
end)

describe("fidelity regressions (issue 8, defect 1: put and get the wrong way round)", function()
  local function case(name)
    for _, c in ipairs(F.cases) do if c.name == name then return c end end
    error("no fidelity case " .. name)
  end

  it("streams a get faster than a put over A2 HCCS at every descriptor size", function()
    for _, mib in ipairs({ 1, 2, 4, 8 }) do
      local get = F.model(case("A2 HCCS get " .. mib .. " MiB"))
      local put = F.model(case("A2 HCCS put " .. mib .. " MiB"))
      assert.is_true(get > put, string.format("%d MiB: get %.3f, put %.3f", mib, get, put))
    end
  end)

  it("would fail the table with the pre-calibration efficiencies (read 0.90, write 0.95)", function()
    local old = { hccs_read_eff = 0.90, hccs_write_eff = 0.95 }
    local a2 = case("A2 HCCS put 8 MiB")
    local a3 = case("A3 HCCS put 8 MiB")
    assert.is_true(F.error_pct(a2, F.model(a2, { overrides = old })) > F.tolerance_pct)
    assert.is_true(F.error_pct(a3, F.model(a3, { overrides = old })) > F.tolerance_pct)
  end)
end)

describe("SoC profile sources", function()
  -- the figure lines of a profile file (`  key = value,` or `p.key = value`)
  -- before its sources table
  local function figure_lines(file)
    local out = {}
    for line in io.lines(file) do
      if line:match("sources = {") then break end
      local key = line:match("^%s+([%w_]+) = [^{]") or line:match("^p%.([%w_]+) = [^{]")
      if key and key ~= "name" and not line:match("^%s+[%w_]+ = \"") then
        out[#out + 1] = { key = key, line = line }
      end
    end
    return out
  end

  for _, soc in ipairs({ "Ascend910B", "Ascend910_93" }) do
    it(soc .. " names a source, or says assumed, beside every figure", function()
      local p = lab.soc(soc)
      local lines = figure_lines("lua/shmemlab/socs/" .. soc .. ".lua")
      assert.is_true(#lines >= 10)
      for _, l in ipairs(lines) do
        local tag = l.line:match("%-%- ([%w_]+)")
        local ok = tag and (p.sources[tag] or tag == "assumed" or tag == "unused"
                            or tag == "lab")
        assert.is_truthy(ok, soc .. ": " .. l.line)
      end
    end)
  end
end)
