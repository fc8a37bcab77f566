# shmemlab -- GNU make build.
#
#   make            build build/shmemlab/core.so (also: make all, make module)
#   make help       this list of targets, one line each
#   make deps       install the Debian packages it needs (as root; else print the apt-get line)
#   make run        install Debian deps, build, run `lua5.4 run_op.lua allgather`
#   make test       deps + build + lint + C unit tests + busted specs + install-check
#   make lint       luacheck over lua/, ops/, spec/, bench/, examples/ and the scripts
#   make ctest      build and run the C unit tests (spec/c/)
#   make spec       the busted specs alone, a process per file, JOBS at a time
#   make test-asan  the same C tests and specs under ASan/UBSan (build-asan/)
#   make bench      build; bench/engine.lua, bench/check.lua, bench/dtype_bench.c into doc/performance.md, doc/checked.md
#   make scale      build, then bench/scale.lua (events, events/s, wall, RSS at scale) and bench/moe.lua (DeepEP's dispatch) into doc/performance.md, doc/moe.md
#   make chain      build, then bench/chain.lua (one-flow chains against chunked ones; run-ahead; settle windows) into doc/chain.md, doc/scale.md
#   make fidelity   build, then bench/fidelity.lua: the fidelity table, written into doc/fidelity.md
#   make bench-peers   shmemlab against SimGrid's SMPI on the same sweep (bench/peers/), into doc/performance.md
#   make bench-peers-scale   the same at 256 and 512 ranks, timing-only (bench/peers/scale.lua), into doc/performance.md
#   make fidelity-readme   the same as make fidelity
#   make hccl-tables   build, then bench/hccl_tables.lua: HCCL's task plans against their formulas, written into doc/hccl.md
#   make chain-fidelity   build, then bench/chain_fidelity.lua: bare chains against chunked ones at 1000 ns, written into doc/chain.md (bench/chain_fidelity.lua --max-pes N: the rows up to N, printed)
#   make hier-table   build, then bench/hier_table.lua: each op's efficiency at 16 MiB a PE, 16-128 PEs, and its HCCL baseline's time, written into doc/hier.md
#   make tables     every virtual-time table and output block at once (after a change that moves virtual time)
#   make validation   the shipping MoE kernels against their published figures (minutes)
#   make validation-readme   the same, written into doc/validation.md's block
#   make usage-readme   the usage block of the docs rewritten with the generated --help
#   make outputs-readme   the docs' `$ lua run_op.lua ...` blocks, their plots and included files rewritten
#   make op-outputs OUT=DIR   every op's run_op output (plain, --tool all) into DIR
#   make install    DESTDIR=... PREFIX=/usr/local: modules, operators, the `shmemlab` command
#   make uninstall  DESTDIR=... PREFIX=...: removes exactly what `make install` put there
#   make install-check   install under a temporary prefix, run `shmemlab` from another folder
#   make luarocks-check  the same with `luarocks --lua-version 5.4 make` into a temporary tree
#   make exports-check   core.so exports only luaopen_shmemlab_core
#   make rockspec-check   rockspec lists every core/*.c, lua/shmemlab/**.lua and ops/**.lua
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

# Lua headers: only the binding, core/lshmemlab*.c, ever sees this include path.
LUA_INC ?= $(or $(patsubst -I%,%,$(filter -I%,$(shell $(PKG_CONFIG) --cflags lua$(LUA_VERSION) 2>/dev/null))),/usr/include/lua$(LUA_VERSION))

# -flto=auto: the module, the C tests and the benches linked as one unit, so the
# binding's calls into the core (sl_machine_gen, sl_must_yield, ...) inline; the
# sanitized build (test-asan) and the rockspec's builtin build use flags of their own.
# clang 14 writes DWARF 5 forms that valgrind 3.19 (Debian 12's) cannot read, and
# spec/engine_runaway_spec.lua runs helgrind on the module: DWARF 4 under clang.
ifneq ($(findstring clang,$(CC)),)
CFLAGS  ?= -O2 -gdwarf-4 -flto=auto
endif
CFLAGS  ?= -O2 -g -flto=auto
LDFLAGS ?=
WARN := -Wall -Wextra -Werror -Wshadow -Wundef -Wwrite-strings \
        -Wredundant-decls -Wdisabled-optimization -Wdouble-promotion \
        -Wmissing-declarations -Wmissing-prototypes -Wnested-externs \
        -Wstrict-prototypes -Wold-style-definition
