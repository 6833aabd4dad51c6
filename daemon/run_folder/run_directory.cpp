#include "daemon/run_folder/run_directory.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "common/atomic_write.hpp"

namespace ak {
namespace fs = std::filesystem;

Status RunDirectory::create() const {
  // The run folder holds the LLM's replies and the transcripts of every prompt: private to the
  // user the daemon runs as. New files and folders get 0600 and 0700; older ones lose the
  // group's and others' bits.
  ::umask(077);
  std::error_code ec;
  for (const char* sub : {"kernels", "experiments", "compiled"}) {
    fs::create_directories(fs::path(root_) / sub, ec);
    if (ec) return error("cannot create the run folder " + root_ + "/" + sub + ": " + ec.message());
  }
  const auto shared = fs::perms::group_all | fs::perms::others_all;
  fs::permissions(root_, shared, fs::perm_options::remove, ec);
  if (ec) return error("cannot make the run folder " + root_ + " private: " + ec.message());
  for (auto it = fs::recursive_directory_iterator(root_, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (!it->is_symlink()) fs::permissions(it->path(), shared, fs::perm_options::remove, ec);
  if (ec) return error("cannot make the files of " + root_ + " private: " + ec.message());
  // Only the kernel files belong in the run's history.
  const std::string ignore = root_ + "/.gitignore";
  if (!fs::exists(ignore, ec)) return write_file_atomic(ignore, "/*\n!/kernels/\n!/.gitignore\n");
  return ok();
}

Status RunDirectory::lock() {
  const std::string path = root_ + "/run.lock";
  lock_fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) return error("cannot open " + path + ": " + std::strerror(errno));
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    (void)!::pread(lock_fd_, pid, sizeof pid - 1, 0);
    ::close(lock_fd_);
    lock_fd_ = -1;
    return error("another autokernel (pid " + std::string(pid[0] ? pid : "?") + ") is running on " + root_ +
                 ": stop it first, or give this run another [run] name");
  }
  std::string me = std::to_string(getpid());
  (void)!ftruncate(lock_fd_, 0);
  (void)!::pwrite(lock_fd_, me.data(), me.size(), 0);
  return ok();
}

RunDirectory::~RunDirectory() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string RunDirectory::experiment_file(long long n, const std::string& tag) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lld", n);
  return "experiments/" + std::string(buf) + "-" + tag + ".cu";
}

}  // namespace ak
