#!/usr/bin/env bash
# The house's rules (tests/house/house_rules.py: no include circle among files or the sidecar's
# rooms, nothing loose at the top of sidecar/, no room over a third of the sidecar, no
# dynamic_cast, the core's header firewall, unique sidecar file names). Needs no server.
set -euo pipefail
exec python3 "$(dirname "$0")/../house/house_rules.py"
