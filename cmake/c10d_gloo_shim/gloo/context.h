// See gloo_declarations.h: the declarations ProcessGroupGloo.hpp needs from <gloo/context.h>.
#pragma once
#include "gloo_declarations.h"
