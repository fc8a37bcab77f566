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
       .. " " .. F.unit .. " (" .. c.source .. ")", function()
      local r = rows[i]
      assert.are.equal(c, r.case)
      assert.is_true(math.abs(r.err) <= F.tolerance_pct,
        string.format("%s: modeled %.3f %s, published %.3f, error %+.1f%%",
                      c.name, r.modeled, F.unit, c.published, r.err))
    end)
  end

  it("computes the error from the printed figures", function()
    for _, r in ipairs(rows) do
      assert.near((r.modeled - r.case.published) / r.case.published * 100, r.err, 1e-9)
    end
  end)

  it("is the table the README shows (make fidelity-readme rewrites it)", function()
    local readme = {}
    for line in io.lines("README.md") do readme[line] = true end
    for line in F.markdown(rows):gmatch("[^\n]+") do
      assert.is_true(readme[line] == true, "README lacks: " .. line)
    end
  end)

  it("names, for every case, a source of its SoC profile", function()
    for _, c in ipairs(F.cases) do
      assert.are.equal("string", type(F.source_text(c)), c.name .. " " .. c.source)
    end
    assert.is_true(#F.source_lines() >= 2)
  end)

  it("takes each HCCS efficiency of the profiles from the fit of its published family", function()
    for _, soc in ipairs({ "Ascend910B", "Ascend910_93" }) do
      local p = lab.soc(soc)
      local read = F.fit(F.published(soc, "get", "HCCS"))
      local write = F.fit(F.published(soc, "put", "HCCS"))
      assert.near(read / p.hccs_GBps, p.hccs_read_eff, 0.0005)
      assert.near(write / p.hccs_GBps, p.hccs_write_eff, 0.0005)
    end
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