ALL_CFLAGS = -std=c11 -fPIC $(WARN) -D_POSIX_C_SOURCE=200809L -Icore $(CFLAGS)
LIBS := -lm -lpthread

# Worker processes of the benches that run independent cases (make validation).
JOBS ?= $(shell nproc 2>/dev/null || echo 1)

# Output tree; test-asan re-invokes make with BUILD=build-asan.
BUILD ?= build

# ---------------------------------------------------------------- sources
SRCS      := $(sort $(wildcard core/*.c))
BIND_SRC  := core/lshmemlab.c $(wildcard core/lshmemlab_*.c)
LIB_SRCS  := $(filter-out $(BIND_SRC),$(SRCS))
OBJS      := $(SRCS:core/%.c=$(BUILD)/obj/%.o)
LIB_OBJS  := $(LIB_SRCS:core/%.c=$(BUILD)/obj/%.o)
MODULE    := $(BUILD)/shmemlab/core.so

CTEST_SRCS := $(sort $(wildcard spec/c/*.c))
CTEST_BINS := $(CTEST_SRCS:spec/c/%.c=$(BUILD)/ctest/%)
BENCH_SRCS := $(sort $(wildcard bench/*.c))
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

LINT_PATHS := $(wildcard lua ops spec bench examples run_op.lua bin/shmemlab scripts/*.lua)
# The docs: the front door and the manual. The scripts that write generated blocks look
# for each block in whichever of them holds it.
DOCS       := README.md $(sort $(wildcard doc/*.md))
MEASURE     = $(RUN_ENV) $(LUA) scripts/measured_block.lua
ROCKSPEC   := shmemlab-scm-1.rockspec

# Lua search paths for `make run` / `make bench` (specs use .busted instead).
# LUA_*_5_4 so the Lua 5.1 tools (luacheck) are not affected.
RUN_ENV = LUA_PATH_5_4='$(CURDIR)/lua/?.lua;$(CURDIR)/lua/?/init.lua;;' \
          LUA_CPATH_5_4='$(CURDIR)/$(BUILD)/?.so;;'

# ---------------------------------------------------------------- sanitizers
# SL_SMALL_SLOT_ROOM: the flow solver's fills start their slot lists again
# often (core/flow.c), so the sanitized run covers that path with every spec.
ASAN_CFLAGS  := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
                -fno-sanitize-recover=undefined -DSL_SMALL_SLOT_ROOM
ASAN_LDFLAGS := -fsanitize=address,undefined
# lua5.4 is not instrumented, so the runtimes must be preloaded (asan first).
ASAN_PRELOAD  = $(shell $(CC) -print-file-name=libasan.so) $(shell $(CC) -print-file-name=libubsan.so)
ASAN_ENV      = ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 \
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all module help deps run test lint ctest spec test-asan bench bench-peers bench-peers-scale scale chain fidelity \
        fidelity-readme hccl-tables chain-fidelity hier-table tables validation validation-readme usage-readme outputs-readme op-outputs install uninstall install-check luarocks-check exports-check \
        rockspec-check clean

all: $(MODULE)
module: $(MODULE)

# The targets and what each does: the `#   make ...` lines at the top of this file.
help:
	@sed -n 's/^#   \(make .*\)/\1/p' $(firstword $(MAKEFILE_LIST))

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

# dtype.c reads and writes a buffer's elements as whatever dtype an op names
# (an fp32 Abs clears bits of uint32_t words that were stored as floats): that
# is type punning by design, so its loads must alias every store (clang, with
# LTO, otherwise moves the C tests' stores of floats past the library's loads).
$(BUILD)/obj/dtype.o: ALL_CFLAGS += -fno-strict-aliasing

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
test: deps all lint rockspec-check exports-check ctest spec install-check

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

# Each spec file runs in its own busted process, JOBS at a time (scripts/spec_run.lua);
# the last line adds up busted's counts. One file: lua5.4 $$(command -v busted) spec/X_spec.lua
spec: all
	@test -n "$(BUSTED)" || { echo "make: busted not found (run make deps)" >&2; exit 1; }
	$(LUA) scripts/spec_run.lua $(JOBS) default '$(LUA) $(BUSTED)'

test-asan: deps
	$(MAKE) --no-print-directory BUILD=build-asan CFLAGS='$(ASAN_CFLAGS)' \
	  LDFLAGS='$(ASAN_LDFLAGS)' CTEST_ENV='$(ASAN_ENV)' module ctest
	@test -n "$(BUSTED)" || { echo "make: busted not found (run make deps)" >&2; exit 1; }
	$(LUA) scripts/spec_run.lua $(JOBS) asan "env LD_PRELOAD='$(ASAN_PRELOAD)' $(ASAN_ENV) $(LUA) $(BUSTED)"

# ---------------------------------------------------------------- bench
# Each measurement table is written into the doc that holds its markers, with the machine
# and the date (scripts/measured_block.lua; spec/docs_spec.lua fails on a stale one).
bench: all $(BENCH_BINS)
	$(MEASURE) engine '$(LUA) bench/engine.lua' $(DOCS)
	$(MEASURE) check '$(LUA) bench/check.lua' $(DOCS)
	$(MEASURE) dtype '$(BUILD)/bench/dtype_bench' $(DOCS)
	$(RUN_ENV) $(LUA) bench/fidelity.lua --readme $(DOCS)

# shmemlab side by side with a peer: SimGrid's SMPI runs bench/peers/collectives.c
# on a platform written from the SoC profile; both sweeps, same sizes and
# iterations (PEERS_OPTS, e.g. --ops allgather --iters 10). Installs SimGrid as
# deps does. Not part of `make test`: it takes minutes.
PEERS_OPTS ?=
$(BUILD)/peers/collectives: bench/peers/collectives.c bench/peers/data.h
	@mkdir -p $(@D)
	smpicc -O2 -o $@ $<

# the copy floor: the same collectives as plain copies in one process, one thread
$(BUILD)/peers/floor: bench/peers/floor.c bench/peers/data.h
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra -Werror -o $@ $< -lpthread

bench-peers: deps all
	@sh scripts/deps.sh libsimgrid-dev
	@$(MAKE) --no-print-directory $(BUILD)/peers/collectives $(BUILD)/peers/floor
	$(MEASURE) peers '$(LUA) bench/peers/peers.lua --dir $(BUILD)/peers $(PEERS_OPTS)' $(DOCS)

# The same comparison at scale, timing-only: the allgather of 1 MiB a rank with 48
# transfers in flight at 256 and 512 ranks, windowed and exact, against SMPI on the
# profile's NICs (PEERS_SCALE_OPTS: e.g. --pes 256 --settle-ns 1000). A few minutes.
PEERS_SCALE_OPTS ?=
bench-peers-scale: deps all
	@sh scripts/deps.sh libsimgrid-dev
	$(MEASURE) peerscale '$(LUA) bench/peers/scale.lua --dir $(BUILD)/peers $(PEERS_SCALE_OPTS)' $(DOCS)

# The emulator at scale: events, events per second, wall, peak RSS from 8 to
# 1024 PEs and the growth exponent, then the timing-only cases (SCALE_OPTS: e.g.
# --budget 600, each case's limit in seconds).
SCALE_OPTS ?=
scale: all
	$(MEASURE) scale '$(LUA) bench/scale.lua $(SCALE_OPTS)' $(DOCS)
	$(MEASURE) moe '$(LUA) bench/moe.lua' $(DOCS)

# A pipelined chain as one flow against the chunked chain it stands for: the
# timing-only allgather at 64-512 PEs, flat and relay, exact and windowed
# (CHAIN_OPTS: e.g. --max-pes 256), written into doc/chain.md's block; then the
# flat allgather with and without run-ahead, its events by kind, into doc/scale.md's;
# then what each settle window moves and saves (--settle) into doc/scale.md's.
CHAIN_OPTS ?=
chain: all
	$(MEASURE) chain '$(LUA) bench/chain.lua $(CHAIN_OPTS)' $(DOCS)
	$(MEASURE) runahead '$(LUA) bench/chain.lua --run-ahead $(CHAIN_OPTS)' $(DOCS)
	$(MEASURE) settle '$(LUA) bench/chain.lua --settle $(CHAIN_OPTS)' $(DOCS)

# The fidelity table (virtual time, so the same on every machine): published
# figure, modeled figure and error of every case in lua/shmemlab/fidelity.lua, written
# into the doc that holds the fidelity markers (doc/fidelity.md); fidelity-readme is
# the same target under its older name.
fidelity fidelity-readme: all
	$(RUN_ENV) $(LUA) bench/fidelity.lua --readme $(DOCS)

# doc/hccl.md's two tables (virtual time): inside one server the AIV kernels beside
# the task plan, and every task plan against cann-hccl's alpha-beta formula, each
# case from lua/shmemlab/hccl_cases.lua; spec/hccl_plan_spec.lua fails on a stale row.
hccl-tables: all
	$(RUN_ENV) $(LUA) bench/hccl_tables.lua --readme $(DOCS)

# doc/chain.md's table of bare chains (virtual time): the timing-only allgather, server
# relay at 16-1024 PEs and flat at 64-256, exact, then chunked and as one flow at a
# 1000 ns window, each case from lua/shmemlab/chain_cases.lua (a few minutes: the
# 1024-PE relay); spec/chain_fidelity_spec.lua fails on a stale row.
chain-fidelity: all
	$(RUN_ENV) $(LUA) bench/chain_fidelity.lua --readme $(DOCS)

# doc/hier.md's efficiency table (virtual time): bound_us / kernel_us of each op on
# each SoC at 16 MiB a PE and 16-128 PEs, each cell from lua/shmemlab/hier_cases.lua
# (a few minutes: the 128-PE cells); spec/hier_table_spec.lua fails on a stale row.
hier-table: all
	$(RUN_ENV) $(LUA) bench/hier_table.lua --readme $(DOCS)

# Every table and output block of virtual time (the same on any machine), each
# rewritten by its own target: after a change that moves virtual time, this is what
# to run (about half an hour on 2 cores, most of it validation and the 1024-PE chain).
tables: fidelity hccl-tables chain-fidelity hier-table validation-readme outputs-readme

# Operator-level validation (never calibration): the shipping MoE kernels' ports
# against DeepEP-Ascend's published figures; -readme writes doc/validation.md's block.
validation: all
	$(RUN_ENV) $(LUA) bench/validation.lua -j $(JOBS)

validation-readme: all
	$(RUN_ENV) $(LUA) bench/validation.lua -j $(JOBS) $(foreach d,$(DOCS),--readme $(d))

# The docs' usage block is `lua run_op.lua --help` (cli_spec checks it): after changing
# an option in lua/shmemlab/cli.lua's OPTIONS, rewrite the block with this.
usage-readme: all
	$(RUN_ENV) $(LUA) scripts/usage_readme.lua $(DOCS)

# The docs' `$ lua run_op.lua ...` blocks are that command's output (and an image after
# one its --plot; an `<!-- include FILE -->` block FILE's text): rewrite them after a
# change that moves virtual times.
outputs-readme: all
	$(RUN_ENV) $(LUA) scripts/outputs_readme.lua $(DOCS)

# Every op's run_op output into $(OUT): with two builds, `diff -r` the folders.
OUT ?= build/op-outputs
op-outputs: all
	$(RUN_ENV) $(LUA) scripts/op_outputs.lua $(OUT)

# ---------------------------------------------------------------- install
# The same layout as `luarocks make`: modules and operators under share/lua/5.4
# (the runner finds shmemlab/ops/ beside its modules), core.so under lib/lua/5.4,
# the `shmemlab` command in bin/ (it finds its own prefix's modules first).
PREFIX    ?= /usr/local
BINDIR     = $(PREFIX)/bin
LUA_LIBDIR = $(PREFIX)/lib/lua/$(LUA_VERSION)
LUA_DATDIR = $(PREFIX)/share/lua/$(LUA_VERSION)
DOCDIR     = $(PREFIX)/share/doc/shmemlab

install: all
	install -d '$(DESTDIR)$(LUA_LIBDIR)/shmemlab' '$(DESTDIR)$(LUA_DATDIR)/shmemlab' '$(DESTDIR)$(BINDIR)' \
	  '$(DESTDIR)$(DOCDIR)'
	install -m 755 $(MODULE) '$(DESTDIR)$(LUA_LIBDIR)/shmemlab/core.so'
	@set -e; cd lua && for f in $$(find shmemlab -type f -name '*.lua' | sort); do \
	  echo "install -D -m 644 lua/$$f $(DESTDIR)$(LUA_DATDIR)/$$f"; \
	  install -D -m 644 "$$f" '$(DESTDIR)$(LUA_DATDIR)'/"$$f"; \
	done
	@set -e; for f in $$(find ops -type f -name '*.lua' | sort); do \
	  echo "install -D -m 644 $$f $(DESTDIR)$(LUA_DATDIR)/shmemlab/$$f"; \
	  install -D -m 644 "$$f" '$(DESTDIR)$(LUA_DATDIR)/shmemlab'/"$$f"; \
	done
	install -m 755 bin/shmemlab '$(DESTDIR)$(BINDIR)/shmemlab'
	install -m 644 LICENSE README.md '$(DESTDIR)$(DOCDIR)/'
	install -d '$(DESTDIR)$(DOCDIR)/doc'
	install -m 644 doc/*.md doc/*.svg '$(DESTDIR)$(DOCDIR)/doc/'

# What install put there, and nothing else: its files, then its own folders (shmemlab/
# under lib/lua/5.4 and share/lua/5.4, share/doc/shmemlab) where they are left empty.
# Folders shared with other packages (bin, lib/lua/5.4, ...) stay.
uninstall:
	rm -f '$(DESTDIR)$(LUA_LIBDIR)/shmemlab/core.so' '$(DESTDIR)$(BINDIR)/shmemlab' \
	  '$(DESTDIR)$(DOCDIR)/LICENSE' '$(DESTDIR)$(DOCDIR)/README.md'
	@set -e; for f in doc/*.md doc/*.svg; do rm -f '$(DESTDIR)$(DOCDIR)'/"$$f"; done
	@set -e; for f in $$(cd lua && find shmemlab -type f -name '*.lua' | sort) \
	  $$(find ops -type f -name '*.lua' | sed 's|^|shmemlab/|' | sort); do \
	  rm -f '$(DESTDIR)$(LUA_DATDIR)'/"$$f"; \
	done
	@set -e; for d in '$(DESTDIR)$(LUA_DATDIR)/shmemlab' '$(DESTDIR)$(LUA_LIBDIR)/shmemlab' \
	  '$(DESTDIR)$(DOCDIR)/doc' '$(DESTDIR)$(DOCDIR)'; do \
	  if [ -d "$$d" ]; then find "$$d" -depth -type d -empty -delete; fi; \
	done

# Installs under a fresh temporary prefix and runs the installed command from
# another folder with no Lua paths set: --help, --list and a small allgather
# must work and take the operator from the prefix. The prefix is removed.
install-check: all
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(MAKE) --no-print-directory install PREFIX="$$tmp/prefix" >/dev/null; \
	mkdir "$$tmp/elsewhere"; cd "$$tmp/elsewhere"; \
	run() { env -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4 -u SHMEMLAB_OPS \
	  "$$tmp/prefix/bin/shmemlab" "$$@"; }; \
	run --help | head -1 | grep -q '^usage: shmemlab OP' || { echo "install-check: --help" >&2; exit 1; }; \
	run --list | grep -q '^allgather ' || { echo "install-check: --list" >&2; exit 1; }; \
	out=$$(run allgather --pes 2 --count 256 -w 0 -n 1) || { echo "install-check: allgather failed" >&2; exit 1; }; \
	echo "$$out" | grep -q "($$tmp/prefix/share/lua/$(LUA_VERSION)/shmemlab/ops/allgather.lua)" \
	  || { echo "install-check: the operator did not come from the prefix" >&2; exit 1; }; \
	echo "$$out" | grep -q '^# Avg bus bandwidth' || { echo "install-check: no trailer" >&2; exit 1; }; \
	echo "install-check: shmemlab installed under a temporary prefix runs from another folder"

# The rockspec's install the same way, with Debian's luarocks (apt-get install luarocks;
# not in make test, which needs no luarocks): its tree's shmemlab runs from elsewhere.
luarocks-check: all
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	command -v luarocks >/dev/null || { echo "luarocks-check: no luarocks (apt-get install luarocks)" >&2; exit 1; }; \
	mkdir "$$tmp/src"; tar -c -C '$(CURDIR)' --exclude=./build --exclude=./build-asan --exclude=./output --exclude=./.git \
	  --exclude=./shmemlab . | tar -x -C "$$tmp/src"; \
	(cd "$$tmp/src" && luarocks --lua-version $(LUA_VERSION) --tree "$$tmp/tree" make --deps-mode=none \
	  $(ROCKSPEC) >"$$tmp/luarocks.log" 2>&1) || { cat "$$tmp/luarocks.log" >&2; exit 1; }; \
	cd "$$tmp"; out=$$(env -u LUA_PATH -u LUA_CPATH -u SHMEMLAB_OPS "$$tmp/tree/bin/shmemlab" allgather --pes 2 \
	  --count 256 -w 0 -n 1) || { echo "luarocks-check: the tree's shmemlab failed" >&2; exit 1; }; \
	echo "$$out" | grep -q "($$tmp/tree/share/lua/$(LUA_VERSION)/shmemlab/ops/allgather.lua)" \
	  || { echo "luarocks-check: the tree has no operators" >&2; exit 1; }; \
	echo "luarocks-check: luarocks --lua-version $(LUA_VERSION) make installs a working shmemlab"

# The module's dynamic symbols: luaopen_shmemlab_core and nothing else (the core's
# headers declare everything else hidden).
exports-check: $(MODULE)
	@syms=$$(nm -D --defined-only $(MODULE) | awk '$$2 ~ /^[TDRBVWiu]$$/ { print $$3 }' | sort | tr '\n' ' '); \
	if [ "$$syms" != "luaopen_shmemlab_core " ]; then \
	  echo "exports-check: $(MODULE) exports: $$syms" >&2; exit 1; fi; \
	echo "exports-check: $(MODULE) exports only luaopen_shmemlab_core"

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
local inst = env.build.install or {}
want, have = {}, {}
for _, f in ipairs(lines("find ops -name \"*.lua\" 2>/dev/null | sort")) do
  want[#want + 1] = string.format("[%q] = %q", "shmemlab." .. f:gsub("%.lua$$", ""):gsub("/", "."), f)
end
for name, v in pairs(inst.lua or {}) do have[#have + 1] = string.format("[%q] = %q", name, v) end
diff("operator", want, have)
if not (inst.bin and inst.bin.shmemlab == "bin/shmemlab") then
  print("rockspec-check: build.install.bin lacks shmemlab = \"bin/shmemlab\""); bad = bad + 1
end
if env.description.license ~= "MIT" then print("rockspec-check: license is not MIT"); bad = bad + 1 end
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
