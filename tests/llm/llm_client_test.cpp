// The LLM client against a real HTTP server of the tests' own on 127.0.0.1.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "llm/api_key.hpp"
#include "llm/llm_client.hpp"
#include "tests/llm/fake_llm_server.hpp"

using namespace ak;
using namespace ak::test;

namespace {

const std::string kKey = "sk-test-SECRET-4242";

struct Harness {
  FakeLlmServer server;
  std::vector<double> waits;
  std::atomic<bool> cancel{false};
  LlmConfig cfg;
  explicit Harness(ProviderKind p = ProviderKind::OpenAI) {
    cfg.provider = p;
    cfg.model = "test-model";
    cfg.base_url = server.base_url() + (p == ProviderKind::OpenAI ? "/v1" : "");
    cfg.api_key_env = "AK_TEST_KEY";
    cfg.max_retries = 3;
    cfg.request_timeout_s = 2;
    cfg.usd_per_mtok_input = 3;
    cfg.usd_per_mtok_output = 15;
  }
  LlmClient client() {
    LlmClient::Options o;
    o.sleep = [this](double s) { waits.push_back(s); };
    return LlmClient(cfg, kKey, &cancel, o);
  }
};

ChatRequest question() { return {"You edit kernels.", "Make it faster.", 4000}; }

}  // namespace

TEST_CASE("openai: a reply comes back with its usage, and the key goes in a Bearer header", "[llm][http]") {
  Harness h;
  auto c = h.client();
  nlohmann::json transcript;
  auto r = c.ask(question(), &transcript);
  REQUIRE(r.ok());
  CHECK_THAT(r->text, Catch::Contains("scripted kernel"));
  CHECK(r->input_tokens == 1000);
  CHECK(r->output_tokens == 300);
  CHECK(c.usage().cost_usd == Approx((1000 * 3 + 300 * 15) / 1e6));
  auto got = h.server.received();
  REQUIRE(got.size() == 1);
  CHECK(got[0].path == "/v1/chat/completions");
  CHECK(got[0].headers["authorization"] == "Bearer " + kKey);
  auto body = nlohmann::json::parse(got[0].body);
  CHECK(body["model"] == "test-model");
  CHECK(body["max_tokens"] == 4000);
  CHECK(body["messages"][0]["role"] == "system");
  CHECK(transcript.dump().find(kKey) == std::string::npos);
  CHECK(transcript["usage"]["output_tokens"] == 300);
}

TEST_CASE("anthropic: the Messages API with x-api-key and anthropic-version", "[llm][http]") {
  Harness h(ProviderKind::Anthropic);
  auto c = h.client();
  auto r = c.ask(question());
  REQUIRE(r.ok());
  CHECK(r->input_tokens == 1200);
  auto got = h.server.received();
  CHECK(got[0].path == "/v1/messages");
  CHECK(got[0].headers["x-api-key"] == kKey);
  CHECK(got[0].headers["anthropic-version"] == "2023-06-01");
  auto body = nlohmann::json::parse(got[0].body);
  CHECK(body["system"] == "You edit kernels.");
  CHECK(body["max_tokens"] == 4000);
}

TEST_CASE("reasoning models get max_completion_tokens", "[llm]") {
  CHECK(takes_max_completion_tokens("o3-mini"));
  CHECK(takes_max_completion_tokens("gpt-5"));
  CHECK_FALSE(takes_max_completion_tokens("gpt-4.1"));
  LlmConfig cfg;
  cfg.provider = ProviderKind::OpenAI;
  cfg.model = "o4-mini";
  auto body = nlohmann::json::parse(build_request(cfg, "", question()).body);
  CHECK(body.contains("max_completion_tokens"));
  CHECK_FALSE(body.contains("max_tokens"));
}

TEST_CASE("429 with Retry-After waits as told, then succeeds", "[llm][http]") {
  Harness h;
  h.server.push({429, R"({"error":{"message":"rate limited"}})", {{"Retry-After", "2"}}});
  auto c = h.client();
  auto r = c.ask(question());
  REQUIRE(r.ok());
  REQUIRE(h.waits.size() == 1);
  CHECK(h.waits[0] == 2.0);
  CHECK(h.server.received().size() == 2);
}

TEST_CASE("500 then success: one retry after a back-off", "[llm][http]") {
  Harness h;
  h.server.push({500, "oops"});
  h.server.push({529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"});
  auto c = h.client();
  auto r = c.ask(question());
  REQUIRE(r.ok());
  REQUIRE(h.waits.size() == 2);
  CHECK(h.waits[0] >= 1.0);   // 2 s base, jitter in [0.5, 1)
  CHECK(h.waits[0] < 2.0);
  CHECK(h.waits[1] >= 2.0);   // doubled
}

TEST_CASE("a hang past the timeout is retried, then given up with a message", "[llm][http]") {
  Harness h;
  h.cfg.max_retries = 1;
  h.cfg.request_timeout_s = 0.5;
  h.server.push({200, "", {}, 3});
  h.server.push({200, "", {}, 3});
  auto c = h.client();
  auto t0 = std::chrono::steady_clock::now();
  auto r = c.ask(question());
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("after 2 attempts") && Catch::Contains("within 0 s"));
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 2.5);
  CHECK_FALSE(c.last_failure_is_fatal());
}

