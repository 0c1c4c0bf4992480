# Checks beside the normal build: sanitizer runners, the core fuzz target, static analysis.
# Included last by the top-level Makefile, which (with tests/unit/unit.mk and sidecar/sidecar.mk)
# defines BUILD, CORE_SRCS, SIDECAR_SRCS and the rules this file reuses.
#   make sanitize          core and sidecar GoogleTest runners under ASan + UBSan (build/asan/)
#   make sanitize-build    build them only (scripts/test.sh runs them one by one)
#   make tsan              the sidecar GoogleTest runner under ThreadSanitizer (build/tsan/)
#   make tsan-build        build it only (scripts/test.sh runs and counts it)
#   make sidecar-fuzz-regress  the sidecar fuzz target over tests/fuzz/corpus, once, with a
#                          plain g++ driver under ASan + UBSan (no libFuzzer needed)
#   make fuzz-core         libFuzzer over the segment decoder; FUZZ_SECONDS=60 by default
#   make lint              clang-tidy (.clang-tidy) and cppcheck over src/core and sidecar/
# Never more than -j2 on the shared machine.

# ---- sanitizers ----
# The runners are built by the same rules as the normal ones (unit.mk, sidecar.mk), by a
# sub-make whose BUILD is build/asan and whose compiler flags carry the sanitizers: object
# files never mix with the normal build, and new sources are picked up with no edit here.
SAN_CXX   ?= $(if $(shell command -v clang++ 2>/dev/null),clang++,g++)
SAN_DIR    = $(BUILD)/asan
# The normal host flags (warnings, dependency files, EXTRA_HOST_FLAGS) with -O1 instead of -O2.
SAN_FLAGS  = $(filter-out -O2,$(HOST_FLAGS)) -O1 -fno-omit-frame-pointer \
             -fsanitize=address,undefined -fno-sanitize-recover=undefined
SAN_TESTS  = $(SAN_DIR)/queen-core-tests $(SAN_DIR)/queen-sidecar-tests
# Any report ends the run with a non-zero exit (leaks included), with a stack for UBSan.
SAN_ENV    = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1 \
             UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: sanitize sanitize-build
sanitize-build:
	$(MAKE) --no-print-directory BUILD=$(SAN_DIR) HOST_CXX=$(SAN_CXX) \
	    HOST_FLAGS='$(SAN_FLAGS)' $(SAN_TESTS)

# Run every runner even when one fails; fail at the end if any did.
sanitize: sanitize-build
	@rc=0; for t in $(SAN_TESTS); do \
	    echo "---- $$t ----"; $(SAN_ENV) $$t || rc=1; \
	done; exit $$rc

# ---- ThreadSanitizer: the sidecar's runner (its flusher, cache and server are the threaded
# parts). Same sub-make pattern as above, in build/tsan, with g++ (TSan needs no clang).
TSAN_CXX   ?= g++
TSAN_DIR    = $(BUILD)/tsan
TSAN_FLAGS  = $(filter-out -O2,$(HOST_FLAGS)) -O1 -fno-omit-frame-pointer -fsanitize=thread -Wno-tsan
TSAN_TESTS  = $(TSAN_DIR)/queen-sidecar-tests
# halt_on_error: the first race ends the runner (no summary line -> counted as a failure).
TSAN_ENV    = TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

.PHONY: tsan tsan-build
tsan-build:
	$(MAKE) --no-print-directory BUILD=$(TSAN_DIR) HOST_CXX=$(TSAN_CXX) \
	    HOST_FLAGS='$(TSAN_FLAGS)' $(TSAN_TESTS)

tsan: tsan-build
	$(TSAN_ENV) $(TSAN_TESTS)

# ---- the sidecar fuzz target's seed corpus, replayed once with g++ (ASan + UBSan) ----
SIDECAR_REPLAY = $(BUILD)/fuzz/push_request_replay
$(SIDECAR_REPLAY): tests/fuzz/replay_main.cpp $(FUZZ_SRCS) tests/fuzz/reference_push_parser.h $(SIDECAR_HDRS)
	@mkdir -p $(dir $@)
	g++ -std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	    -fno-sanitize-recover=undefined -Isrc -Isidecar -Itests/fuzz \
	    -o $@ tests/fuzz/replay_main.cpp $(FUZZ_SRCS) -lsimdjson -lxxhash

