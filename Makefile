# judgerl - build, test and demo. `make demo` and `make test` install missing Debian packages first.
#   make            release build: build/rel/judgerl
#   make asan       sanitizer build (ASan + UBSan): build/asan/judgerl
#   make test       deps + both builds + the whole test suite under both + fuzz smoke runs
#   make demo       deps + release build + `judgerl demo`
#   make fuzz       libFuzzer targets (clang): build/fuzz/
#   make check-warnings  both builds with -Werror
#   make format     clang-format the lines changed since main (.clang-format; FILES="..." for whole files; not in make test)
#   make install PREFIX=/usr/local   binary, headers, static and shared library, pkg-config file, and
#                        configs/ data/ templates/ under PREFIX/share/judgerl (DESTDIR honoured)

CC      ?= cc
CXX     ?= c++
PKGS    := libcurl jansson yaml-0.1 libpcre2-8 libutf8proc sqlite3 openblas libmicrohttpd zlib
# oneDNN (libdnnl-dev, bf16 matmuls) ships no pkg-config file: -ldnnl in LIBS
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
WARN    := -Wall -Wextra -Wno-unused-parameter
BASE    := -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -Iexamples -fopenmp $(WARN) $(EXTRA_CFLAGS)
BASECXX := -std=c++17 -D_GNU_SOURCE -Iinclude -Isrc $(WARN) $(EXTRA_CFLAGS)
LIBS     = $(PKG_LIBS) $(MPI_LIBS) -ldnnl -lcld2 -lstdc++ -lm -lpthread -fopenmp
# MPI (OpenMPI, libopenmpi-dev) is compiled in when its pkg-config file is there; MPI=0 builds without it
# (into build/<b>-nompi): that binary refuses a multi-rank launch (docs/SCALE.md).
MPI ?= $(if $(shell pkg-config --exists ompi-c 2>/dev/null && echo y),1,0)
ifeq ($(MPI),1)
  MPI_CFLAGS := -DJR_MPI $(shell pkg-config --cflags ompi-c 2>/dev/null)
  MPI_LIBS   := $(shell pkg-config --libs ompi-c 2>/dev/null)
endif

# One portable build: everything is compiled for the architecture's baseline (x86-64-v2: SSE4.2, any x86-64
# CPU of the last 15 years; armv8-a on aarch64), and the hot kernels (src/nn/k_*.c) once more per ISA level
# (KLEVELS), chosen at start-up from the CPU (src/core/cpu.c; JR_CPU=baseline|avx2|avx512 forces a lower
# one). `make NATIVE=1` compiles the rest for this machine's CPU instead (-march=native: that binary runs
# only on CPUs at least as new); the kernels keep their levels either way.
NATIVE  ?= 0
ARCH    := $(shell $(CC) -dumpmachine 2>/dev/null | cut -d- -f1)
ifeq ($(ARCH),x86_64)
  BASELINE_ARCH := -march=x86-64-v2
  KLEVELS       := baseline avx2 avx512
  KFLAGS_baseline := -march=x86-64-v2
  KFLAGS_avx2     := -march=x86-64-v3
  KFLAGS_avx512   := -march=x86-64-v4
else ifeq ($(ARCH),aarch64)
  BASELINE_ARCH := -march=armv8-a
  KLEVELS       := baseline
  KFLAGS_baseline := -march=armv8-a
else
  BASELINE_ARCH :=
  KLEVELS       := baseline
