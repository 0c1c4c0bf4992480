# The sidecar daemon, its GoogleTest runner and its fuzz target. Included by the top-level
# Makefile, which defines BUILD, HOST_CXX, HOST_FLAGS and $(BUILD)/libqueencore.a.
#   make build/queen-sidecar build/queen-sidecar-tests    (never more than -j2 here)
#   make sidecar-fuzz                                      (clang + libFuzzer)
SIDECAR_SRCS     = $(filter-out sidecar/main.cpp,$(wildcard sidecar/*.cpp sidecar/*/*.cpp))
SIDECAR_OBJS     = $(patsubst sidecar/%.cpp,$(BUILD)/sidecar/%.o,$(SIDECAR_SRCS))
SIDECAR_HDRS     = $(wildcard sidecar/*.h sidecar/*/*.h) $(wildcard src/core/*/*.h)
SIDECAR_TEST_SRCS = $(wildcard tests/sidecar/*.cpp)
SIDECAR_TEST_OBJS = $(patsubst tests/sidecar/%.cpp,$(BUILD)/tests/sidecar/%.o,$(SIDECAR_TEST_SRCS))
SIDECAR_CXXFLAGS = $(HOST_FLAGS) -Isidecar -I$(shell $(PG_CONFIG) --includedir) -pthread
SIDECAR_LIBS     = -lpq -lsimdjson -lxxhash -lpthread -lcrypto  # libcrypto: payload encryption (sidecar/crypto/)

$(BUILD)/sidecar/%.o: sidecar/%.cpp
	@mkdir -p $(dir $@)
	$(HOST_CXX) $(SIDECAR_CXXFLAGS) -c $< -o $@

$(BUILD)/libqueensidecar.a: $(SIDECAR_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/queen-sidecar: $(BUILD)/sidecar/main.o $(BUILD)/libqueensidecar.a $(BUILD)/libqueencore.a
	$(HOST_CXX) $(SIDECAR_CXXFLAGS) -o $@ $^ $(SIDECAR_LIBS)

$(BUILD)/tests/sidecar/%.o: tests/sidecar/%.cpp
	@mkdir -p $(dir $@)
	$(HOST_CXX) $(SIDECAR_CXXFLAGS) -Itests/sidecar -c $< -o $@

$(BUILD)/queen-sidecar-tests: $(SIDECAR_TEST_OBJS) $(BUILD)/libqueensidecar.a $(BUILD)/libqueencore.a
	$(HOST_CXX) $(SIDECAR_CXXFLAGS) -o $@ $^ -lgtest -lgtest_main $(SIDECAR_LIBS)

# `make` builds the sidecar and its runner unless told not to: QUEEN_SIDECAR=no (the package
# build's per-PostgreSQL-version extension pass) or QUEEN_TEST_RUNNERS=no (no GoogleTest runner).
QUEEN_SIDECAR ?= yes
ifneq ($(QUEEN_SIDECAR),no)
all: $(BUILD)/queen-sidecar
ifneq ($(QUEEN_TEST_RUNNERS),no)
all: $(BUILD)/queen-sidecar-tests
endif
endif

# Each object's headers, as the compiler listed them (-MMD -MP): a header change rebuilds only
# the objects that include it.
-include $(wildcard $(SIDECAR_OBJS:.o=.d) $(SIDECAR_TEST_OBJS:.o=.d) $(BUILD)/sidecar/main.d)

.PHONY: sidecar install-sidecar sidecar-fuzz
sidecar: $(BUILD)/queen-sidecar
# `make install` installs the sidecar beside PostgreSQL's programs (developers, scripts/test.sh);
# the Debian package installs it alone into /usr/bin (make install-sidecar SIDECAR_BINDIR=/usr/bin).
SIDECAR_BINDIR ?= $(shell $(PG_CONFIG) --bindir)
ifneq ($(QUEEN_SIDECAR),no)
install: install-sidecar
endif
install-sidecar: $(BUILD)/queen-sidecar
	install -d '$(DESTDIR)$(SIDECAR_BINDIR)'
	install -m 755 $(BUILD)/queen-sidecar '$(DESTDIR)$(SIDECAR_BINDIR)/queen-sidecar'

# libFuzzer target for request parsing (clang only; not part of `all`), differential against the
# first (simdjson) parser kept in tests/fuzz/reference_push_parser.cpp.
FUZZ_CXX ?= clang++
FUZZ_SRCS = tests/fuzz/push_request_fuzz.cpp tests/fuzz/reference_push_parser.cpp \
            sidecar/push/push_request.cpp sidecar/common/json_scan.cpp sidecar/common/json_writer.cpp \
            src/core/common/hash.cpp src/core/common/uuidv7.cpp src/core/common/segment_codec.cpp
$(BUILD)/fuzz/push_request_fuzz: $(FUZZ_SRCS) tests/fuzz/reference_push_parser.h $(SIDECAR_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -Isrc -Isidecar -Itests/fuzz \
	    -o $@ $(FUZZ_SRCS) -lsimdjson -lxxhash
# New inputs go to a scratch folder; the repo corpus (tests/fuzz/corpus) is only read.
sidecar-fuzz: $(BUILD)/fuzz/push_request_fuzz
	@mkdir -p $(BUILD)/fuzz/corpus
	$(BUILD)/fuzz/push_request_fuzz -max_total_time=$${FUZZ_SECONDS:-60} -max_len=4096 $(BUILD)/fuzz/corpus tests/fuzz/corpus

# docs/sidecar.md's settings table, rewritten from the table in sidecar/settings/settings.cpp (the
# GoogleTest SettingsTest.DocsTableIsGenerated fails while the two differ).
.PHONY: settings-docs
settings-docs: $(BUILD)/queen-sidecar
	$(BUILD)/queen-sidecar --settings-markdown >$(BUILD)/settings-table.md
	awk -v gen=$(BUILD)/settings-table.md \
	    '/^<!-- end of settings table -->/ {skip = 0} !skip {print} \
	     /^<!-- settings table: generated/ {while ((getline l < gen) > 0) print l; skip = 1}' \
	    docs/sidecar.md >$(BUILD)/sidecar.md.new && mv $(BUILD)/sidecar.md.new docs/sidecar.md
