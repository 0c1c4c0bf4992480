# The queen_router extension (docs/scale-out.md), built from sql/router/ like queen's scripts
# (mk/sql.mk) into build/sql/; the main Makefile installs them and queen_router.control beside
# queen's (DATA / DATA_built). Two parts:
#   schema     sql/router/10_schema.sql: the router's tables, created once
#   routines   sql/router/[2-9]*.sql in order: functions, procedures and privileges, all re-runnable
# so that
#   queen_router--V.sql     = schema + routines                                   (CREATE EXTENSION)
#   queen_router--F--V.sql  = sql/router/upgrade/F--V.sql (the delta) + routines  (ALTER ... UPDATE)
ROUTER_SCHEMA   = sql/router/10_schema.sql
ROUTER_ROUTINES = $(sort $(wildcard sql/router/[2-9]*.sql))

build/sql/queen_router--$(EXTVERSION).sql: $(ROUTER_SCHEMA) $(ROUTER_ROUTINES)
	@mkdir -p $(dir $@)
	cat $^ > $@.tmp && mv $@.tmp $@

build/sql/queen_router--%--$(EXTVERSION).sql: sql/router/upgrade/%--$(EXTVERSION).sql $(ROUTER_ROUTINES)
	@mkdir -p $(dir $@)
	cat $^ > $@.tmp && mv $@.tmp $@

.PHONY: router-sql
router-sql: build/sql/queen_router--$(EXTVERSION).sql \
            $(foreach f,$(SQL_FROM),build/sql/queen_router--$(f)--$(EXTVERSION).sql)
