// Runs tests/hub/fake_hub.py (a stand-in Hugging Face hub on 127.0.0.1, any free port) for one test,
// and gives the test its request log and fault rules. Stops the server when destroyed.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

extern char** environ;

namespace dllm::test {

class FakeHub {
 public:
  /// Starts the server with `repos` (the JSON of fake_hub.py --repos). Throws std::runtime_error
  /// when it does not come up within 20 s.
  explicit FakeHub(const nlohmann::json& repos) {
    std::ofstream(dir_ / "repos.json") << repos.dump();
    set_faults(nlohmann::json::array());
    std::string script = std::string(DLLM_SOURCE_DIR) + "/tests/hub/fake_hub.py";
    std::vector<std::string> args = {"python3",      script,
                                     "--port",       "0",
                                     "--repos",      (dir_ / "repos.json").string(),
                                     "--faults",     (dir_ / "faults.json").string(),
                                     "--log",        (dir_ / "requests.log").string(),
                                     "--ready-file", (dir_ / "ready").string()};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawnp(&pid_, "python3", nullptr, nullptr, argv.data(), environ) != 0) {
      throw std::runtime_error("cannot start python3 for the fake hub");
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!std::filesystem::exists(dir_ / "ready")) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("the fake hub exited at start (see stderr)");
      }
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the fake hub did not start");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::ifstream(dir_ / "ready") >> port_;
  }
  ~FakeHub() { stop(); }

  /// Kills the server (later requests get "connection refused").
  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  /// Replaces the fault rules (see fake_hub.py); the server reads them before each request.
  void set_faults(const nlohmann::json& rules) {
    std::string tmp = (dir_ / "faults.json.tmp").string();
    std::ofstream(tmp) << rules.dump();
    std::filesystem::rename(tmp, dir_ / "faults.json");
  }

  /// Every request so far: {"method", "path", "range", "authorization"}.
  std::vector<nlohmann::json> requests() const {
    std::vector<nlohmann::json> out;
    std::ifstream f(dir_ / "requests.log");
    std::string line;
    while (std::getline(f, line))
      if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
  }

  /// Requests whose path starts with `prefix` ("/cdn/", "/api/models/", "/org/tiny/resolve/").
  std::vector<nlohmann::json> requests_to(const std::string& prefix) const {
    std::vector<nlohmann::json> out;
    for (auto& r : requests())
      if (r["path"].get<std::string>().rfind(prefix, 0) == 0) out.push_back(r);
    return out;
  }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace dllm::test
