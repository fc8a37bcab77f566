-- MoE dispatch and combine (ops/dispatch.lua, ops/combine.lua), their HCCL-style
-- baselines (ops/hccl/), and the routing they share (shmemlab.moe): every
-- operator on 2, 3, 8 and 16 PEs, fp16 and bf16, every routing, odd and single
-- token counts, rows that are not whole 32-byte blocks, inputs beyond the HCCL
-- buffer; zero wrong elements, frames present or explained; the routing tables'
-- counts, determinism and skew; a corrupted element is caught.

local helpers = require("spec.helpers.ops")
local moe = require("shmemlab.moe")

local FIX = "spec/fixtures/"

-- one measured run of op and its baseline, small and quick
local run = helpers.run

-- op and baseline both exact, frames present or explained
local assert_good = helpers.assert_exact

-- the resolved routing of run options
local function routes(opts)
  return moe.routes(moe.config(opts))
end

local function sum(t, first, last)
  local s = 0
  for i = first, last do s = s + t[i] end
  return s
end

describe("MoE routing (shmemlab.moe)", function()
  for _, routing in ipairs({ "uniform", "lognormal", "zipf" }) do
    for _, pes in ipairs({ 2, 3, 8, 16 }) do
      it(routing .. " on " .. pes .. " PEs: counts add up and the layout is a bijection", function()
        local R = routes({ pes = pes, routing = routing, local_tokens = 37, topk = 2 })
        local T, K = 37, 2
        assert.are.equal(T * K * pes, sum(R.recv, 0, pes - 1))
        assert.are.equal(T * K * pes, sum(R.expert_rows, 0, R.experts - 1))
        assert.are.equal(T * K * pes, R.pe_stats.sum)
        for p = 0, pes - 1 do
          assert.are.equal(T * K, sum(R.send[p], 0, pes - 1))
          for t = 0, T - 1 do                     -- topk distinct experts per token
            local seen = {}
            for k = 0, K - 1 do
              local e = R.expert[p][t * K + k + 1]
              assert.is_true(e >= 0 and e < R.experts)
              assert.is_nil(seen[e])
              seen[e] = true
              assert.are.equal(e // (R.experts // pes), R.dest[p][t * K + k + 1])
            end
          end
        end
        local used = {}                           -- every (PE, slot) received once
        for p = 0, pes - 1 do
          for i = 1, T * K do
            local d, slot = R.dest[p][i], R.slot[p][i]
            assert.is_true(slot >= 0 and slot < R.recv[d])
            local key = d * 100000 + slot
            assert.is_nil(used[key])
            used[key] = true
          end
        end
      end)
    end
  end

  it("is deterministic: same seed, same tables; another seed, other tables", function()
    for _, routing in ipairs({ "uniform", "lognormal", "zipf" }) do
      local a = routes({ pes = 8, routing = routing, seed = 7 })
      local b = routes({ pes = 8, routing = routing, seed = 7 })
      local c = routes({ pes = 8, routing = routing, seed = 8 })
      assert.are.same(a.expert, b.expert)
      assert.are.same(a.slot, b.slot)
      assert.are.equal(moe.summary(a), moe.summary(b))
      assert.are_not.same(a.expert, c.expert)
    end
  end)

  it("lands rows by source PE, then token, then k", function()
    local R = routes({ pes = 3, routing = "uniform", local_tokens = 9 })
    for d = 0, 2 do
      local prev = -1
      for p = 0, 2 do
        for i = 1, 9 * 2 do
          if R.dest[p][i] == d then
            assert.is_true(R.slot[p][i] > prev)
            prev = R.slot[p][i]
          end
        end
      end
    end
  end)

  it("uniform picks and slots are pinned (the generator's values, bit for bit)", function()
    local R = routes({ pes = 4, routing = "uniform", local_tokens = 3, topk = 8, experts = 64,
                       seed = 5 })
    assert.are.same({ 32, 6, 35, 0, 10, 14, 40, 28, 60, 10, 15, 2, 59, 7, 36, 58, 26, 62, 39, 24,
                      53, 22, 63, 20 }, R.expert[3])
    assert.are.same({ 12, 17, 13, 18, 19, 20, 14, 23, 20, 21, 22, 23, 21, 24, 15, 22, 24, 23, 16,
                      25, 24, 26, 25, 27 }, R.slot[3])
  end)

  it("uniform picks (drawn by the core) are the weighted draw's with every weight 1", function()
    local function draw(rng, E, K, out)           -- moe.lua's draw, weights 1, in Lua
      local taken = {}
      for _ = 1, K do
        local total, last = 0, nil
        for e = 1, E do if not taken[e] then total = total + 1; last = e end end
        local u, pick = rng.uniform() * total, last
        for e = 1, E do
          if not taken[e] then
            u = u - 1
            if u < 0 then pick = e; break end
          end
        end
        taken[pick] = true
        out[#out + 1] = pick - 1
      end
    end
    for _, c in ipairs({ { pes = 3, local_tokens = 7, topk = 5, experts = 6, seed = -5 },
                         { pes = 1, local_tokens = 40, topk = 3, experts = 3, seed = 0 },
                         { pes = 4, local_tokens = 9, topk = 8, experts = 256,
                           seed = math.maxinteger },
                         { pes = 2, local_tokens = 50, topk = 1, experts = 2, seed = 9 } }) do
      local R, rng = routes(c), moe.rng(c.seed)
      for p = 0, c.pes - 1 do
        local want = {}
        for _ = 1, c.local_tokens do draw(rng, c.experts, c.topk, want) end
        assert.are.same(want, R.expert[p])
      end
    end
  end)

  it("makes dest when first read; the core's counts are the rows' (route_count)", function()
    local R = routes({ pes = 4, routing = "zipf", local_tokens = 21, topk = 3, experts = 16 })
    assert.is_nil(rawget(R, "dest"))
    local rows, send = {}, {}
    for e = 0, 15 do rows[e] = 0 end
    for p = 0, 3 do
      for d = 0, 3 do send[d] = 0 end
      for i = 1, 21 * 3 do
        local e = R.expert[p][i]
        assert.are.equal(e // 4, R.dest[p][i])
        rows[e], send[e // 4] = rows[e] + 1, send[e // 4] + 1
      end
      assert.are.same(send, R.send[p])
    end
    assert.are.same(rows, R.expert_rows)
    local core = require("shmemlab").core
    assert.has_error(function() core.route_count({ 0, 16 }, 2, 16, 4) end,
                     "route_count: row 2 is not an expert id in [0, 16)")
    assert.has_error(function() core.route_count({ 0, -1 }, 2, 16, 4) end,
                     "route_count: row 2 is not an expert id in [0, 16)")
  end)

  it("groups rows by destination when first read: order and pos invert each other", function()
    local R = routes({ pes = 3, routing = "uniform", local_tokens = 9 })
    assert.is_nil(rawget(R, "order"))            -- not made until read
    for p = 0, 2 do
      local last = {}
      for i = 1, 9 * 2 do
        local d, at = R.dest[p][i], R.pos[p][i]
        assert.are.equal(i, R.order[p][at + 1])
        assert.is_true(at >= R.send_off[p][d] and at < R.send_off[p][d] + R.send[p][d])
        assert.is_true(at > (last[d] or -1))     -- a group keeps row order
        last[d] = at
      end
    end
    assert.is_not_nil(rawget(R, "order"))
  end)

  it("zipf is more skewed than uniform (max/mean), lognormal too", function()
    local u = routes({ pes = 8, routing = "uniform" })
    local z = routes({ pes = 8, routing = "zipf" })
    local l = routes({ pes = 8, routing = "lognormal" })
    assert.is_true(z.expert_stats.imbalance > u.expert_stats.imbalance)
    assert.is_true(z.pe_stats.imbalance > u.pe_stats.imbalance)
    assert.is_true(l.expert_stats.imbalance > u.expert_stats.imbalance)
    assert.is_true(z.expert_stats.imbalance > 2)
  end)

  it("reads a routes file", function()
    local R = routes({ pes = 3, routing = "file", routes_file = FIX .. "routes_3pe.txt" })
    assert.are.equal(5, R.tokens)
    assert.are.equal(2, R.topk)
    assert.are.equal(6, R.experts)
    assert.are.same({ 0, 3, 2, 3, 1, 0, 3, 1, 0, 2 }, R.expert[0])
    assert.are.equal(0, R.send[0][2])
    assert.are.equal(5, R.send[0][1])
    local R2 = routes({ pes = 2, routing = "file", routes_file = FIX .. "routes_2pe_top3.txt" })
    assert.are.equal(3, R2.topk)
    assert.are.same({ 2, 3, 0, 1, 3, 2, 0, 1, 2 }, R2.expert[1])
  end)

  it("writes a routes file that reads back as the same tables", function()
    local R = routes({ pes = 3, routing = "zipf", local_tokens = 6, topk = 3, seed = 5 })
    local path = os.tmpname()
    moe.write_routes(path, R)
    local F = routes({ pes = 3, routing = "file", routes_file = path })
    os.remove(path)
    assert.are.same(R.expert, F.expert)
    assert.are.same(R.slot, F.slot)
  end)

  it("takes its sizes from local_tokens/hidden, shape, or count // hidden, and writes them back", function()
    local c = { pes = 2, count = 4096, hidden = 64 }
    local cfg = moe.config(c)
    assert.are.equal(64, cfg.tokens)
    assert.are.same({ 64, 64 }, c.shape)
    assert.are.equal(4096, c.count)
    assert.are.equal(5, moe.config({ pes = 2, shape = { 5, 8 } }).tokens)
    assert.are.equal(3, moe.config({ pes = 2, shape = { 5, 8 }, local_tokens = 3 }).tokens)
    local d = moe.config({ pes = 2 })
    assert.are.equal(256, d.tokens)
    assert.are.equal(1024, d.hidden)
    assert.are.equal(2, d.topk)
    assert.are.equal(4, d.experts)
  end)

  it("rejects what it cannot route, with the reason", function()
    local function err(opts)
      local ok, e = pcall(moe.config, opts)
      assert.is_false(ok)
      return tostring(e)
    end
    assert.matches("multiple of the PE count", err({ pes = 3, experts = 8 }), 1, true)
    assert.matches("exceeds the number of experts", err({ pes = 2, topk = 5 }), 1, true)
    assert.matches("unknown routing", err({ pes = 2, routing = "gauss" }), 1, true)
    assert.matches("describes 3 PEs, the machine has 8",
                   err({ pes = 8, routing = "file", routes_file = FIX .. "routes_3pe.txt" }), 1, true)
    assert.matches("needs routes_file", err({ pes = 2, routing = "file" }), 1, true)
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("pe 0\n0 1 1\n")
    f:close()
    local e = err({ pes = 1, routing = "file", routes_file = path })
    os.remove(path)
    assert.matches("picks expert 1 twice", e, 1, true)
  end)

  it("prints a summary by itself and in the ops' describe", function()
    local text = moe.summary({ pes = 4, routing = "zipf", local_tokens = 16 })
    assert.matches("routing zipf", text, 1, true)
    assert.matches("rows received per PE:", text, 1, true)
    assert.matches("rows per expert:", text, 1, true)
    assert.matches("imbalance (max/mean)", text, 1, true)
    local r = run("dispatch", { pes = 2, local_tokens = 3, hidden = 16 })
    assert.matches("rows received per PE:", r.shmem.describe.routing, 1, true)
    assert.matches("rows received per PE:", r.baseline.describe.routing, 1, true)
  end)
end)

describe("MoE operators against their HCCL baselines", function()
  for _, name in ipairs({ "dispatch", "combine" }) do
    describe(name, function()
      for _, pes in ipairs({ 2, 3, 8, 16 }) do
        for _, dtype in ipairs({ "fp16", "bf16" }) do
          for _, routing in ipairs({ "uniform", "lognormal", "zipf" }) do
            -- 40 elements (80 bytes) are not whole 32-byte blocks; 64 are
            local hidden = routing == "lognormal" and 64 or 40
            local what = string.format("%s %d PEs %s %s, 7 tokens x %d", name, pes, dtype,
                                       routing, hidden)
            it("is exact: " .. what, function()
              local r = run(name, { pes = pes, dtype = dtype, routing = routing,
                                    local_tokens = 7, hidden = hidden, topk = 2 })
              assert_good(r, what)
            end)
          end
          it("is exact with one token per PE: " .. pes .. " PEs " .. dtype, function()
            local r = run(name, { pes = pes, dtype = dtype, local_tokens = 1, hidden = 33,
                                  routing = "zipf" })
            assert_good(r, "one token")
          end)
        end
      end

      for _, dtype in ipairs({ "fp16", "bf16" }) do
        it("is exact with a routes file: 3 PEs " .. dtype, function()
          local r = run(name, { pes = 3, dtype = dtype, routing = "file", hidden = 24,
                                routes_file = FIX .. "routes_3pe.txt" })
          assert_good(r, "routes_3pe")
        end)
        it("is exact with a routes file: 2 PEs, topk 3 " .. dtype, function()
          local r = run(name, { pes = 2, dtype = dtype, routing = "file", hidden = 50,
                                routes_file = FIX .. "routes_2pe_top3.txt" })
          assert_good(r, "routes_2pe_top3")
        end)
      end

      it("puts rows where the layout says, checked by hand on the 3-PE fixture", function()
        local H = 24
        local r = run(name, { pes = 3, routing = "file", hidden = H,
                              routes_file = FIX .. "routes_3pe.txt" })
        assert_good(r, "by hand")
        local s = r.shmem.state
        -- PE 0 sends PE 1 (experts 2, 3) its rows (t0 k1) (t1 k0) (t1 k1) (t3 k0) (t4 k1):
        -- slots 0..4 of PE 1; token 1 picked both experts of PE 1 (slots 1 and 2)
        if name == "dispatch" then
          local tok1 = s.input:on(0):read(1 * H, H)
          assert.are.same(tok1, s.recv:on(1):read(1 * H, H))
          assert.are.same(tok1, s.recv:on(1):read(2 * H, H))
          assert.are.same(s.input:on(0):read(4 * H, H), s.recv:on(1):read(4 * H, H))
        else
          local e1 = s.expert_out:on(1):read(1 * H, H)
          local e2 = s.expert_out:on(1):read(2 * H, H)
          local out = s.output:on(0):read(1 * H, H)
          for j = 1, H do assert.are.equal(e1[j] + 0.5 * e2[j], out[j]) end
        end
      end)

      it("is exact with topk 4 and more experts", function()
        local r = run(name, { pes = 4, dtype = "bf16", local_tokens = 9, hidden = 48, topk = 4,
                              experts = 16, routing = "lognormal" })
        assert_good(r, "topk 4")
      end)

      it("beyond the HCCL buffer: the baseline launches more than once per iteration", function()
        for _, pes in ipairs({ 3, 8 }) do
          local r = run(name, { pes = pes, local_tokens = 33, hidden = 200, routing = "zipf",
                                overrides = { hccl_buffer_bytes = 8192 } })
          assert_good(r, "hccl_buffer_bytes 8192")
          helpers.assert_split(r)
        end
      end)

      it("at the default sizes on 8 PEs", function()
        local r = run(name, { pes = 8 })
        assert_good(r, "defaults")
        assert.are.equal("M=256, N=1024", r.record.shape)
        assert.are.equal(256 * 1024 * 2, r.record.data_bytes)
        assert.is_true(r.metrics.summary.latency_us > 0)
      end)

      it("catches a corrupted output element, in the op and in the baseline", function()
        local r = run(name, { pes = 3, local_tokens = 5, hidden = 40 })
        for _, res in ipairs({ r.shmem, r.baseline }) do
          local s = res.state
          local out = s.recv or s.output
          assert.are.equal(0, (res.op.check(res.machine, r.config, s)))
          local v = out:on(1):read(17)
          out:on(1):sub(17, 1):fill({ v + 1 })
          local wrong, at, pe, want, got = res.op.check(res.machine, r.config, s)
          assert.are.equal(1, wrong)
          assert.are.equal(17, at)
          assert.are.equal(1, pe)
          assert.are.equal(v, want)
          assert.are.equal(v + 1, got)
        end
      end)
    end)
  end
end)
