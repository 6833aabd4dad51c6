#include "llm/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>

namespace ak {
namespace {

constexpr const char* kCancelled = "cancelled: the daemon is stopping";
constexpr const char* kNotAUrl = "is not a URL libcurl can use";

struct Transfer {
  std::string body;
  std::map<std::string, std::string> headers;
  size_t cap = 0;
  bool too_large = false;
  const std::atomic<bool>* cancel = nullptr;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (t->body.size() + size * n > t->cap) {
    t->too_large = true;
    return 0;  // aborts the transfer
  }
  t->body.append(data, size * n);
  return size * n;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * n);
  if (auto colon = line.find(':'); colon != std::string::npos) {
    std::string name = line.substr(0, colon), value = line.substr(colon + 1);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    value.erase(0, value.find_first_not_of(" \t"));
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.pop_back();
    t->headers[name] = value;
  }
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->cancel && t->cancel->load() ? 1 : 0;  // non-zero aborts
}

}  // namespace

bool is_cancelled(const Error& e) { return e.message.find(kCancelled) != std::string::npos; }

bool is_malformed_url(const Error& e) { return e.message.find(kNotAUrl) != std::string::npos; }

Result<HttpResponse> http_post(const HttpRequest& req, const std::atomic<bool>* cancel) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  if (!initialised) return error("libcurl could not be initialised");
  CURL* curl = curl_easy_init();
  if (!curl) return error("libcurl could not start a transfer");
  Transfer t;
  t.cap = req.max_response_bytes;
  t.cancel = cancel;
  curl_slist* headers = curl_slist_append(nullptr, "Expect:");  // no 100-continue round trip
  for (auto& [k, v] : req.headers) headers = curl_slist_append(headers, (k + ": " + v).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, req.body.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, long(req.body.size()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, long(req.connect_timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, long(req.total_timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  auto t0 = std::chrono::steady_clock::now();
  CURLcode rc = curl_easy_perform(curl);
  HttpResponse r;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc == CURLE_ABORTED_BY_CALLBACK) return error(std::string(kCancelled));
  if (t.too_large)
    return error("the response from " + req.url + " was larger than " + std::to_string(req.max_response_bytes >> 20) +
                 " MiB and was cut off");
  if (rc == CURLE_OPERATION_TIMEDOUT)
    return error("no answer from " + req.url + " within " + std::to_string(int(req.total_timeout_s)) +
                 " s (raise [llm] request_timeout_s, or check the server)");
  if (rc == CURLE_URL_MALFORMAT || rc == CURLE_UNSUPPORTED_PROTOCOL)
    return error(req.url + " " + kNotAUrl + " (" + curl_easy_strerror(rc) + "): check [llm] base_url");
  if (rc != CURLE_OK) return error("cannot reach " + req.url + ": " + curl_easy_strerror(rc));
  r.body = std::move(t.body);
  r.headers = std::move(t.headers);
  return r;
}

}  // namespace ak
