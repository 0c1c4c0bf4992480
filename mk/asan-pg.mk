# The extension under AddressSanitizer, for the leak run over its error paths
# (tests/integration/asan_pg_leaks.sh). Included by the top-level Makefile after PGXS, whose
# compiler flags (CXX, CXXFLAGS, CPPFLAGS, SHLIB_LINK) it reuses.
#   make asan-pg   build/asan-pg/queen.so: every extension source compiled again with
#                  -fsanitize=address into build/asan-pg/ (never mixed with the normal objects)
# The library links the shared ASan runtime (gcc's libasan); an uninstrumented postgres loads it
# only with that runtime preloaded (LD_PRELOAD, as the leak run does).
ASAN_PG_DIR   = $(BUILD)/asan-pg
ASAN_PG_OBJS  = $(patsubst %.cpp,$(ASAN_PG_DIR)/%.o,$(CORE_SRCS) $(PG_SRCS))
ASAN_PG_FLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address

.PHONY: asan-pg
asan-pg: $(ASAN_PG_DIR)/queen.so $(DATA_built)

$(ASAN_PG_DIR)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(filter-out -O2,$(CXXFLAGS)) $(ASAN_PG_FLAGS) $(CPPFLAGS) -c $< -o $@

$(ASAN_PG_DIR)/queen.so: $(ASAN_PG_OBJS)
	$(CXX) -shared -fsanitize=address -o $@ $^ $(LDFLAGS) $(SHLIB_LINK)

-include $(wildcard $(ASAN_PG_OBJS:.o=.d))
