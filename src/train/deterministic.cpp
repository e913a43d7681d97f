// deterministic: torch's and cuBLAS's switches for runs that repeat bit for bit.
#include "linear_ard/train/deterministic.h"

#include <cstdlib>

#include <ATen/Context.h>

namespace linear_ard::train {

void deterministic_set() {
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
}

}  // namespace linear_ard::train
