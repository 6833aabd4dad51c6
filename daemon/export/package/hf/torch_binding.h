// The ops of this package are defined in torch-ext/ops/<type>.cpp, one file a kernel type.
#pragma once
