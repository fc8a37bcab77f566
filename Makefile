# shmemlab -- GNU make build.
#
#   make            build build/shmemlab/core.so
#   make run        install Debian deps, build, run `lua5.4 run_op.lua allgather`
#   make test       deps + build + lint + C unit tests + busted specs
#   make test-asan  the same C tests and specs under ASan/UBSan (build-asan/)
#   make bench      build, then bench/engine.lua and every bench/*.c
#   make fidelity   build, then bench/fidelity.lua: the README's fidelity table
#   make bench-peers   shmemlab against SimGrid's SMPI on the same sweep (bench/peers/)
#   make fidelity-readme   the same, written into README.md's fidelity block
#   make install    DESTDIR=... PREFIX=/usr/local
#   make rockspec-check   rockspec lists every core/*.c and lua/shmemlab/**.lua
#   make clean
#
# Everything is placeholder-tolerant: files picked up by wildcard, so new
# core/*.c, spec/c/*.c, bench/*.c and Lua files need no Makefile edits.

.SUFFIXES:
.DELETE_ON_ERROR:

# gcc by default (make's own default is cc); CC=clang etc. still override.
ifeq ($(origin CC),default)
CC := gcc
endif
PKG_CONFIG ?= pkg-config
LUA        ?= lua5.4
LUA_VERSION := 5.4
LUACHECK   ?= luacheck
# Recursive (=), not :=, so it is looked up when used, i.e. after `deps`
# may have installed busted on a fresh machine.
BUSTED      = $(shell command -v busted)

# Lua headers: only core/lshmemlab.c ever sees this include path.
LUA_INC ?= $(or $(patsubst -I%,%,$(filter -I%,$(shell $(PKG_CONFIG) --cflags lua$(LUA_VERSION) 2>/dev/null))),/usr/include/lua$(LUA_VERSION))

CFLAGS  ?= -O2 -g
LDFLAGS ?=
WARN := -Wall -Wextra -Werror -Wshadow -Wundef -Wwrite-strings \
        -Wredundant-decls -Wdisabled-optimization -Wdouble-promotion \
        -Wmissing-declarations -Wmissing-prototypes -Wnested-externs \
        -Wstrict-prototypes -Wold-style-definition
ALL_CFLAGS = -std=c11 -fPIC $(WARN) -D_POSIX_C_SOURCE=200809L -Icore $(CFLAGS)
LIBS := -lm -lpthread

# Output tree; test-asan re-invokes make with BUILD=build-asan.
BUILD ?= build

