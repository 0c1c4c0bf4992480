\echo Use "ALTER EXTENSION queen UPDATE TO '0.3.0'" to load this file. \quit
-- queen 0.2.0 -> 0.3.0: the hand-written delta (0.2.0 is released and frozen in
-- sql/queen--0.2.0.sql). Every schema change of 0.3.0 is written here as well as in the install
-- sources; tests/integration/upgrade.sh checks that an upgraded database's catalog is exactly a
-- fresh 0.3.0 install's. No change yet.
