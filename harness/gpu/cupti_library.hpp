#pragma once
/// The file of the CUPTI a process has loaded. NVTX ranges reach CUPTI only through the very
/// library that records them (NVTX_INJECTION64_PATH), and a program such as PyTorch may bring its
/// own copy; dladdr on a CUPTI function would name the executable's PLT stub instead.
#include <dlfcn.h>
#include <link.h>

#include <string>

namespace ak {

inline std::string loaded_cupti_library() {
  for (const char* name : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"}) {
    void* h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    link_map* map = nullptr;
    std::string path = dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name ? map->l_name : "";
    dlclose(h);
    if (!path.empty()) return path;
  }
  return "";
}

}  // namespace ak