# ---------------------------------------------------------------- sources
SRCS      := $(sort $(wildcard core/*.c))
BIND_SRC  := core/lshmemlab.c
LIB_SRCS  := $(filter-out $(BIND_SRC),$(SRCS))
OBJS      := $(SRCS:core/%.c=$(BUILD)/obj/%.o)
LIB_OBJS  := $(LIB_SRCS:core/%.c=$(BUILD)/obj/%.o)
MODULE    := $(BUILD)/shmemlab/core.so

CTEST_SRCS := $(sort $(wildcard spec/c/*.c))
CTEST_BINS := $(CTEST_SRCS:spec/c/%.c=$(BUILD)/ctest/%)
BENCH_SRCS := $(sort $(wildcard bench/*.c))
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

LINT_PATHS := $(wildcard lua ops spec bench examples run_op.lua)
ROCKSPEC   := shmemlab-scm-1.rockspec

# Lua search paths for `make run` / `make bench` (specs use .busted instead).
# LUA_*_5_4 so the Lua 5.1 tools (luacheck) are not affected.
RUN_ENV = LUA_PATH_5_4='$(CURDIR)/lua/?.lua;$(CURDIR)/lua/?/init.lua;;' \
          LUA_CPATH_5_4='$(CURDIR)/$(BUILD)/?.so;;'

# ---------------------------------------------------------------- sanitizers
ASAN_CFLAGS  := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
                -fno-sanitize-recover=undefined
ASAN_LDFLAGS := -fsanitize=address,undefined
# lua5.4 is not instrumented, so the runtimes must be preloaded (asan first).
ASAN_PRELOAD  = $(shell $(CC) -print-file-name=libasan.so) $(shell $(CC) -print-file-name=libubsan.so)
ASAN_ENV      = ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 \
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all module deps run test lint ctest spec test-asan bench bench-peers fidelity \
        fidelity-readme install rockspec-check clean

all: $(MODULE)
module: $(MODULE)

# ---------------------------------------------------------------- build
$(MODULE): $(OBJS)
	@test -n "$(OBJS)" || { echo "make: no core/*.c sources yet" >&2; exit 1; }
	@mkdir -p $(@D)
	$(CC) -shared $(CFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(LIBS)

# Every core/*.c except the binding is compiled WITHOUT the Lua include
# path, so a stray #include <lua.h> there is a build error.
$(BUILD)/obj/%.o: core/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(if $(filter $<,$(BIND_SRC)),-I$(LUA_INC)) -MMD -MP -c $< -o $@

# C unit tests: spec/c/NAME.c + core objects (no binding, no Lua).
$(BUILD)/ctest/%: spec/c/%.c $(LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -MF $@.d -o $@ $< $(LIB_OBJS) $(LDFLAGS) $(LIBS)

$(BUILD)/bench/%: bench/%.c $(LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O2 -MMD -MP -MF $@.d -o $@ $< $(LIB_OBJS) $(LDFLAGS) $(LIBS)

-include $(OBJS:.o=.d) $(CTEST_BINS:=.d) $(BENCH_BINS:=.d)

# ---------------------------------------------------------------- deps / run
# deps.sh is a quick dpkg-query check when everything is installed.
deps:
	@sh scripts/deps.sh

run: deps all
	$(RUN_ENV) $(LUA) run_op.lua allgather

# ---------------------------------------------------------------- tests
test: deps all lint rockspec-check ctest spec

lint:
ifneq ($(LINT_PATHS),)
	$(LUACHECK) $(LINT_PATHS)
else
	@echo "lint: no Lua files yet"
endif

# Runs every test even after a failure, then fails if any did.
# CTEST_ENV: environment for the test programs (test-asan sets ASAN_OPTIONS).
CTEST_ENV ?=
ctest: $(CTEST_BINS)
	@if [ -z "$(CTEST_BINS)" ]; then echo "ctest: no spec/c/*.c yet"; exit 0; fi; \
	fail=0; \
	for t in $(CTEST_BINS); do \
	  echo "== $$t"; \
	  $(CTEST_ENV) ./$$t || { echo "** FAILED: $$t" >&2; fail=1; }; \
	done; \
	exit $$fail

spec: all
	@test -n "$(BUSTED)" || { echo "make: busted not found (run make deps)" >&2; exit 1; }
	$(LUA) $(BUSTED)

test-asan: deps
	$(MAKE) --no-print-directory BUILD=build-asan CFLAGS='$(ASAN_CFLAGS)' \
	  LDFLAGS='$(ASAN_LDFLAGS)' CTEST_ENV='$(ASAN_ENV)' module ctest
	@test -n "$(BUSTED)" || { echo "make: busted not found (run make deps)" >&2; exit 1; }
	LD_PRELOAD='$(ASAN_PRELOAD)' $(ASAN_ENV) $(LUA) $(BUSTED) --run=asan

# ---------------------------------------------------------------- bench
bench: all $(BENCH_BINS)
	@for b in bench/*.lua; do \
	  [ -f "$$b" ] || continue; \
	  echo "$(RUN_ENV) $(LUA) $$b"; \
	  $(RUN_ENV) $(LUA) $$b || exit 1; \
	done; \
	for b in $(BENCH_BINS); do echo "== $$b"; ./$$b || exit 1; done

# shmemlab side by side with a peer: SimGrid's SMPI runs bench/peers/collectives.c
# on a platform written from the SoC profile; both sweeps, same sizes and
# iterations (PEERS_OPTS, e.g. --ops allgather --iters 10). Installs SimGrid as
# deps does. Not part of `make test`: it takes minutes.
PEERS_OPTS ?=
$(BUILD)/peers/collectives: bench/peers/collectives.c
	@mkdir -p $(@D)
	smpicc -O2 -o $@ $<

bench-peers: deps all
	@sh scripts/deps.sh libsimgrid-dev
	@$(MAKE) --no-print-directory $(BUILD)/peers/collectives
	$(LUA) bench/peers/peers.lua --dir $(BUILD)/peers $(PEERS_OPTS)

# The fidelity table (virtual time, so the same on every machine): published
# figure, modeled figure and error of every case in lua/shmemlab/fidelity.lua.
fidelity: all
	$(RUN_ENV) $(LUA) bench/fidelity.lua

# The same, and rewrite README.md's fidelity block with it.
fidelity-readme: all
	$(RUN_ENV) $(LUA) bench/fidelity.lua --readme README.md

# ---------------------------------------------------------------- install
PREFIX    ?= /usr/local
LUA_LIBDIR = $(PREFIX)/lib/lua/$(LUA_VERSION)
LUA_DATDIR = $(PREFIX)/share/lua/$(LUA_VERSION)
DATADIR    = $(PREFIX)/share/shmemlab

install: all
	install -d '$(DESTDIR)$(LUA_LIBDIR)/shmemlab' '$(DESTDIR)$(LUA_DATDIR)/shmemlab' '$(DESTDIR)$(DATADIR)'
	install -m 755 $(MODULE) '$(DESTDIR)$(LUA_LIBDIR)/shmemlab/core.so'
	@set -e; cd lua && for f in $$(find shmemlab -type f -name '*.lua' | sort); do \
	  echo "install -D -m 644 lua/$$f $(DESTDIR)$(LUA_DATDIR)/$$f"; \
	  install -D -m 644 "$$f" '$(DESTDIR)$(LUA_DATDIR)'/"$$f"; \
	done
	@set -e; if [ -d ops ]; then for f in $$(find ops -type f | sort); do \
	  echo "install -D -m 644 $$f $(DESTDIR)$(DATADIR)/$$f"; \
	  install -D -m 644 "$$f" '$(DESTDIR)$(DATADIR)'/"$$f"; \
	done; fi
	@set -e; if [ -f run_op.lua ]; then \
	  echo "install -m 644 run_op.lua $(DESTDIR)$(DATADIR)/run_op.lua"; \
	  install -m 644 run_op.lua '$(DESTDIR)$(DATADIR)/run_op.lua'; \
	fi

# ---------------------------------------------------------------- rockspec
# Loads the rockspec and compares its module list with the tree.
define ROCKSPEC_CHECK_LUA
local env = {}
local chunk = assert(loadfile("$(ROCKSPEC)", "t", env))
chunk()
local mods = assert(env.build and env.build.modules, "no build.modules")
local core = assert(mods["shmemlab.core"], "no shmemlab.core module")
local function set(list) local s = {} for _, v in ipairs(list) do s[v] = true end return s end
local function lines(cmd)
  local t, p = {}, assert(io.popen(cmd))
  for l in p:lines() do t[#t + 1] = l end
  p:close()
  return t
end
local bad = 0
local function diff(what, want, have)
  local w, h = set(want), set(have)
  for _, v in ipairs(want) do
    if not h[v] then print("rockspec-check: missing " .. what .. ": " .. v); bad = bad + 1 end
  end
  for _, v in ipairs(have) do
    if not w[v] then print("rockspec-check: not in tree " .. what .. ": " .. v); bad = bad + 1 end
  end
end
diff("source", lines("ls core/*.c 2>/dev/null"), core.sources or {})
local want, have = {}, {}
for _, f in ipairs(lines("find lua/shmemlab -name \"*.lua\" 2>/dev/null | sort")) do
  local name = f:gsub("^lua/", ""):gsub("%.lua$$", ""):gsub("/init$$", ""):gsub("/", ".")
  want[#want + 1] = string.format("[%q] = %q", name, f)
end
for name, v in pairs(mods) do
  if type(v) == "string" then have[#have + 1] = string.format("[%q] = %q", name, v) end
end
diff("module", want, have)
if bad > 0 then os.exit(1) end
print("rockspec-check: $(ROCKSPEC) matches the tree")
endef
export ROCKSPEC_CHECK_LUA

rockspec-check:
	@$(LUA) -e "$$ROCKSPEC_CHECK_LUA"

# ---------------------------------------------------------------- clean
# Also what an in-tree `luarocks make` leaves (core/*.o, shmemlab/core.so).
clean:
	rm -rf build build-asan
	rm -f core/*.o shmemlab/core.so
	@rmdir shmemlab 2>/dev/null || true
