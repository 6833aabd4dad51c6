#pragma once
/// The worker's side: `autokernel worker` reads requests on stdin and answers on stdout. It owns
/// the CUDA context; after a sticky CUDA error it answers and exits, and the daemon starts another.
namespace ak {

/// Serves requests until "quit", end of input, or a lost context. Returns the exit code.
int run_worker(int device);

}  // namespace ak
