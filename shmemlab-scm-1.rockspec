-- `make rockspec-check` fails when the lists below differ from core/*.c and
-- lua/shmemlab/**/*.lua: keep them in sync when adding or removing files.
rockspec_format = "3.0"
package = "shmemlab"
version = "scm-1"

source = {
  url = "git+https://example.invalid/shmemlab.git",
}

description = {
  summary = "Emulator of Ascend NPU clusters for Lua 5.4",
  detailed = [[
shmemlab emulates Ascend NPU clusters: a C11 core exposed to Lua 5.4 as
shmemlab.core, a Lua facade (shmemlab) and collective operators in ops/.
]],
  license = "TBD",  -- placeholder: not decided yet
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
        "core/machine.c",
        "core/mem.c",
        "core/sim.c",
      },
      defines = { "_POSIX_C_SOURCE=200809L" },
      libraries = { "m" },
    },
    ["shmemlab.frames"] = "lua/shmemlab/frames.lua",
    ["shmemlab.json"] = "lua/shmemlab/json.lua",
    ["shmemlab.metrics"] = "lua/shmemlab/metrics.lua",
    ["shmemlab.prof"] = "lua/shmemlab/prof.lua",
  },
  copy_directories = { "ops" },
}

test = {
  type = "busted",
}
