-- `make rockspec-check` fails when the lists below differ from core/*.c,
-- lua/shmemlab/**/*.lua and ops/**/*.lua: keep them in sync when adding or removing files.
-- Build and install with Lua 5.4 (Debian's luarocks defaults to 5.1):
--   luarocks --lua-version 5.4 make --deps-mode=none shmemlab-scm-1.rockspec
rockspec_format = "3.0"
package = "shmemlab"
version = "scm-1"

source = {
  url = "git+https://example.invalid/shmemlab.git",
}

description = {
  summary = "Operator lab for SHMEM communication operators on emulated Ascend NPUs",
  detailed = [[
shmemlab is an operator lab for SHMEM-style communication operators on
emulated Ascend NPU clusters: a C11 engine on a deterministic virtual clock
(shmemlab.core), a Lua facade (shmemlab), operators and HCCL-style baselines
in ops/, msprof-style timing, cycle-profiling frames and mssanitizer-style checks.
]],
  license = "MIT",
}

dependencies = {
  "lua >= 5.4, < 5.5",
  "argparse",        -- shmemlab.cli (Debian: lua-argparse)
  "luafilesystem",   -- lfs (Debian: lua-filesystem)
}

test_dependencies = {
  "busted",
}

build = {
  type = "builtin",
  modules = {
    ["shmemlab.core"] = {
      sources = {
        "core/amo.c",
        "core/chain.c",
        "core/check.c",
        "core/dtype.c",
        "core/engine.c",
        "core/flow.c",
        "core/l2.c",
        "core/lshmemlab.c",
        "core/lshmemlab_kernel.c",
        "core/lshmemlab_launch.c",
        "core/lshmemlab_machine.c",
        "core/lshmemlab_report.c",
        "core/lshmemlab_route.c",
        "core/lshmemlab_scalar.c",
        "core/lshmemlab_sync.c",
        "core/lshmemlab_view.c",
        "core/machine.c",
        "core/mem.c",
        "core/mte.c",
        "core/p2p.c",
        "core/pipe.c",
        "core/race.c",
        "core/route.c",
        "core/scalar.c",
        "core/sim.c",
        "core/sync.c",
        "core/team.c",
      },
      defines = { "_POSIX_C_SOURCE=200809L" },
      libraries = { "m", "pthread" },
    },
    ["shmemlab.bound"] = "lua/shmemlab/bound.lua",
    ["shmemlab.chain_cases"] = "lua/shmemlab/chain_cases.lua",
    ["shmemlab.check"] = "lua/shmemlab/check.lua",
    ["shmemlab.cli"] = "lua/shmemlab/cli.lua",
    ["shmemlab.deepep"] = "lua/shmemlab/deepep.lua",
    ["shmemlab.doc_table"] = "lua/shmemlab/doc_table.lua",
    ["shmemlab.fidelity"] = "lua/shmemlab/fidelity.lua",
    ["shmemlab.validation"] = "lua/shmemlab/validation.lua",
    ["shmemlab.scale_fit"] = "lua/shmemlab/scale_fit.lua",
    ["shmemlab.frames"] = "lua/shmemlab/frames.lua",
    ["shmemlab.hccl"] = "lua/shmemlab/hccl.lua",
    ["shmemlab.hccl_algo"] = "lua/shmemlab/hccl_algo.lua",
    ["shmemlab.hccl_cases"] = "lua/shmemlab/hccl_cases.lua",
    ["shmemlab.hccl_levels"] = "lua/shmemlab/hccl_levels.lua",
    ["shmemlab.hccl_values"] = "lua/shmemlab/hccl_values.lua",
    ["shmemlab.hier_cases"] = "lua/shmemlab/hier_cases.lua",
    ["shmemlab.mc2"] = "lua/shmemlab/mc2.lua",
    ["shmemlab"] = "lua/shmemlab/init.lua",
    ["shmemlab.json"] = "lua/shmemlab/json.lua",
    ["shmemlab.lua54"] = "lua/shmemlab/lua54.lua",
    ["shmemlab.metrics"] = "lua/shmemlab/metrics.lua",
    ["shmemlab.moe"] = "lua/shmemlab/moe.lua",
    ["shmemlab.msprof"] = "lua/shmemlab/msprof.lua",
    ["shmemlab.op"] = "lua/shmemlab/op.lua",
    ["shmemlab.par"] = "lua/shmemlab/par.lua",
    ["shmemlab.plot"] = "lua/shmemlab/plot.lua",
    ["shmemlab.prof"] = "lua/shmemlab/prof.lua",
    ["shmemlab.relay"] = "lua/shmemlab/relay.lua",
    ["shmemlab.report"] = "lua/shmemlab/report.lua",
    ["shmemlab.runner"] = "lua/shmemlab/runner.lua",
    ["shmemlab.socs.Ascend910B"] = "lua/shmemlab/socs/Ascend910B.lua",
    ["shmemlab.socs.Ascend910_93"] = "lua/shmemlab/socs/Ascend910_93.lua",
    ["shmemlab.socs.Ascend950"] = "lua/shmemlab/socs/Ascend950.lua",
    ["shmemlab.sweep"] = "lua/shmemlab/sweep.lua",
    ["shmemlab.tune"] = "lua/shmemlab/tune.lua",
  },
  -- the operators beside the modules, where the runner looks when installed
  -- (share/lua/5.4/shmemlab/ops/), and the `shmemlab` command
  install = {
    lua = {
      ["shmemlab.ops.allgather"] = "ops/allgather.lua",
      ["shmemlab.ops.allreduce"] = "ops/allreduce.lua",
      ["shmemlab.ops.alltoall"] = "ops/alltoall.lua",
      ["shmemlab.ops.broadcast"] = "ops/broadcast.lua",
      ["shmemlab.ops.combine"] = "ops/combine.lua",
      ["shmemlab.ops.dispatch"] = "ops/dispatch.lua",
      ["shmemlab.ops.p2p"] = "ops/p2p.lua",
      ["shmemlab.ops.reduce_scatter"] = "ops/reduce_scatter.lua",
      ["shmemlab.ops.deepep.combine"] = "ops/deepep/combine.lua",
      ["shmemlab.ops.deepep.dispatch"] = "ops/deepep/dispatch.lua",
      ["shmemlab.ops.deepep.dispatch_data"] = "ops/deepep/dispatch_data.lua",
      ["shmemlab.ops.deepep.dispatch_hccl"] = "ops/deepep/dispatch_hccl.lua",
      ["shmemlab.ops.deepep.dispatch_hybrid"] = "ops/deepep/dispatch_hybrid.lua",
      ["shmemlab.ops.deepep.notify_hccl"] = "ops/deepep/notify_hccl.lua",
      ["shmemlab.ops.hccl.allgather"] = "ops/hccl/allgather.lua",
      ["shmemlab.ops.hccl.allreduce"] = "ops/hccl/allreduce.lua",
      ["shmemlab.ops.hccl.alltoall"] = "ops/hccl/alltoall.lua",
      ["shmemlab.ops.hccl.broadcast"] = "ops/hccl/broadcast.lua",
      ["shmemlab.ops.hccl.combine"] = "ops/hccl/combine.lua",
      ["shmemlab.ops.hccl.dispatch"] = "ops/hccl/dispatch.lua",
      ["shmemlab.ops.hccl.p2p"] = "ops/hccl/p2p.lua",
      ["shmemlab.ops.hccl.reduce_scatter"] = "ops/hccl/reduce_scatter.lua",
      ["shmemlab.ops.mc2.combine"] = "ops/mc2/combine.lua",
      ["shmemlab.ops.mc2.dispatch"] = "ops/mc2/dispatch.lua",
    },
    bin = { shmemlab = "bin/shmemlab" },
  },
}

test = {
  type = "busted",
}
