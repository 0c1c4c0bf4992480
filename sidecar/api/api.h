// What settings/settings_wiring.h needs of the queue API: the consuming routes' limits. Kept
// under this name so that settings/ (another engineer's room) builds unchanged; it can include
// api/consume_limits.h directly and this file go.
#pragma once

#include "api/consume_limits.h"
