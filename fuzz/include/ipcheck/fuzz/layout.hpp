// The handle layouts live in harness (ipcheck/handle_layout.hpp): the catalog's forged-handle
// cases and the fuzzer share what is known of each adapter's handle bytes.
#pragma once

#include "ipcheck/handle_layout.hpp"
