#include "harness/compile/file_guard.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>

namespace ak {
namespace {

std::atomic<bool> g_enabled{false};
std::string g_root;
std::mutex g_mutex;
std::vector<std::string> g_refused;

bool under(const std::string& real, const std::string& root) {
  return real == root || (real.size() > root.size() && real.compare(0, root.size(), root) == 0 && real[root.size()] == '/');
}

/// The real path of `path`. For a path that does not exist, the real path of its longest prefix
/// that does, followed by the rest as plain names (no "." or ".."): NVRTC probes each include
/// folder for each header, and most such paths, folders included, do not exist (CUDA 13's
/// <cuda/std/...> lies under include/cccl, and is probed under include/ first). Such a path
/// cannot be opened, and names a place under its existing prefix. Empty when nothing resolves.
std::string resolve(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf)) return buf;
  std::string head = path, rest;
  for (;;) {
    const size_t slash = head.rfind('/');
    const std::string name = slash == std::string::npos ? head : head.substr(slash + 1);
    if (name == "." || name == "..") return "";
    if (!name.empty()) rest = rest.empty() ? name : name + "/" + rest;
    if (slash == std::string::npos) head = ".";
    else head = slash == 0 ? "/" : head.substr(0, slash);
    if (realpath(head.c_str(), buf)) {
      const std::string base = buf;
      return rest.empty() ? base : (base == "/" ? "" : base) + "/" + rest;
    }
    if (head == "/" || head == ".") return "";
  }
}

/// True when the call may go on; otherwise records the path and sets errno.
bool permitted(const char* path) {
  if (!g_enabled.load(std::memory_order_acquire) || !path) return true;
  if (path_allowed(path, g_root)) return true;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (std::find(g_refused.begin(), g_refused.end(), path) == g_refused.end()) g_refused.push_back(path);
  errno = EACCES;
  return false;
}

template <typename F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

bool permitted_at(int dirfd, const char* path) {
  // An empty path names the open descriptor itself (AT_EMPTY_PATH): nothing new is opened.
  if (!g_enabled.load(std::memory_order_acquire) || !path || !path[0]) return true;
  if (path[0] == '/' || dirfd == AT_FDCWD) return permitted(path);
  // Relative to an open folder: resolve through /proc/self/fd (the guard's own lookup).
  char dir[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(dirfd);
  static auto real_readlink = reinterpret_cast<ssize_t (*)(const char*, char*, size_t)>(dlsym(RTLD_NEXT, "readlink"));
  ssize_t n = real_readlink(link.c_str(), dir, sizeof dir - 1);
  if (n <= 0) return permitted(path);
  dir[n] = '\0';
  return permitted((std::string(dir) + "/" + path).c_str());
}

mode_t mode_arg(int flags, va_list ap) { return (flags & (O_CREAT | O_TMPFILE)) ? mode_t(va_arg(ap, int)) : 0; }

}  // namespace

bool path_allowed(const std::string& path, const std::string& root) {
  const std::string r = resolve(path);
  return !r.empty() && under(r, root);
}

void enable_file_guard(const std::string& root) {
  char buf[PATH_MAX];
  g_root = realpath(root.c_str(), buf) ? buf : root;
  g_enabled.store(true, std::memory_order_release);
}

std::vector<std::string> take_refused_paths() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<std::string> out;
  out.swap(g_refused);
  return out;
}

}  // namespace ak