.PHONY: sidecar-fuzz-regress
sidecar-fuzz-regress: $(SIDECAR_REPLAY)
	$(SAN_ENV) $(SIDECAR_REPLAY) $(sort $(wildcard tests/fuzz/corpus/*))

# ---- libFuzzer over the segment decoder (clang only) ----
FUZZ_CXX ?= clang++
FUZZ_CORE_DIR = $(BUILD)/fuzz_core
FUZZ_CORE_SRCS = tests/fuzz_core/fuzz_segment.cpp src/core/common/segment_codec.cpp src/core/common/uuidv7.cpp

$(FUZZ_CORE_DIR)/fuzz_segment: $(FUZZ_CORE_SRCS) $(wildcard src/core/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) -std=c++17 -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Isrc \
	    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	    -o $@ $(FUZZ_CORE_SRCS)

# New inputs go to a scratch folder; the repo corpus (tests/fuzz_core/corpus) is only read.
# Crashes are written to build/fuzz_core/ as crash-<sha1>; replay one with
#   build/fuzz_core/fuzz_segment build/fuzz_core/crash-<sha1>
.PHONY: fuzz-core fuzz-core-regress
fuzz-core: $(FUZZ_CORE_DIR)/fuzz_segment
	@mkdir -p $(FUZZ_CORE_DIR)/corpus
	$(SAN_ENV) $(FUZZ_CORE_DIR)/fuzz_segment -max_total_time=$${FUZZ_SECONDS:-60} \
	    -max_len=4096 -artifact_prefix=$(FUZZ_CORE_DIR)/ \
	    $(FUZZ_CORE_DIR)/corpus tests/fuzz_core/corpus

# Every seed input once (no fuzzing): the regression run scripts/test.sh does.
fuzz-core-regress: $(FUZZ_CORE_DIR)/fuzz_segment
	$(SAN_ENV) $(FUZZ_CORE_DIR)/fuzz_segment $(sort $(wildcard tests/fuzz_core/corpus/*))

# ---- static analysis (not in CI; findings are printed, and make fails when there are any) ----
LINT_SRCS   = $(sort $(CORE_SRCS) $(wildcard sidecar/*.cpp sidecar/*/*.cpp))
LINT_FLAGS  = -std=c++17 -Isrc -Isidecar -I$(shell $(PG_CONFIG) --includedir)
CLANG_TIDY ?= clang-tidy
CPPCHECK   ?= cppcheck

# One clang-tidy run per file, so -j2 helps; nothing is written, so every run checks again.
# A file fails when clang-tidy printed anything (its "N warnings generated" chatter aside).
$(BUILD)/lint/%.tidy: %
	@out=$$($(CLANG_TIDY) --quiet $< -- $(LINT_FLAGS) 2>&1 | grep -v -e '^[0-9]* warnings\? generated\.$$' \
	    -e '^Suppressed [0-9]* warnings' -e '^Use -header-filter' -e '^Error while processing'); \
	    [ -z "$$out" ] || { printf '%s\n' "$$out"; exit 1; }

.PHONY: lint lint-tidy lint-cppcheck
lint-tidy: $(patsubst %,$(BUILD)/lint/%.tidy,$(LINT_SRCS))

lint-cppcheck:
	$(CPPCHECK) --quiet --std=c++17 --language=c++ --enable=warning,performance,portability \
	    --inline-suppr --suppress=missingIncludeSystem --error-exitcode=1 \
	    -Isrc -Isidecar $(LINT_SRCS)

# Both tools always run; the target fails when either reported something.
lint:
	@rc=0; $(MAKE) --no-print-directory -k lint-tidy || rc=1; \
	$(MAKE) --no-print-directory lint-cppcheck || rc=1; exit $$rc
