-- `make rockspec-check` fails when the lists below differ from core/*.c and
-- lua/shmemlab/**/*.lua: keep them in sync when adding or removing files.
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
  license = "TBD",  -- not chosen yet
}

dependencies = {
  "lua >= 5.4, < 5.5",
  "luafilesystem",
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
        "core/check.c",
        "core/dtype.c",
        "core/engine.c",
        "core/flow.c",
        "core/lshmemlab.c",
        "core/machine.c",
        "core/mem.c",
        "core/mte.c",
        "core/p2p.c",
        "core/pipe.c",
        "core/race.c",
        "core/sim.c",
        "core/sync.c",
        "core/team.c",
      },
      defines = { "_POSIX_C_SOURCE=200809L" },
      libraries = { "m", "pthread" },
    },
    ["shmemlab.bound"] = "lua/shmemlab/bound.lua",
    ["shmemlab.check"] = "lua/shmemlab/check.lua",
    ["shmemlab.cli"] = "lua/shmemlab/cli.lua",
    ["shmemlab.fidelity"] = "lua/shmemlab/fidelity.lua",
    ["shmemlab.frames"] = "lua/shmemlab/frames.lua",
    ["shmemlab.hccl"] = "lua/shmemlab/hccl.lua",
    ["shmemlab"] = "lua/shmemlab/init.lua",
    ["shmemlab.json"] = "lua/shmemlab/json.lua",
    ["shmemlab.metrics"] = "lua/shmemlab/metrics.lua",
    ["shmemlab.moe"] = "lua/shmemlab/moe.lua",
    ["shmemlab.msprof"] = "lua/shmemlab/msprof.lua",
    ["shmemlab.op"] = "lua/shmemlab/op.lua",
    ["shmemlab.plot"] = "lua/shmemlab/plot.lua",
    ["shmemlab.prof"] = "lua/shmemlab/prof.lua",
    ["shmemlab.report"] = "lua/shmemlab/report.lua",
    ["shmemlab.runner"] = "lua/shmemlab/runner.lua",
    ["shmemlab.socs.Ascend910B"] = "lua/shmemlab/socs/Ascend910B.lua",
    ["shmemlab.socs.Ascend910_93"] = "lua/shmemlab/socs/Ascend910_93.lua",
    ["shmemlab.socs.Ascend950"] = "lua/shmemlab/socs/Ascend950.lua",
    ["shmemlab.sweep"] = "lua/shmemlab/sweep.lua",
  },
  copy_directories = { "ops" },
}

test = {
  type = "busted",
}
