// Header firewall: pure core headers include this first. They must never see postgres.h,
// because PostgreSQL's macros (e.g. `Min`, `elog`, `palloc`) and its longjmp-based error
// handling do not mix with the exception-safe C++ of the core library.
#pragma once
#ifdef PG_VERSION_NUM
#error "src/core is pure C++: include core headers before postgres.h, or not at all from PG glue headers"
#endif
