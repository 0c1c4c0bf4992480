-- The last part of every install and upgrade script (after sql/queen.sql and the modules; see
-- the Makefile): whatever a module forgot, no routine of schema queen stays executable by
-- PUBLIC (CREATE FUNCTION grants EXECUTE to PUBLIC by default, and a SECURITY DEFINER function
-- callable by anyone would bypass the roles). Grants to queen_writer / queen_reader /
-- queen_admin made by the core and the modules are kept.
REVOKE ALL ON ALL ROUTINES IN SCHEMA queen FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA queen FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA queen FROM PUBLIC;