TEST_CASE("a malformed JSON body is retried as the server's fault", "[llm][http]") {
  Harness h;
  h.server.push({200, "{not json"});
  auto c = h.client();
  auto r = c.ask(question());
  REQUIRE(r.ok());
  CHECK(h.server.received().size() == 2);
}

TEST_CASE("401 is not retried: the run must stop, and the message names the key's source, never the key", "[llm][http]") {
  Harness h;
  h.server.push({401, R"({"error":{"message":"invalid x-api-key sk-test-SECRET-4242"}})"});
  auto c = h.client();
  nlohmann::json transcript;
  auto r = c.ask(question(), &transcript);
  REQUIRE_FALSE(r.ok());
  CHECK(c.last_failure_is_fatal());
  CHECK_THAT(r.error().message, Catch::Contains("the API key in $AK_TEST_KEY was refused"));
  CHECK(r.error().message.find(kKey) == std::string::npos);
  CHECK(transcript.dump().find(kKey) == std::string::npos);
  CHECK(h.server.received().size() == 1);
  CHECK(h.waits.empty());
}

TEST_CASE("404 says to check base_url and model", "[llm][http]") {
  Harness h;
  h.server.push({404, R"({"error":{"message":"model not found"}})"});
  auto c = h.client();
  auto r = c.ask(question());
  REQUIRE_FALSE(r.ok());
  CHECK(c.last_failure_is_fatal());
  CHECK_THAT(r.error().message, Catch::Contains("check [llm] base_url and model"));
}

TEST_CASE("an unreachable server is a network error, retried", "[llm][http]") {
  Harness h;
  h.cfg.base_url = "http://127.0.0.1:9/v1";   // discard port: nothing listens
  h.cfg.max_retries = 2;
  auto c = h.client();
  auto r = c.ask(question());
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("cannot reach http://127.0.0.1:9/v1/chat/completions"));
  CHECK(h.waits.size() == 2);
}

TEST_CASE("a malformed base_url fails at once: no retry, and the run must stop", "[llm][http]") {
  Harness h;
  h.cfg.base_url = "htp://127.0.0.1:9/v1";
  h.cfg.max_retries = 5;
  auto c = h.client();
  auto r = c.ask(question());
  REQUIRE_FALSE(r.ok());
  CHECK(c.last_failure_is_fatal());
  CHECK(h.waits.empty());
  CHECK(c.usage().requests == 1);
  CHECK_THAT(r.error().message, Catch::Contains("is not a URL libcurl can use") && Catch::Contains("check [llm] base_url"));
}

TEST_CASE("after repeated failed questions the breaker pauses before the next", "[llm][http]") {
  Harness h;
  h.cfg.max_retries = 0;
  for (int i = 0; i < 3; ++i) h.server.push({503, "busy"});
  auto c = h.client();
  for (int i = 0; i < 3; ++i) REQUIRE_FALSE(c.ask(question()).ok());
  CHECK(h.waits.empty());
  REQUIRE(c.ask(question()).ok());   // the fourth question waits out the pause first
  REQUIRE(h.waits.size() == 1);
  CHECK(h.waits[0] == 300);
}

TEST_CASE("cancelling interrupts a call in flight within a fraction of a second", "[llm][http]") {
  Harness h;
  h.cfg.request_timeout_s = 120;
  h.server.push({200, "", {}, 30});
  auto c = h.client();
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    h.cancel = true;
  });
  auto t0 = std::chrono::steady_clock::now();
  auto r = c.ask(question());
  t.join();
  REQUIRE_FALSE(r.ok());
  CHECK(is_cancelled(r.error()));
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 2.0);
}

TEST_CASE("a response over the size cap is refused, not read whole", "[llm][http]") {
  FakeLlmServer server;
  server.push({200, std::string(10 << 20, 'x')});
  HttpRequest req;
  req.url = server.base_url() + "/v1/chat/completions";
  req.max_response_bytes = 1 << 20;
  auto r = http_post(req);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("larger than 1 MiB"));
}

TEST_CASE("the key comes from the environment or a file, with messages naming the source", "[llm]") {
  LlmConfig cfg;
  cfg.api_key_env = "AK_TEST_UNSET_KEY";
  unsetenv("AK_TEST_UNSET_KEY");
  CHECK_THAT(load_api_key(cfg).error().message, Catch::Contains("$AK_TEST_UNSET_KEY is not set"));
  setenv("AK_TEST_UNSET_KEY", "abc123", 1);
  CHECK(*load_api_key(cfg) == "abc123");
  unsetenv("AK_TEST_UNSET_KEY");
  cfg.api_key_env.clear();
  cfg.api_key_file = "/nonexistent/key";
  CHECK_THAT(load_api_key(cfg).error().message, Catch::Contains("cannot be read"));
  CHECK(redact("bad key abc123 here", "abc123") == "bad key <redacted> here");
}

TEST_CASE("retry delays: Retry-After first, else exponential with jitter and a cap", "[llm]") {
  CHECK(retry_delay(0, "7", 2, 120, 0.0) == 7);
  CHECK(retry_delay(0, "", 2, 120, 0.0) == 1);
  CHECK(retry_delay(3, "", 2, 120, 0.999) == Approx(16 * 0.9995));
  CHECK(retry_delay(20, "", 2, 120, 0.0) == 60);
}
