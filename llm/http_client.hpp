#pragma once
/// One HTTP POST over libcurl: TLS, connect and total timeouts, proxies from the usual
/// environment variables (libcurl reads http_proxy, https_proxy, no_proxy), a cap on the
/// response size, and cancellation within a fraction of a second.
#include <atomic>
#include <map>
#include <string>

#include "common/result.hpp"

namespace ak {

struct HttpRequest {
  std::string url;
  std::map<std::string, std::string> headers;
  std::string body;
  double connect_timeout_s = 10;
  double total_timeout_s = 300;
  size_t max_response_bytes = 8 << 20;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;   ///< names in lower case
  std::string body;
  double seconds = 0;
};

/// An Error is a failure to get any answer: connection refused, timeout, TLS, too large,
/// cancelled. An HTTP error status is a response, judged by the caller.
Result<HttpResponse> http_post(const HttpRequest& req, const std::atomic<bool>* cancel = nullptr);

/// True when an Error from http_post came from the cancel flag.
bool is_cancelled(const Error& e);

/// True when an Error from http_post says the URL itself is malformed: asking again cannot help.
bool is_malformed_url(const Error& e);

}  // namespace ak
