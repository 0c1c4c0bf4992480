# queen: PGXS build of the extension, plus the pure core library, the sidecar and the unit tests.
#   make               build the extension, the sidecar and the unit-test runner
#   make install       install the extension (and the sidecar binary beside PostgreSQL's programs)
#   make QUEEN_TEST_RUNNERS=no QUEEN_SIDECAR=no   the extension alone (debian/rules builds the sidecar
#                      on its own and installs it with SIDECAR_BINDIR=/usr/bin; see sidecar/sidecar.mk)
#   make installcheck  pg_regress + isolation specs against a running server (see scripts/test.sh)
#   make unit          build and run the GoogleTest runner
EXTENSION   = queen
EXTVERSION  = 0.4.0
MODULE_big  = queen

CORE_SRCS = $(wildcard src/core/*/*.cpp)
PG_SRCS   = $(wildcard src/pg/*.cpp src/pg/*/*.cpp)
OBJS      = $(CORE_SRCS:.cpp=.o) $(PG_SRCS:.cpp=.o)

# Released versions are frozen (committed in sql/ as installed): the install scripts of 0.1.0,
# 0.2.0 and 0.3.0 (queen_router's too), and the upgrades 0.1.0 -> 0.2.0 -> 0.3.0. The current
# version's install scripts and their upgrade scripts from the last release are built into
# build/sql/ by mk/sql.mk and mk/router.mk (PGXS installs DATA_built by path).
RELEASED    = 0.1.0 0.2.0 0.3.0
SQL_VERSION = $(EXTVERSION)
SQL_FROM    = 0.3.0
SQL_OUT     = build/sql
DATA       = $(foreach v,$(RELEASED),sql/$(EXTENSION)--$(v).sql) \
             sql/$(EXTENSION)--0.1.0--0.2.0.sql sql/$(EXTENSION)--0.2.0--0.3.0.sql
DATA_built = $(SQL_OUT)/$(EXTENSION)--$(EXTVERSION).sql \
             $(foreach f,$(SQL_FROM),$(SQL_OUT)/$(EXTENSION)--$(f)--$(EXTVERSION).sql)
# The router extension (issue 20, mk/router.mk): its control file, the frozen 0.3.0 script, and
# the current install and upgrade scripts.
DATA       += queen_router.control sql/queen_router--0.3.0.sql
DATA_built += $(SQL_OUT)/queen_router--$(EXTVERSION).sql \
              $(foreach f,$(SQL_FROM),$(SQL_OUT)/queen_router--$(f)--$(EXTVERSION).sql)
EXTRA_CLEAN = build $(OBJS:.o=.d)

# pg_regress inputs live in tests/regress/sql; their expected output in expected/ (reached as
# tests/regress/expected, a link, since pg_regress reads both below one --inputdir).
REGRESS = $(patsubst tests/regress/sql/%.sql,%,$(sort $(wildcard tests/regress/sql/*.sql)))
REGRESS_OPTS = --inputdir=tests/regress --load-extension=$(EXTENSION)
ISOLATION = $(patsubst tests/isolation/specs/%.spec,%,$(sort $(wildcard tests/isolation/specs/*.spec)))
ISOLATION_OPTS = --inputdir=tests/isolation --load-extension=$(EXTENSION)

PG_CPPFLAGS = -I$(CURDIR)/src
PG_CXXFLAGS = -MMD -MP -std=c++17 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-register
SHLIB_LINK  = -lxxhash -lstdc++
# Debian builds PostgreSQL with LLVM; skip the bitcode pass (it would not see -std=c++17).
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Header dependencies of the extension's objects (PGXS tracks none by itself).
-include $(wildcard $(OBJS:.o=.d))

# The install and upgrade scripts (schema, routines and privileges parts of sql/): mk/sql.mk.
include mk/sql.mk
include mk/router.mk

# ---- everything outside PostgreSQL: core library, unit tests, sidecar ----
BUILD      = build
HOST_CXX   ?= g++
HOST_FLAGS = -MMD -MP -std=c++17 -O2 -g -Wall -Wextra -Isrc $(EXTRA_HOST_FLAGS)
CORE_HOST_OBJS = $(patsubst src/core/%.cpp,$(BUILD)/core/%.o,$(CORE_SRCS))

$(BUILD)/core/%.o: src/core/%.cpp
	@mkdir -p $(dir $@)
	$(HOST_CXX) $(HOST_FLAGS) -c $< -o $@

$(BUILD)/libqueencore.a: $(CORE_HOST_OBJS)
	rm -f $@ && ar rcs $@ $^
-include $(wildcard $(CORE_HOST_OBJS:.o=.d))

# QUEEN_TEST_RUNNERS=no leaves the GoogleTest runners out of `make` (the package build).
QUEEN_TEST_RUNNERS ?= yes
ifneq ($(QUEEN_TEST_RUNNERS),no)
-include tests/unit/unit.mk
endif
-include sidecar/sidecar.mk
-include bench/bench.mk

.PHONY: format
format:
	clang-format -i $(CORE_SRCS) $(PG_SRCS) $(wildcard src/*/*/*.h sidecar/*.cpp sidecar/*/*.cpp sidecar/*.h sidecar/*/*.h tests/unit/*.cpp)

-include mk/checks.mk
-include mk/asan-pg.mk
