#include "daemon/run_folder/in_flight_ledger.hpp"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/atomic_write.hpp"
#include "common/file_text.hpp"
#include "common/text_escape.hpp"

namespace ak {

Status InFlightLedger::load() {
  entries_.clear();
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec) && !ec) return ok();
  auto text = read_file_text(path_);
  if (!text) return text.error();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  const std::string aside = "; move it aside to start without it (the experiments it named are then neither re-run nor skipped)";
  if (!j.is_array()) return error(path_ + " is not the JSON list the daemon writes" + aside);
  for (size_t i = 0; i < j.size(); ++i) {
    nlohmann::json& e = j[i];
    if (!e.is_object()) return error(path_ + ": entry " + std::to_string(i) + " is not an object" + aside);
    for (const char* key : {"experiment", "tag", "device", "description", "structure_move", "tokens", "cost_usd", "started_s", "predicted_us"}) {
      auto it = e.find(key);
      if (it == e.end()) continue;
      if (it->is_null()) {   // what the daemon writes of a NaN: read as absent
        e.erase(it);
        continue;
      }
      const std::string k = key;
      const bool fits = k == "tag" || k == "description" ? it->is_string() : k == "structure_move" ? it->is_boolean() : it->is_number();
      if (!fits) return error(path_ + ": entry " + std::to_string(i) + "'s " + k + " is a " + it->type_name() + aside);
    }
    InFlight f;
    f.experiment = e.value("experiment", 0LL);
    f.tag = e.value("tag", "");
    f.device = e.value("device", 0);
    f.description = e.value("description", "");
    f.structure_move = e.value("structure_move", false);
    f.tokens = e.value("tokens", 0LL);
    f.cost_usd = e.value("cost_usd", 0.0);
    f.predicted_us = e.value("predicted_us", 0.0);
    f.started_s = e.value("started_s", 0.0);
    if (f.experiment > 0 && !f.tag.empty()) entries_.push_back(f);
  }
  return ok();
}

Status InFlightLedger::add(const InFlight& e) {
  entries_.push_back(e);
  return save();
}

Status InFlightLedger::update(const InFlight& e) {
  for (auto& f : entries_)
    if (f.experiment == e.experiment) f = e;
  return save();
}

Status InFlightLedger::remove(long long experiment) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [&](auto& f) { return f.experiment == experiment; }),
                 entries_.end());
  return save();
}

long long InFlightLedger::highest() const {
  long long n = 0;
  for (auto& f : entries_) n = std::max(n, f.experiment);
  return n;
}

Status InFlightLedger::save() const {
  nlohmann::json j = nlohmann::json::array();
  for (auto& f : entries_)
    j.push_back({{"experiment", f.experiment}, {"tag", f.tag}, {"device", f.device}, {"description", f.description},
                 {"structure_move", f.structure_move},                 {"tokens", f.tokens}, {"cost_usd", f.cost_usd}, {"started_s", f.started_s},
                 {"predicted_us", f.predicted_us}});
  return write_file_atomic(path_, json_dump(j, 1) + "\n");
}

}  // namespace ak
