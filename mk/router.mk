# The queen_router extension (docs/scale-out.md): its install script is sql/router/*.sql in
# order, built into build/sql/queen_router--<version>.sql; the main Makefile installs it and
# queen_router.control beside queen's (DATA / DATA_built).
ROUTER_SQL = $(sort $(wildcard sql/router/[0-9]*.sql))

build/sql/queen_router--$(EXTVERSION).sql: $(ROUTER_SQL)
	@mkdir -p $(dir $@)
	cat $^ > $@.tmp && mv $@.tmp $@

.PHONY: router-sql
router-sql: build/sql/queen_router--$(EXTVERSION).sql
