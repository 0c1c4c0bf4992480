# The SQL scripts of queen, built from the sources in sql/ (see "Upgrades" in
# docs/sql-interface.md). Every source is one of three parts:
#   schema     sql/schema/NN_*.sql (00_core.sql first): tables, indexes, pg_dump registrations,
#              created once; a later version changes them there AND in its delta
#   routines   sql/modules/NN_*.sql (00_core.sql first): functions, procedures, views, triggers,
#              all CREATE OR REPLACE, run again by every upgrade
#   privileges sql/privileges.sql: roles, and every REVOKE and GRANT, run last by every script
# so that
#   queen--V.sql       = schema + routines + privileges                        (CREATE EXTENSION)
#   queen--F--V.sql    = sql/upgrade/F--V.sql (the delta) + routines + privileges (ALTER ... UPDATE)
# The main Makefile includes this file; tests/integration/upgrade.sh also runs it alone on a
# scratch copy of sql/ to build a test-only next version:
#   make -f mk/sql.mk SQL_SRC=<dir> SQL_OUT=<dir> SQL_VERSION=<V> SQL_FROM='<F> ...'
SQL_EXTENSION ?= queen
SQL_SRC       ?= sql
SQL_OUT       ?= build/sql
SQL_SCHEMA     = $(sort $(wildcard $(SQL_SRC)/schema/[0-9]*.sql))
SQL_ROUTINES   = $(sort $(wildcard $(SQL_SRC)/modules/[0-9]*.sql))
SQL_PRIVILEGES = $(SQL_SRC)/privileges.sql
SQL_SCRIPTS    = $(SQL_OUT)/$(SQL_EXTENSION)--$(SQL_VERSION).sql \
                 $(foreach f,$(SQL_FROM),$(SQL_OUT)/$(SQL_EXTENSION)--$(f)--$(SQL_VERSION).sql)

# Every script of SQL_VERSION: the install script and one upgrade script per SQL_FROM.
.PHONY: sql-scripts
sql-scripts: $(SQL_SCRIPTS)

# The install script: every part in order (schema before routines: SQL function bodies are
# checked against the tables when created).
$(SQL_OUT)/$(SQL_EXTENSION)--$(SQL_VERSION).sql: $(SQL_SCHEMA) $(SQL_ROUTINES) $(SQL_PRIVILEGES)
	@mkdir -p $(dir $@)
	cat $^ > $@.tmp && mv $@.tmp $@

# An upgrade script: the hand-written delta from the older version, then the routines and the
# privileges exactly as the install script runs them.
$(SQL_OUT)/$(SQL_EXTENSION)--%--$(SQL_VERSION).sql: $(SQL_SRC)/upgrade/%--$(SQL_VERSION).sql $(SQL_ROUTINES) $(SQL_PRIVILEGES)
	@mkdir -p $(dir $@)
	cat $^ > $@.tmp && mv $@.tmp $@
