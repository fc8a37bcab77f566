-- The docs (issue 27): README.md is a short front door and doc/*.md the manual, one
-- file per subject; no doc narrates the project's history (no commit hashes of its
-- own, no "this session"); the measurement tables are written by the make target that
-- measures them and fail here when edited by hand or when their bench has changed.
local docs = require("spec.helpers.docs")
local measured = require("scripts.measured_block")

-- text with the generated blocks taken out (they print fingerprints of their own):
-- the fidelity, validation and measured blocks, each between its markers
local function prose(text)
  text = text:gsub("<!%-%- fidelity:begin.-<!%-%- fidelity:end %-%->", "")
  text = text:gsub("<!%-%- validation:begin.-<!%-%- validation:end %-%->", "")
  return (text:gsub("<!%-%- measured:%w+:begin.-<!%-%- measured:%w+:end %-%->", ""))
end

-- the words of 7-40 hex digits, with a digit and a letter, that are not a source's
-- pin ("repo path @ 643bfb7", the form the SoC profiles cite upstream commits in)
local function hashes(text)
  local out = {}
  for at, word in text:gmatch("()(%x+)") do
    local before, after = text:sub(at - 1, at - 1), text:sub(at + #word, at + #word)
    if #word >= 7 and #word <= 40 and word:find("%d") and word:find("%a")
       and not before:find("[%w_]") and not after:find("[%w_]")
       and text:sub(at - 2, at - 1) ~= "@ " then
      out[#out + 1] = word
    end
  end
  return out
end

-- phrases of a lab notebook, not of a manual (lower case)
local HISTORY = { "this session", "session's", "last session", "this morning", "this afternoon",
                  "this evening", "yesterday", "earlier build", "previous build", "older solver",
                  "before issue %d", "since issue %d", "in issue %d", "as of commit" }

local function narrations(text)
  local out, lower = {}, text:lower()
  for _, p in ipairs(HISTORY) do
    if lower:find(p) then out[#out + 1] = p end
  end
  return out
end

describe("the docs", function()
  local texts, files = docs.texts()

  it("are a front door of at most about 400 lines and a manual of several files", function()
    local n = select(2, texts["README.md"]:gsub("\n", ""))
    assert.is_true(n <= 420, "README.md has " .. n .. " lines")
    assert.is_true(#files >= 10)
  end)

  it("open each manual page with a title and what a reader comes for", function()
    for _, path in ipairs(files) do
      assert.matches("^# [^\n]+\n\n[%w`][^\n]+\n", texts[path], nil, path)
    end
  end)

  it("link every page of the manual from the README's map, and link only files that exist", function()
    for _, path in ipairs(files) do
      if path ~= "README.md" then
        assert.truthy(texts["README.md"]:find("](" .. path .. ")", 1, true), path .. " is not in the map")
      end
      local dir = path:match("^(.*)/") or "."
      for target in prose(texts[path]):gsub("<!%-%-.-%-%->", ""):gmatch("%]%(([^)#:]+)[)#]") do
        assert.truthy(io.open(dir .. "/" .. target), path .. " links " .. target .. ", which does not exist")
      end
    end
  end)

  it("state what is true now: no commit hashes and no session narratives", function()
    for _, path in ipairs(files) do
      local text = prose(texts[path])
      assert.same({}, hashes(text), path .. " names commits")
      assert.same({}, narrations(text), path .. " narrates history")
    end
  end)

  it("are checked for history by a rule that could fail and spares generated blocks", function()
    assert.same({ "c508a39", "783c3b4" }, hashes("lone-flow cuts of c508a39, the 783c3b4 column"))
    assert.same({}, hashes("include/ @ 643bfb7; 2216605777920 bytes; Ascend910B; deadbeef; 0x100000001b3"))
    assert.same({ "this session", "session's" }, narrations("measured in This session's runs"))
    local generated = "<!-- validation:begin (x) -->\nInputs fingerprint 96e92ee11fbd8bf2\n"
      .. "<!-- validation:end -->\n"
    assert.same({}, hashes(prose(generated)))
    assert.same({ "96e92ee11fbd8bf2" }, hashes(generated))
  end)
end)

describe("the measurement tables of the docs", function()
  local texts, files = docs.texts()
  local blocks = {}
  for _, path in ipairs(files) do
    for _, b in ipairs(measured.parse(texts[path])) do
      assert.is_nil(blocks[b.name], "two measured blocks " .. b.name)
      b.path, blocks[b.name] = path, b
    end
  end

  for name, spec in pairs(measured.BLOCKS) do
    it(name .. " is written by " .. spec.target .. ", with the machine and the date", function()
      local b = assert(blocks[name], "no doc holds the measured block " .. name)
      assert.is_not_nil(b.body, b.path .. ": " .. name .. " was never measured: run " .. spec.target)
      assert.matches("on [^\n]+ cores, load average [^\n]+, %d%d%d%d%-%d%d%-%d%d %d%d:%d%d UTC%.",
                     texts[b.path]:match(measured.begin_marker(name):gsub("%p", "%%%0") .. "\n([^\n]+)"))
      assert.equal(measured.checksum(b.body), b.checksum,
                   b.path .. ": the " .. name .. " table was edited by hand: run " .. spec.target)
      assert.equal(measured.fingerprint(spec.inputs), b.fingerprint,
                   b.path .. ": the " .. name .. " table is stale (its bench changed): run " .. spec.target)
    end)
  end

  it("fails a table edited by hand and one whose bench has changed", function()
    local body = "a 1.00x\n"
    local text = measured.begin_marker("engine") .. "\nMeasured by `x` on y, 1 cores, load average 0 at "
      .. "the start, 2026-01-01 00:00 UTC. Bench fingerprint 0000000000000000, table checksum "
      .. measured.checksum(body) .. ".\n\n```\n" .. body .. "```\n" .. measured.end_marker("engine")
    local b = measured.parse(text)[1]
    assert.equal(measured.checksum(b.body), b.checksum)
    assert.are_not.equal(measured.checksum(b.body:gsub("1.00x", "0.50x")), b.checksum)
    assert.are_not.equal(measured.fingerprint(measured.BLOCKS.engine.inputs), b.fingerprint)
  end)
end)
