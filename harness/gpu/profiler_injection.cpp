// libautokernel_inject.so: loaded into any CUDA program through CUDA_INJECTION64_PATH by
// `autokernel profile`. It records every kernel (CUPTI activity), the launch calls that map kernels
// to CPU threads, and NVTX ranges, and writes them as JSON lines to $AUTOKERNEL_PROFILE_OUT when the
// program exits. It touches nothing else in the program: its output and exit code are its own.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "harness/gpu/cupti_library.hpp"

namespace {

std::mutex g_mutex;
FILE* g_out = nullptr;
constexpr size_t kBufferBytes = 16 << 20;

std::string quoted(const char* s) {
  std::string out = "\"";
  for (const char* p = s ? s : ""; *p; ++p) {
    unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') out += '\\', out += char(c);
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += char(c);
  }
  return out + "\"";
}

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void write_record(CUpti_Activity* rec) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(rec);
      std::fprintf(g_out,
                   "{\"k\":\"kernel\",\"name\":%s,\"start\":%llu,\"end\":%llu,\"corr\":%u,\"grid\":[%d,%d,%d],"
                   "\"block\":[%d,%d,%d],\"regs\":%u,\"smem\":%d}\n",
                   quoted(k->name).c_str(), (unsigned long long)k->start, (unsigned long long)k->end, k->correlationId,
                   k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ, k->registersPerThread,
                   k->staticSharedMemory + k->dynamicSharedMemory);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      auto* a = reinterpret_cast<CUpti_ActivityAPI*>(rec);
      std::fprintf(g_out, "{\"k\":\"api\",\"corr\":%u,\"tid\":%u,\"start\":%llu}\n", a->correlationId, a->threadId,
                   (unsigned long long)a->start);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      auto* m = reinterpret_cast<CUpti_ActivityMarker2*>(rec);
      const char* flag = (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) ? "start"
                         : (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) ? "end"
                                                                        : "instant";
      std::fprintf(g_out, "{\"k\":\"marker\",\"id\":%u,\"tid\":%u,\"t\":%llu,\"flag\":\"%s\",\"name\":%s}\n", m->id,
                   m->objectId.pt.threadId, (unsigned long long)m->timestamp, flag, quoted(m->name).c_str());
      break;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      auto* d = reinterpret_cast<CUpti_ActivityDevice5*>(rec);
      std::fprintf(g_out, "{\"k\":\"meta\",\"gpu\":%s}\n", quoted(d->name).c_str());
      break;
    }
    default:
      break;
  }
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mutex);
  CUpti_Activity* rec = nullptr;
  while (g_out && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) write_record(rec);
  std::free(buffer);
}

void at_exit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_out) std::fclose(g_out);
  g_out = nullptr;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  const char* path = std::getenv("AUTOKERNEL_PROFILE_OUT");
  if (!path || g_out) return 1;
  g_out = std::fopen(path, "w");
  if (!g_out) {
    std::fprintf(stderr, "autokernel profile: cannot write %s; not profiling\n", path);
    return 1;
  }
  cuptiActivityRegisterCallbacks(requested, completed);
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME,
                               CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_MARKER})
    if (cuptiActivityEnable(k) != CUPTI_SUCCESS)
      std::fprintf(stderr, "autokernel profile: CUPTI refused activity kind %d; the profile will lack it\n", int(k));
  std::atexit(at_exit);
  // NVTX reads this on its first call, which comes later than CUDA's initialization.
  if (std::string cupti = ak::loaded_cupti_library(); !cupti.empty()) setenv("NVTX_INJECTION64_PATH", cupti.c_str(), 1);
  const char* nvtx = std::getenv("NVTX_INJECTION64_PATH");
  std::fprintf(g_out, "{\"k\":\"meta\",\"nvtx_injection\":%s}\n", quoted(nvtx ? nvtx : "").c_str());
  return 1;
}
