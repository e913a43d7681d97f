// See gloo_declarations.h: the declarations ProcessGroupGloo.hpp needs from <gloo/transport/device.h>.
#pragma once
#include "../gloo_declarations.h"
