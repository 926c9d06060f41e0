// A backend that fails on purpose (GUFO_FAULTS, core/faults.h): it forwards everything to
// the backend it wraps, except that its forward call number forward_oom_at fails as out of
// memory, and from call device_lost_at on every forward fails as a lost device. The engine
// and server then show what they do with each (the scheduler fails only the requests a failed
// step touches; a lost device fails all and refuses new ones), which the qualifier's
// memory-pressure stage checks. Tested by tests/unit/backend/faults_test.cpp.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "core/faults.h"

namespace gufo::backend {

std::unique_ptr<Backend> with_injected_faults(std::unique_ptr<Backend> inner, const Faults& faults);

}  // namespace gufo::backend
