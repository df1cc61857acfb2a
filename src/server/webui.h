// The web page GET / serves: src/server/webui/index.html with webui.css and webui.js inlined, compiled
// in at build time (cmake/embed_webui.cmake writes the definition), so the page loads nothing from
// anywhere but this server. What it shows and how it talks to the server: docs/serving.md "Web page".
#pragma once

#include <string_view>

namespace dllm::server {

/// The page's HTML (UTF-8), one self-contained document.
std::string_view webui_page();

}  // namespace dllm::server