// The C library's entry points, defined in the executable so that they come before libc's in
// symbol lookup, for NVRTC as for everything else; each forwards to the real one when allowed.
// The executable exports them (CMakeLists.txt: --export-dynamic-symbol).
extern "C" {

#define AK_GUARD(path, fail) \
  if (!ak::permitted(path)) return fail
#define AK_GUARD_AT(dirfd, path, fail) \
  if (!ak::permitted_at(dirfd, path)) return fail

int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = ak::mode_arg(flags, ap);
  va_end(ap);
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(const char*, int, ...)>("open");
  return f(path, flags, mode);
}
int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = ak::mode_arg(flags, ap);
  va_end(ap);
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(const char*, int, ...)>("open64");
  return f(path, flags, mode);
}
int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = ak::mode_arg(flags, ap);
  va_end(ap);
  AK_GUARD_AT(dirfd, path, -1);
  static auto f = ak::real<int (*)(int, const char*, int, ...)>("openat");
  return f(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = ak::mode_arg(flags, ap);
  va_end(ap);
  AK_GUARD_AT(dirfd, path, -1);
  static auto f = ak::real<int (*)(int, const char*, int, ...)>("openat64");
  return f(dirfd, path, flags, mode);
}
int __open_2(const char* path, int flags) {
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(const char*, int)>("__open_2");
  return f(path, flags);
}
int __open64_2(const char* path, int flags) {
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(const char*, int)>("__open64_2");
  return f(path, flags);
}
int __openat_2(int dirfd, const char* path, int flags) {
  AK_GUARD_AT(dirfd, path, -1);
  static auto f = ak::real<int (*)(int, const char*, int)>("__openat_2");
  return f(dirfd, path, flags);
}
int __openat64_2(int dirfd, const char* path, int flags) {
  AK_GUARD_AT(dirfd, path, -1);
  static auto f = ak::real<int (*)(int, const char*, int)>("__openat64_2");
  return f(dirfd, path, flags);
}
FILE* fopen(const char* path, const char* mode) {
  AK_GUARD(path, nullptr);
  static auto f = ak::real<FILE* (*)(const char*, const char*)>("fopen");
  return f(path, mode);
}
FILE* fopen64(const char* path, const char* mode) {
  AK_GUARD(path, nullptr);
  static auto f = ak::real<FILE* (*)(const char*, const char*)>("fopen64");
  return f(path, mode);
}
FILE* freopen(const char* path, const char* mode, FILE* stream) {
  AK_GUARD(path, nullptr);
  static auto f = ak::real<FILE* (*)(const char*, const char*, FILE*)>("freopen");
  return f(path, mode, stream);
}
FILE* freopen64(const char* path, const char* mode, FILE* stream) {
  AK_GUARD(path, nullptr);
  static auto f = ak::real<FILE* (*)(const char*, const char*, FILE*)>("freopen64");
  return f(path, mode, stream);
}
int stat(const char* path, struct stat* st) {
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(const char*, struct stat*)>("stat");
  return f(path, st);
}
int stat64(const char* path, struct stat64* st) {
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(const char*, struct stat64*)>("stat64");
  return f(path, st);
}
int lstat(const char* path, struct stat* st) {
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(const char*, struct stat*)>("lstat");
  return f(path, st);
}
int lstat64(const char* path, struct stat64* st) {
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(const char*, struct stat64*)>("lstat64");
  return f(path, st);
}
int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  AK_GUARD_AT(dirfd, path, -1);
  static auto f = ak::real<int (*)(int, const char*, struct stat*, int)>("fstatat");
  return f(dirfd, path, st, flags);
}
int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  AK_GUARD_AT(dirfd, path, -1);
  static auto f = ak::real<int (*)(int, const char*, struct stat64*, int)>("fstatat64");
  return f(dirfd, path, st, flags);
}
// The names of stat in glibc before 2.33, which NVRTC still binds to.
int __xstat(int ver, const char* path, struct stat* st) {
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(int, const char*, struct stat*)>("__xstat");
  return f(ver, path, st);
}
int __xstat64(int ver, const char* path, struct stat64* st) {
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(int, const char*, struct stat64*)>("__xstat64");
  return f(ver, path, st);
}
int __lxstat(int ver, const char* path, struct stat* st) {
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(int, const char*, struct stat*)>("__lxstat");
  return f(ver, path, st);
}
int __lxstat64(int ver, const char* path, struct stat64* st) {
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(int, const char*, struct stat64*)>("__lxstat64");
  return f(ver, path, st);
}
int __fxstatat(int ver, int dirfd, const char* path, struct stat* st, int flags) {
  AK_GUARD_AT(dirfd, path, -1);
  static auto f = ak::real<int (*)(int, int, const char*, struct stat*, int)>("__fxstatat");
  return f(ver, dirfd, path, st, flags);
}
int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* st, int flags) {
  AK_GUARD_AT(dirfd, path, -1);
  static auto f = ak::real<int (*)(int, int, const char*, struct stat64*, int)>("__fxstatat64");
  return f(ver, dirfd, path, st, flags);
}
int statx(int dirfd, const char* path, int flags, unsigned int mask, struct statx* st) {
  AK_GUARD_AT(dirfd, path, -1);
  static auto f = ak::real<int (*)(int, const char*, int, unsigned int, struct statx*)>("statx");
  return f(dirfd, path, flags, mask, st);
}
int access(const char* path, int mode) {
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(const char*, int)>("access");
  return f(path, mode);
}
int faccessat(int dirfd, const char* path, int mode, int flags) {
  AK_GUARD_AT(dirfd, path, -1);
  static auto f = ak::real<int (*)(int, const char*, int, int)>("faccessat");
  return f(dirfd, path, mode, flags);
}
ssize_t readlink(const char* path, char* buf, size_t size) {
  AK_GUARD(path, -1);
  static auto f = ak::real<ssize_t (*)(const char*, char*, size_t)>("readlink");
  return f(path, buf, size);
}
int unlink(const char* path) {
  AK_GUARD(path, -1);
  static auto f = ak::real<int (*)(const char*)>("unlink");
  return f(path);
}
DIR* opendir(const char* path) {
  AK_GUARD(path, nullptr);
  static auto f = ak::real<DIR* (*)(const char*)>("opendir");
  return f(path);
}

}  // extern "C"
