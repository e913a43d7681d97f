// See gloo_declarations.h: the declarations ProcessGroupGloo.hpp needs from <gloo/rendezvous/store.h>.
#pragma once
#include "../gloo_declarations.h"
