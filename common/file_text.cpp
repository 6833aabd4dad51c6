#include "common/file_text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ak {
namespace {

std::string cause(int err) {
  switch (err) {
    case ENOENT: return "no such file";
    case ENOTDIR: return "no such file (a part of the path is not a folder)";
    case EACCES:
    case EPERM: return "cannot read: permission denied";
    case EISDIR: return "is a directory, not a file";
    case ENAMETOOLONG: return "the path is too long";
    case ELOOP: return "too many symbolic links";
    default: return std::string("cannot read: ") + std::strerror(err);
  }
}

}  // namespace

Result<std::string> read_file_text(const std::string& path, size_t max_bytes) {
  if (path.empty()) return error("a file path is empty: give the path of the file");
  if (path.find('\0') != std::string::npos) return error("a file path holds a NUL byte: no file has such a name");
  // O_NONBLOCK: a FIFO with no writer opens at once rather than hanging here; reads block again below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return error(path + ": " + cause(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return error(path + ": " + cause(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return error(path + ": " + cause(EISDIR));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string text;
  if (S_ISREG(st.st_mode) && size_t(st.st_size) <= max_bytes) text.reserve(size_t(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return error(path + ": " + cause(err));
    }
    if (n == 0) break;
    if (text.size() + size_t(n) > max_bytes) {
      ::close(fd);
      return error(path + ": larger than " + std::to_string(max_bytes) + " bytes: not a file autokernel reads (is the path right?)");
    }
    text.append(buf, size_t(n));
  }
  ::close(fd);
  return text;
}

Result<std::string> read_nonempty_file_text(const std::string& path, size_t max_bytes) {
  auto text = read_file_text(path, max_bytes);
  if (!text) return text;
  if (text->find_first_not_of(" \t\r\n") == std::string::npos) return error(path + ": the file is empty");
  return text;
}

}  // namespace ak
