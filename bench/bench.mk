# The benchmarks' load generators, built like everything else (included by the top-level
# Makefile, which defines BUILD, HOST_CXX, HOST_FLAGS, PG_CONFIG and the core and sidecar
# libraries). Objects and programs go to build/bench/; the bench scripts call these targets.
#   make bench-tools       all four (never more than -j2 here)
#   build/bench/queenbench                  SQL load client of bench/run.sh, durable.sh, flat.sh, ab_push.sh
#   build/bench/queen-sidecar-loadgen       HTTP/SQL load client of bench/sidecar/*.sh
#   build/bench/streamsbench                Durable Streams appender of bench/streams/*.sh
#   build/bench/queen-sidecar-cache-memory  block cache memory probe of bench/sidecar/memory.sh
BENCH_BUILD     = $(BUILD)/bench
BENCH_CXXFLAGS  = $(HOST_FLAGS) -I$(shell $(PG_CONFIG) --includedir) -pthread
BENCH_TOOLS     = $(BENCH_BUILD)/queenbench $(BENCH_BUILD)/queen-sidecar-loadgen \
                  $(BENCH_BUILD)/streamsbench $(BENCH_BUILD)/queen-sidecar-cache-memory
BENCH_OBJS      = $(BENCH_BUILD)/queenbench.o $(BENCH_BUILD)/sidecar/loadgen.o \
                  $(BENCH_BUILD)/streams/streamsbench.o $(BENCH_BUILD)/sidecar/cache_memory.o

$(BENCH_BUILD)/%.o: bench/%.cpp
	@mkdir -p $(dir $@)
	$(HOST_CXX) $(BENCH_CXXFLAGS) -c $< -o $@

# The sidecar's headers are reached as "push/block_cache.h" (include root sidecar/).
$(BENCH_BUILD)/sidecar/cache_memory.o: bench/sidecar/cache_memory.cpp
	@mkdir -p $(dir $@)
	$(HOST_CXX) $(BENCH_CXXFLAGS) -Isidecar -c $< -o $@

$(BENCH_BUILD)/queenbench: $(BENCH_BUILD)/queenbench.o $(BUILD)/libqueencore.a
	$(HOST_CXX) $(BENCH_CXXFLAGS) -o $@ $^ -lpq -lxxhash

$(BENCH_BUILD)/queen-sidecar-loadgen: $(BENCH_BUILD)/sidecar/loadgen.o $(BUILD)/libqueencore.a
	$(HOST_CXX) $(BENCH_CXXFLAGS) -o $@ $^ -lpq -lxxhash

$(BENCH_BUILD)/streamsbench: $(BENCH_BUILD)/streams/streamsbench.o
	$(HOST_CXX) $(BENCH_CXXFLAGS) -o $@ $^

$(BENCH_BUILD)/queen-sidecar-cache-memory: $(BENCH_BUILD)/sidecar/cache_memory.o \
        $(BUILD)/libqueensidecar.a $(BUILD)/libqueencore.a
	$(HOST_CXX) $(BENCH_CXXFLAGS) -o $@ $^ -lpq -lsimdjson -lxxhash

-include $(wildcard $(BENCH_OBJS:.o=.d))

.PHONY: bench-tools
bench-tools: $(BENCH_TOOLS)
