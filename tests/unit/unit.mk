# GoogleTest runner for the pure core (src/core): every tests/unit/*.cpp, linked with the core
# library. Included by the top Makefile, which defines BUILD, HOST_CXX, HOST_FLAGS and
# $(BUILD)/libqueencore.a.
#   make unit                       build and run it
#   build/queen-core-tests --gtest_filter='Segment*'   run a subset
# scripts/test.sh runs every build/*-tests runner.
UNIT_SRCS = $(sort $(wildcard tests/unit/*.cpp))
UNIT_OBJS = $(patsubst tests/unit/%.cpp,$(BUILD)/unit/%.o,$(UNIT_SRCS))
UNIT_LIBS = -lgtest_main -lgtest -lpthread -lxxhash

all: $(BUILD)/queen-core-tests

$(BUILD)/unit/%.o: tests/unit/%.cpp
	@mkdir -p $(dir $@)
	$(HOST_CXX) $(HOST_FLAGS) -Itests/unit -c $< -o $@

# Each object's headers, as the compiler listed them (-MMD -MP).
-include $(wildcard $(UNIT_OBJS:.o=.d))

$(BUILD)/queen-core-tests: $(UNIT_OBJS) $(BUILD)/libqueencore.a
	$(HOST_CXX) $(HOST_FLAGS) -o $@ $(UNIT_OBJS) $(BUILD)/libqueencore.a $(UNIT_LIBS)

.PHONY: unit
unit: $(BUILD)/queen-core-tests
	$(BUILD)/queen-core-tests
