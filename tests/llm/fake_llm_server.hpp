#pragma once
// A real HTTP server on 127.0.0.1 that speaks enough of both LLM APIs for the tests, and
// misbehaves on demand: each connection gets the next scripted answer (or a success).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/llm_client.hpp"

namespace ak::test {

/// A TCP socket listening on 127.0.0.1 at a port the kernel picks (written to `port`).
inline int listen_on_loopback(int& port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  listen(fd, 16);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

struct Scripted {
  int status = 200;
  std::string body;                             ///< empty: a success in the API of the request's path
  std::map<std::string, std::string> headers;
  double delay_s = 0;                           ///< wait this long before answering
  std::string text = "Description: scripted\n```cuda\n// scripted kernel\n```\n";
  std::string stop = "";                        ///< "length"/"max_tokens" for a truncated reply
};

struct Received {
  std::string path;
  std::map<std::string, std::string> headers;   ///< names in lower case
  std::string body;
};

class FakeLlmServer {
 public:
  FakeLlmServer() {
    fd_ = listen_on_loopback(port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeLlmServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  /// Set before the first request: answers a request by what it holds; nullopt takes the next
  /// pushed reply.
  std::function<std::optional<Scripted>(const Received&)> respond;
  void push(Scripted s) {
    std::lock_guard<std::mutex> l(m_);
    script_.push_back(std::move(s));
  }
  std::vector<Received> received() {
    std::lock_guard<std::mutex> l(m_);
    return received_;
  }

 private:
  static std::string success_body(const std::string& path, const Scripted& s) {
    if (path.find("/v1/messages") != std::string::npos)
      return nlohmann::json{{"type", "message"}, {"content", {{{"type", "text"}, {"text", s.text}}}},
                            {"stop_reason", s.stop.empty() ? "end_turn" : s.stop},
                            {"usage", {{"input_tokens", 1200}, {"output_tokens", 340}}}}.dump();
    return nlohmann::json{{"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", s.text}}},
                                        {"finish_reason", s.stop.empty() ? "stop" : s.stop}}}},
                          {"usage", {{"prompt_tokens", 1000}, {"completion_tokens", 300}}}}.dump();
  }

  void serve() {
    while (!stop_) {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::thread([this, c] { handle(c); }).detach();
    }
  }

  void handle(int c) {
    std::string in;
    char buf[65536];
    size_t header_end = std::string::npos, need = 0;
    while (true) {
      ssize_t n = recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, size_t(n));
      if (header_end == std::string::npos && (header_end = in.find("\r\n\r\n")) != std::string::npos) {
        auto cl = lower(in.substr(0, header_end)).find("content-length:");
        need = cl == std::string::npos ? 0 : std::stoul(in.substr(cl + 15));
      }
      if (header_end != std::string::npos && in.size() >= header_end + 4 + need) break;
    }
    Received r;
    r.path = in.substr(in.find(' ') + 1, in.find(' ', in.find(' ') + 1) - in.find(' ') - 1);
    size_t pos = in.find("\r\n") + 2;
    while (pos < header_end) {
      size_t e = in.find("\r\n", pos);
      std::string line = in.substr(pos, e - pos);
      if (auto colon = line.find(':'); colon != std::string::npos)
        r.headers[lower(line.substr(0, colon))] = line.substr(line.find_first_not_of(' ', colon + 1));
      pos = e + 2;
    }
    r.body = header_end == std::string::npos ? "" : in.substr(header_end + 4);
    Scripted s;
    std::optional<Scripted> answer = respond ? respond(r) : std::nullopt;
    {
      std::lock_guard<std::mutex> l(m_);
      received_.push_back(r);
      if (answer) {
        s = *answer;
      } else if (!script_.empty()) {
        s = script_.front();
        script_.pop_front();
      }
    }
    if (s.delay_s > 0) {
      auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(s.delay_s);
      while (!stop_ && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::string body = s.body.empty() && s.status == 200 ? success_body(r.path, s) : s.body;
    std::string out = "HTTP/1.1 " + std::to_string(s.status) + " Scripted\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\nConnection: close\r\n";
    for (auto& [k, v] : s.headers) out += k + ": " + v + "\r\n";
    out += "\r\n" + body;
    send(c, out.data(), out.size(), MSG_NOSIGNAL);
    close(c);
  }

  static std::string lower(std::string s) {
    for (char& ch : s) ch = char(std::tolower((unsigned char)ch));
    return s;
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex m_;
  std::deque<Scripted> script_;
  std::vector<Received> received_;
};

/// Client options whose back-off between retries takes no time, for tests of retry paths.
inline LlmClient::Options no_wait() {
  LlmClient::Options o;
  o.sleep = [](double) {};
  return o;
}

}  // namespace ak::test
