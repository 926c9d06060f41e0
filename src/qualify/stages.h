// The stages of a qualification (qualify.h lists them); each reads the Context and returns
// its result, never an error: what goes wrong inside a stage is a failed check with its reason.
#pragma once

#include "qualify/context.h"
#include "qualify/stage.h"

namespace gufo::qualify {

StageResult run_operators_stage(Context& context);     // 1: operators_stage.cpp
StageResult run_numerics_stage(Context& context);      // 2: numerics_stage.cpp
StageResult run_serving_stage(Context& context);       // 3: serving_stage.cpp
StageResult run_pressure_stage(Context& context);      // 4: pressure_stage.cpp
StageResult run_performance_stage(Context& context);   // 5: performance_stage.cpp
StageResult run_distribution_stage(Context& context);  // 6: distribution_stage.cpp

}  // namespace gufo::qualify
