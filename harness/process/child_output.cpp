#include "harness/process/child_output.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "common/untrusted_text.hpp"

namespace ak {
namespace {

/// The longest prefix of `s` of at most `n` bytes that ends on a character boundary.
std::string_view utf8_head(std::string_view s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

}  // namespace

std::string clean_output_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += (c == '\t' || (c >= 0x20 && c != 0x7F)) ? char(c) : '?';
      ++i;
      continue;
    }
    char32_t cp = 0;
    const size_t n = utf8_sequence_at(text, i, &cp);
    if (n == 0 || is_invisible_control(cp)) {
      out += '?';
      i += n == 0 ? 1 : n;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

OutputRelay::OutputRelay(int fd, std::string prefix, Sink sink, Caps caps)
    : fd_(fd), prefix_(std::move(prefix)), sink_(std::move(sink)), caps_(caps),
      window_start_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this] { run(); });
}

void OutputRelay::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  thread_.join();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void OutputRelay::run() {
  char buf[8192];
  for (;;) {
    const bool last = stopping_.load();
    if (last) fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
    pollfd p{fd_, POLLIN, 0};
    // Short slices so that stop() is noticed; after it, one bounded drain of what is there.
    if (!last && poll(&p, 1, 100) <= 0) continue;
    size_t drained = 0;
    ssize_t n;
    while ((n = ::read(fd_, buf, sizeof buf)) > 0) {
      take(buf, size_t(n));
      drained += size_t(n);
      if (!last || drained > caps_.window_bytes) break;
    }
    if (n == 0 || last || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
  }
  if (!partial_.empty()) emit(partial_);
  partial_.clear();
  report_dropped();
}

void OutputRelay::report_dropped() {
  if (dropped_ > 0)
    sink_(prefix_ + "(" + std::to_string(dropped_) + " bytes of output dropped: over " +
          std::to_string(caps_.window_bytes) + " bytes in " + std::to_string(caps_.window.count()) + " s)");
  dropped_ = 0;
}

void OutputRelay::take(const char* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (data[i] == '\n') {
      emit(partial_);
      partial_.clear();
    } else if (partial_.size() <= caps_.line_bytes) {
      partial_ += data[i];  // one byte past the cap marks the line as cut; the rest is not kept
    }
  }
}

void OutputRelay::emit(std::string_view raw) {
  const auto now = std::chrono::steady_clock::now();
  if (now - window_start_ >= caps_.window) {
    report_dropped();
    window_start_ = now, window_used_ = 0;
  }
  const bool cut = raw.size() > caps_.line_bytes;
  if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  std::string line = clean_output_line(utf8_head(raw, caps_.line_bytes));
  if (cut) line += " ... (line cut)";
  if (window_used_ + line.size() > caps_.window_bytes) {
    dropped_ += line.size();
    return;
  }
  window_used_ += line.size();
  sink_(prefix_ + line);
}

}  // namespace ak
