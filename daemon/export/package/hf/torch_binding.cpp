// The Python module of the kernel-builder extension. The ops themselves register in
// torch-ext/ops/<type>.cpp, under the extension's name (torch-ext/ops/ops_namespace.h).
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
