// libcurl wrapper for the hub client (see http.h).
#include "hub/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "base/error.h"

namespace dllm::hub {
namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;

struct Transfer {
  const HttpRequest* req = nullptr;
  HttpReply* reply = nullptr;
  long current_status = 0;  // status line of the hop being received
};

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response (first, after a redirect, or after "100 Continue").
    t->reply->hops.emplace_back();
    size_t sp = line.find(' ');
    t->current_status = sp == std::string::npos ? 0 : std::strtol(line.c_str() + sp + 1, nullptr, 10);
    t->reply->body_bytes = 0;
    t->reply->body.clear();
    return size * n;
  }
  size_t colon = line.find(':');
  if (colon != std::string::npos && !t->reply->hops.empty()) {
    std::string name = trim(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    t->reply->hops.back()[name] = trim(line.substr(colon + 1));
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  bool ok_status = t->current_status >= 200 && t->current_status < 300;
  if (t->req->sink && ok_status) {
    static const Headers kNone;
    const Headers& h = t->reply->hops.empty() ? kNone : t->reply->hops.back();
    if (!t->req->sink(t->current_status, h, data, len)) {
      t->reply->write_failed = true;
      return 0;  // makes libcurl stop with CURLE_WRITE_ERROR
    }
  } else if (!t->req->sink && ok_status && t->reply->body.size() + len > t->req->max_body_bytes) {
    t->reply->body_too_large = true;
    return 0;  // CURLE_WRITE_ERROR: a listing cannot be this large, stop before it fills the memory
  } else if (t->reply->body.size() < (t->req->sink || !ok_status ? kMaxErrorBody : SIZE_MAX)) {
    t->reply->body.append(data, len);
  }
  t->reply->body_bytes += len;
  return len;
}

}  // namespace

std::string HttpReply::header(const std::string& lower_name) const {
  for (const auto& h : hops) {
    auto it = h.find(lower_name);
    if (it != h.end()) return it->second;
  }
  return "";
}

std::string HttpReply::last_header(const std::string& lower_name) const {
  if (hops.empty()) return "";
  auto it = hops.back().find(lower_name);
  return it == hops.back().end() ? "" : it->second;
}

std::string url_host(const std::string& url) {
  size_t start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t end = url.find_first_of("/?#", start);
  return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::string url_path_escape(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

HttpReply http_get(const HttpRequest& req) {
  static std::once_flag init_once;
  std::call_once(init_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  CURL* curl = curl_easy_init();
  if (!curl) throw Error("libcurl could not start (curl_easy_init failed)");

  HttpReply reply;
  Transfer t;
  t.req = &req;
  t.reply = &reply;
  char errbuf[CURL_ERROR_SIZE] = {0};

  curl_slist* headers = nullptr;
  if (!req.token.empty()) {
    // Not sent to other hosts after a redirect (libcurl >= 7.58 drops custom Authorization there),
    // which is what the hub's signed CDN URLs expect.
    headers = curl_slist_append(headers, ("Authorization: Bearer " + req.token).c_str());
  }
  std::string range;
  if (req.range_from > 0) range = std::to_string(req.range_from) + "-";

  curl_easy_setopt(curl, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "dllm.cpp/0.1");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, req.follow_redirects ? 1L : 0L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, static_cast<long>(req.connect_timeout_s));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(req.stall_timeout_s));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  if (req.head) curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  if (!range.empty()) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());

  CURLcode code = curl_easy_perform(curl);
  reply.curl_code = code;
  if (code != CURLE_OK) reply.curl_error = errbuf[0] ? errbuf : curl_easy_strerror(code);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  char* effective = nullptr;
  curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &effective);
  reply.host = url_host(effective ? effective : req.url);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return reply;
}

}  // namespace dllm::hub