endif
ARCH_FLAGS := $(if $(filter 1,$(NATIVE)),-march=native,$(BASELINE_ARCH))
REL_FLAGS  := -O2 -g $(ARCH_FLAGS) -DNDEBUG
ASAN_FLAGS := -O1 -g $(ARCH_FLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
BUILD ?= rel
# the fuzz build (clang, -O1 with the sanitizers) cannot vectorize some `omp simd` loops; that is expected there
FUZZ_FLAGS := -O1 -g $(ARCH_FLAGS) -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -Wno-pass-failed
ifeq ($(BUILD),asan)
  MODE_FLAGS := $(ASAN_FLAGS)
else ifeq ($(BUILD),fuzz)
  MODE_FLAGS := $(FUZZ_FLAGS)
else
  MODE_FLAGS := $(REL_FLAGS)
endif
OUT := build/$(BUILD)$(if $(filter 1,$(MPI)),,$(if $(shell pkg-config --exists ompi-c 2>/dev/null && echo y),-nompi))$(if $(filter 1,$(NATIVE)),-native)

KERN_SRC := $(wildcard src/nn/k_*.c)
LIB_SRC  := $(filter-out src/cli/% $(KERN_SRC),$(wildcard src/*/*.c))
LIB_CXX  := $(filter-out src/cli/%,$(wildcard src/*/*.cc))
CLI_SRC  := $(wildcard src/cli/*.c)
# The 8-ball demo, a program on the library (examples/eightball/): its objects but main.c go into
# libeightball.a, which `judgerl demo` (and `judgerl seed1`) link; main.c makes it a program of its own.
EX_SRC   := $(filter-out examples/eightball/main.c,$(wildcard examples/eightball/*.c))
EX_OBJ   := $(patsubst %.c,$(OUT)/obj/%.o,$(EX_SRC))
TEST_SRC := $(wildcard tests/test_*.c)
# each kernel file once per level: build/<b>/obj/src/nn/k_x.<level>.o
KERN_OBJ := $(foreach l,$(KLEVELS),$(patsubst %.c,$(OUT)/obj/%.$(l).o,$(KERN_SRC)))
LIB_OBJ  := $(patsubst %.c,$(OUT)/obj/%.o,$(LIB_SRC)) $(patsubst %.cc,$(OUT)/obj/%.o,$(LIB_CXX)) $(KERN_OBJ)
CLI_OBJ  := $(patsubst %.c,$(OUT)/obj/%.o,$(CLI_SRC))
TEST_BIN := $(patsubst tests/%.c,$(OUT)/tests/%,$(TEST_SRC))
FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)
FUZZ_BIN := $(patsubst fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
HEADERS  := $(wildcard include/judgerl/*.h src/*/*.h tests/*.h)
# The shared library's soname carries the public API's version (JR_API_VERSION, include/judgerl/version.h):
# build/<b>/libjudgerl.so.N, and libjudgerl.so -> libjudgerl.so.N for linking with -ljudgerl.
API_VERSION := $(shell sed -n 's/^\#define JR_API_VERSION \([0-9][0-9]*\).*/\1/p' include/judgerl/version.h)
SONAME   := libjudgerl.so.$(API_VERSION)

.PHONY: FORCE all build asan deps deps-test deps-dev test test-fast demo clean fuzz fuzz-targets fuzz-smoke check-warnings install format structure-check
.DEFAULT_GOAL := all

all: build
build: $(OUT)/judgerl $(OUT)/libjudgerl.so $(OUT)/examples/eightball $(TEST_BIN)

asan:
	@$(MAKE) --no-print-directory BUILD=asan build

# Each object records the headers it includes (-MMD -MP: build/<b>/obj/**/*.d), so a header
# change rebuilds only what includes it.
# Library objects are position-independent: one set of objects makes both libjudgerl.a and
# libjudgerl.so.N. -fno-semantic-interposition keeps calls inside a file inlinable as without -fPIC
# (and the static link into judgerl resolves every call directly, as before).
$(LIB_OBJ): PIC := -fPIC -fno-semantic-interposition
# Objects also depend on the compile command: a change of flags (a build dir from before, EXTRA_CFLAGS,
# MPI=0/1) rebuilds them. build/<b>/compile-flags is rewritten only when the command differs.
COMPILE_ID := $(CC) $(CXX) $(BASE) $(BASECXX) $(MODE_FLAGS) $(PKG_CFLAGS) $(MPI_CFLAGS) -fPIC -fno-semantic-interposition $(foreach l,$(KLEVELS),$(l):$(KFLAGS_$(l)))
$(OUT)/compile-flags: FORCE
	@mkdir -p $(dir $@)
	@echo '$(COMPILE_ID)' | cmp -s - $@ || echo '$(COMPILE_ID)' >$@
$(LIB_OBJ) $(CLI_OBJ) $(EX_OBJ) $(OUT)/obj/examples/eightball/main.o: $(OUT)/compile-flags
FORCE:
$(OUT)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(MODE_FLAGS) $(PIC) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

# A kernel file at one level: the mode's flags without its -march, then the level's. (-Wno-psabi: the 32-byte
# vectors of k_vec8.h pass between static inline helpers only, so the ABI note below AVX concerns nothing.)
define KERN_RULE
$$(OUT)/obj/%.$(1).o: %.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(BASE) $$(filter-out -march=%,$$(MODE_FLAGS)) $$(KFLAGS_$(1)) -DJR_KLEVEL=$(1) -Wno-psabi $$(PIC) $$(PKG_CFLAGS) -MMD -MP -c $$< -o $$@
endef
$(foreach l,$(KLEVELS),$(eval $(call KERN_RULE,$(l))))

# only the rank layer sees mpi.h
$(OUT)/obj/src/core/dist.o: BASE += $(MPI_CFLAGS)

$(OUT)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(BASECXX) $(MODE_FLAGS) $(PIC) -MMD -MP -c $< -o $@

$(OUT)/libjudgerl.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The shared library records what it needs (-z defs: no symbol left for the program to supply).
$(OUT)/$(SONAME): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,-z,defs $(MODE_FLAGS) $^ -o $@ $(LIBS)

$(OUT)/libjudgerl.so: $(OUT)/$(SONAME)
	ln -sf $(SONAME) $@

$(OUT)/libeightball.a: $(EX_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(OUT)/judgerl: $(CLI_OBJ) $(OUT)/libeightball.a $(OUT)/libjudgerl.a
	$(CC) $(MODE_FLAGS) -fopenmp $^ -o $@ $(LIBS)

$(OUT)/examples/eightball: $(OUT)/obj/examples/eightball/main.o $(OUT)/libeightball.a $(OUT)/libjudgerl.a
	@mkdir -p $(dir $@)
	$(CC) $(MODE_FLAGS) -fopenmp $^ -o $@ $(LIBS)

$(OUT)/tests/%: tests/%.c $(OUT)/libeightball.a $(OUT)/libjudgerl.a
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(MODE_FLAGS) $(PKG_CFLAGS) -MMD -MP -Itests $< $(OUT)/libeightball.a $(OUT)/libjudgerl.a -o $@ $(LIBS) $(TEST_LDFLAGS)

# Linked against the shared library (found beside tests/ at run time), not the static one.
$(OUT)/tests/test_api_version: tests/test_api_version.c $(OUT)/libjudgerl.so
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(MODE_FLAGS) $(PKG_CFLAGS) -MMD -MP -Itests $< -o $@ -L$(OUT) -ljudgerl -Wl,-rpath,'$$ORIGIN/..' -ldl

# The allocation-failure sweep routes judgerl's own malloc/calloc/realloc/strdup/strndup calls
# and jansson's parser entry points through its counters (link-time wrapping: test-only, the
# library is unchanged).
$(OUT)/tests/test_alloc_sweep: TEST_LDFLAGS := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup \
  -Wl,--wrap=json_loadb,--wrap=json_loads,--wrap=json_load_file

# libFuzzer targets: every fuzz/fuzz_*.c, built with clang against a fuzz-instrumented library.
# Run one with e.g. build/fuzz/fuzz_yaml_config -max_total_time=60
fuzz:
	@sh tools/deps.sh dev-fuzz
	@$(MAKE) --no-print-directory -j2 BUILD=fuzz CC=clang CXX=clang++ fuzz-targets

fuzz-targets: $(FUZZ_BIN)

build/fuzz/fuzz_%: fuzz/fuzz_%.c $(OUT)/libjudgerl.a
	@mkdir -p $(dir $@)
	$(CC) $(BASE) -O1 -g -fsanitize=fuzzer,address,undefined $(PKG_CFLAGS) -MMD -MP $< $(OUT)/libjudgerl.a -o $@ $(LIBS)

deps:
	@sh tools/deps.sh build

deps-test:
	@sh tools/deps.sh test

deps-dev:
	@sh tools/deps.sh dev

# clang-format (Debian's clang-format, the dev group of tools/deps.sh) with the house style of .clang-format.
# `make format` formats the lines that differ from FORMAT_BASE (main) in the work tree (git clang-format):
# the style keeps several short statements on one line, which clang-format cannot, so whole files are not
# rewritten. `make format FILES="src/x/new.c ..."` formats whole files. Not part of `make test`.
FORMAT_BASE ?= main
format:
	@command -v clang-format >/dev/null 2>&1 || { echo "make format: clang-format is missing: sh tools/deps.sh dev (Debian clang-format)" >&2; exit 1; }
	$(if $(FILES),clang-format -i $(FILES),git clang-format --binary clang-format --extensions c,cc,h $(FORMAT_BASE) -- include src tests fuzz bench tools)

# The structure check alone (also run by tests/run.sh as tests/test_structure.sh): no function in src/
# over 120 lines, no include from a lower layer to a higher one, no circle between parts or files.
structure-check:
	@/usr/bin/python3 tools/structure_check.py

# The whole suite under the release build and the sanitizer build (one summary line), then a short
# run of every libFuzzer target from its committed corpus (FUZZ_SECONDS each, tools/fuzz_smoke.sh).
FUZZ_SECONDS ?= 10
test: deps-test
	@$(MAKE) --no-print-directory -j2 BUILD=rel build
	@$(MAKE) --no-print-directory -j2 BUILD=asan build
	@$(MAKE) --no-print-directory -j2 BUILD=fuzz CC=clang CXX=clang++ fuzz-targets
	@JR_FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/run.sh build/rel build/asan

# Only the fuzz smoke runs (after `make fuzz`).
fuzz-smoke:
	@sh tools/fuzz_smoke.sh $(FUZZ_SECONDS)

# The suite under the release build only (quick local iteration).
test-fast:
	@$(MAKE) --no-print-directory -j2 BUILD=rel build
	@sh tests/run.sh build/rel

demo: deps
	@$(MAKE) --no-print-directory -j2 BUILD=rel build
	./build/rel/judgerl demo --out runs/demo

check-warnings:
	@$(MAKE) --no-print-directory -j2 BUILD=rel EXTRA_CFLAGS=-Werror build
	@$(MAKE) --no-print-directory -j2 BUILD=asan EXTRA_CFLAGS=-Werror build

# `judgerl` on PATH as the README writes it: PREFIX/bin/judgerl finds its configs, data and templates
# in PREFIX/share/judgerl; C programs link with `pkg-config --cflags --libs judgerl`.
PREFIX ?= /usr/local
INSTALL_DIR = $(DESTDIR)$(PREFIX)
install:
	@$(MAKE) --no-print-directory -j2 BUILD=rel build/rel/judgerl build/rel/libjudgerl.so
	mkdir -p $(INSTALL_DIR)/bin $(INSTALL_DIR)/include/judgerl $(INSTALL_DIR)/lib/pkgconfig $(INSTALL_DIR)/share/judgerl
	cp build/rel/judgerl $(INSTALL_DIR)/bin/judgerl
	cp include/judgerl/*.h $(INSTALL_DIR)/include/judgerl/
	cp build/rel/libjudgerl.a $(INSTALL_DIR)/lib/libjudgerl.a
	rm -f $(INSTALL_DIR)/lib/$(SONAME) $(INSTALL_DIR)/lib/libjudgerl.so
	cp build/rel/$(SONAME) $(INSTALL_DIR)/lib/$(SONAME)
	ln -s $(SONAME) $(INSTALL_DIR)/lib/libjudgerl.so
	cp -R configs data templates $(INSTALL_DIR)/share/judgerl/
	printf '%s\n' 'prefix=$(PREFIX)' 'includedir=$${prefix}/include' 'libdir=$${prefix}/lib' '' \
	  'Name: judgerl' 'Description: RL for language models with LLM-judge rewards' \
	  'Version: $(shell sed -n 's/^\#define JR_VERSION "\([^"]*\)".*/\1/p' include/judgerl/version.h)' \
	  'Cflags: -I$${includedir} $(PKG_CFLAGS) -fopenmp' \
	  'Libs: -L$${libdir} -Wl,-rpath,$${libdir} -ljudgerl $(PKG_LIBS) -ldnnl -lcld2 -lstdc++ -lm -lpthread -fopenmp' \
	  >$(INSTALL_DIR)/lib/pkgconfig/judgerl.pc
	@echo "installed: $(INSTALL_DIR)/bin/judgerl (add $(PREFIX)/bin to PATH if it is not there)"

clean:
	rm -rf build

# Header dependencies recorded by -MMD (absent on the first build, when everything is built anyway).
-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(EX_OBJ:.o=.d) $(OUT)/obj/examples/eightball/main.d $(TEST_BIN:=.d) $(FUZZ_BIN:=.d)
